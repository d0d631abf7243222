package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/spf13/cobra"
)

func newAuctionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auction",
		Short: "Solve, generate and check clock-auction instances; preview and close the market's auctions",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newAuctionSolveCmd(), newAuctionGenCmd(), newAuctionCheckCmd(), newAuctionPreviewCmd(), newAuctionCloseCmd(), newAuctionTickCmd())
	return cmd
}

// openIn opens a file for reading, or standard input for "-".
func openIn(cmd *cobra.Command, path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(cmd.InOrStdin()), nil
	}
	return os.Open(path)
}

func readInstance(cmd *cobra.Command, path string) (auction.Instance, error) {
	in, err := openIn(cmd, path)
	if err != nil {
		return auction.Instance{}, &exitError{2, err}
	}
	defer in.Close()
	inst, err := auction.DecodeInstance(in)
	if err != nil {
		return auction.Instance{}, &exitError{2, fmt.Errorf("%s: %w", path, err)}
	}
	return inst, nil
}

func newAuctionSolveCmd() *cobra.Command {
	var in, out string
	var trajectory, noFinal bool
	var finalSeconds float64
	cmd := &cobra.Command{
		Use:   "solve",
		Short: "Run the ascending clock and the final round on an instance and write the result",
		Long: `Read an auction instance (docs/formats/auction.md), run the ascending clock, then
the final round (the allocation of greatest welfare among all submitted bundles,
never worse than the clock's, within params.final_round.seconds, default 10), and
write the result. "-" means standard input or output. --final-seconds and
--no-final-round override the instance's params.final_round.

Exit status: 0 when the clock converged; 1 when it did not within max_rounds (the
result is still written, with the last round's prices and excess demand); 2 when
the instance is refused, in which case nothing is written.`,
		Example: `  clearhouse auction solve --in market.json --out result.json
  clearhouse auction gen --seed 1 | clearhouse auction solve --in - --out -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lessCollection()
			inst, err := readInstance(cmd, in)
			if err != nil {
				return err
			}
			if noFinal || finalSeconds != 0 {
				fp := auction.FinalParams{}
				if inst.Params.FinalRound != nil {
					fp = *inst.Params.FinalRound
				}
				fp.Off = fp.Off || noFinal
				if finalSeconds != 0 {
					fp.Seconds = finalSeconds
				}
				inst.Params.FinalRound = &fp
			}
			res, err := auction.Solve(inst, auction.Options{Trajectory: trajectory})
			if err != nil {
				return &exitError{2, err}
			}
			var buf bytes.Buffer
			if err := res.Encode(&buf); err != nil {
				return err
			}
			if err := writeOut(cmd, out, buf.Bytes()); err != nil {
				return err
			}
			if !res.Converged {
				var over []string
				for id, z := range res.ExcessDemand {
					if z > 0 {
						over = append(over, id)
					}
				}
				return &exitError{1, fmt.Errorf("the clock did not converge in %d rounds; still over-demanded: %v", res.Rounds, sorted(over))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&in, "in", "", "instance file, or - for standard input (required)")
	f.StringVar(&out, "out", "-", "result file, or - for standard output")
	f.BoolVar(&trajectory, "trajectory", false, "include every round's prices in the result")
	f.Float64Var(&finalSeconds, "final-seconds", 0, "the final round's time limit in seconds (0: the instance's, else 10)")
	f.BoolVar(&noFinal, "no-final-round", false, "keep the clock's allocation: no final round")
	_ = cmd.MarkFlagRequired("in")
	return cmd
}

// lessCollection lets the heap grow to five times what it holds after a collection
// (GOGC=400) rather than twice, unless GOGC is set. A solve is one pass whose heap
// only grows, the instance and then the clock's compiled form, until the result is
// written: collecting at every doubling from the runtime's 4 MB start took about an
// eighth of the whole process's CPU on the 10,000 x 1,000 market. The price is
// memory: 70 MB resident there instead of 48 (docs/benchmarks.md).
func lessCollection() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

func newAuctionGenCmd() *cobra.Command {
	var cfg auction.GenConfig
	var out string
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Write a seeded synthetic instance shaped like a real quota market",
		Long: `Write a synthetic auction instance: clusters x resource types, buyers of co-located
bundles with XOR alternatives across clusters, sellers in congested clusters, traders
moving between clusters, and some orders with a limit per bundle. The same flags
always write the same instance.`,
		Example: `  clearhouse auction gen --seed 7 --clusters 100 --resources 10 --bidders 10000 > big.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case cfg.Clusters < 1 || cfg.Clusters > 100_000:
				return &exitError{2, fmt.Errorf("--clusters: must be between 1 and 100000")}
			case cfg.Resources < 1 || cfg.Resources > 100:
				return &exitError{2, fmt.Errorf("--resources: must be between 1 and 100")}
			case cfg.Bidders < 0 || cfg.Bidders > 10_000_000:
				return &exitError{2, fmt.Errorf("--bidders: must be between 0 and 10000000")}
			case !(cfg.Scarcity > 0 && cfg.Scarcity <= 100):
				return &exitError{2, fmt.Errorf("--scarcity: must be more than 0 and at most 100")}
			}
			data, err := json.Marshal(auction.Generate(cfg))
			if err != nil {
				return err
			}
			return writeOut(cmd, out, append(data, '\n'))
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	f.IntVar(&cfg.Clusters, "clusters", 10, "clusters")
	f.IntVar(&cfg.Resources, "resources", 10, "resource types per cluster (pools = clusters x resources)")
	f.IntVar(&cfg.Bidders, "bidders", 100, "orders")
	f.Float64Var(&cfg.Scarcity, "scarcity", 1.5, "how much more is wanted than the operator offers")
	f.StringVar(&out, "out", "-", "output file, or - for standard output")
	return cmd
}

func newAuctionCheckCmd() *cobra.Command {
	var in, result string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check that a result satisfies the format's conditions for an instance",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			inst, err := readInstance(cmd, in)
			if err != nil {
				return err
			}
			raw, err := os.ReadFile(result)
			if err != nil {
				return &exitError{2, err}
			}
			var res auction.Result
			if err := json.Unmarshal(raw, &res); err != nil {
				return &exitError{2, fmt.Errorf("%s: %w", result, err)}
			}
			if err := auction.Check(inst, res); err != nil {
				return &exitError{1, err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: %d winners, welfare %.2f\n", len(res.Winners), auction.Welfare(inst, res))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&in, "in", "", "instance file (required)")
	f.StringVar(&result, "result", "", "result file (required)")
	_ = cmd.MarkFlagRequired("in")
	_ = cmd.MarkFlagRequired("result")
	return cmd
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
