package labcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/sharing/abacus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// NewAbacus returns `abacus`: solve Abacus auctions and run the paper's experiments
// (sharing/abacus).
func NewAbacus(opts Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "abacus",
		Short: "Solve Abacus auctions (budgets and utilities buy shares of idle capacity) and run the paper's experiments",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newAbacusSolveCmd(opts), newAbacusSimulateCmd(), newAbacusEfficiencyCmd())
	return cmd
}

func newAbacusSolveCmd(opts Options) *cobra.Command {
	in := ""
	opt := abacus.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "solve",
		Short: "Run the Abacus auction on jobs' budgets and utilities and print each job's shares",
		Long: `Read an Abacus instance and print the auction's outcome. "-" reads standard input.

Input:  {"resources":["cpu","ram"],
         "jobs":[{"id":"etl","budget":120,"utility":"linear","weights":{"cpu":2,"ram":1}}]}
  A job uses the resources its weights name (each weight positive); without
  "weights" it uses every resource with weight 1; without "utility" it is linear
  (u = sum w s); "log" is u = sum w log s.
Output: {"iterations":N,"shares":{job:{resource:s}},"sub_budgets":{job:{resource:b}}}

Exit status: 0 when the auction converged; 1 when it did not within
--max-iterations rounds (possible for alpha above 0.5; the last round's outcome is
still printed); 2 when the input or a flag is refused, in which case nothing is
printed and the message names the job and the field.`,
		Example: `  clearhouse abacus solve --in jobs.json
  echo '{"resources":["cpu"],"jobs":[{"id":"a","budget":100},{"id":"b","budget":25}]}' | clearhouse abacus solve --in -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAbacusSolve(cmd, opts, in, opt) },
	}
	f := cmd.Flags()
	f.StringVar(&in, "in", "", "instance file, or - for standard input (required)")
	f.Float64Var(&opt.Alpha, "alpha", opt.Alpha, "exponent of the share function, in [0, 1]")
	f.Float64Var(&opt.Epsilon, "epsilon", opt.Epsilon, "convergence threshold on sub-budgets, in dollars")
	f.IntVar(&opt.MaxIterations, "max-iterations", opt.MaxIterations, "most rounds of the auction")
	abacusTurnFlags(f, &opt)
	_ = cmd.MarkFlagRequired("in")
	return cmd
}

// abacusTurnFlags adds the flags of Algorithm 1's turn and stopping rule.
func abacusTurnFlags(f *pflag.FlagSet, opt *abacus.Options) {
	f.BoolVar(&opt.OneStep, "one-step", opt.OneStep, "each job's turn is one application of Algorithm 2 instead of its best response (Algorithm 2 to its own fixed point)")
	f.Float64Var(&opt.ShareEpsilon, "share-epsilon", opt.ShareEpsilon, "stop when no share moved by more than this in a round (0: stop on --epsilon, in dollars)")
}

// abacusRefused is exit status 2 with the safe message of a domain error.
func abacusRefused(prefix string, err error) error {
	return &ExitError{2, fmt.Errorf("%s: %s", prefix, clearhouse.ErrorMessage(err))}
}

func runAbacusSolve(cmd *cobra.Command, opts Options, in string, opt abacus.Options) error {
	if err := opt.Validate(); err != nil {
		return &ExitError{2, fmt.Errorf("--%s", strings.Replace(clearhouse.ErrorMessage(err), "_", "-", 1))}
	}
	r, err := opts.open(cmd, in)
	if err != nil {
		return &ExitError{2, err}
	}
	defer r.Close()
	source := in
	if in == "-" {
		source = "standard input"
	}
	inst, err := abacus.DecodeInstance(r)
	if err != nil {
		return abacusRefused(source, err)
	}
	res, err := abacus.Solve(inst, opt)
	if err != nil { // the instance is valid, so an option is at fault (epsilon against the budgets)
		return &ExitError{2, fmt.Errorf("--%s", clearhouse.ErrorMessage(err))}
	}
	var buf bytes.Buffer
	if err := abacus.EncodeResult(&buf, inst, res); err != nil {
		return err
	}
	if _, err := cmd.OutOrStdout().Write(buf.Bytes()); err != nil {
		return err
	}
	if res.Outcome != abacus.OutcomeConverged {
		return &ExitError{1, fmt.Errorf("the auction did not converge in %d rounds (alpha %v; the last round moved a sub-budget by %.3g dollars)", res.Iterations, opt.Alpha, res.LastMove)}
	}
	return nil
}

// abacusSimOptions are the flags of `clearhouse abacus simulate`.
type abacusSimOptions struct {
	runs                              int
	seed                              uint64
	users, resources, alphas, utility string
	opt                               abacus.Options
	json                              bool
}

func newAbacusSimulateCmd() *cobra.Command {
	o := abacusSimOptions{opt: abacus.DefaultOptions()}
	o.opt.ShareEpsilon = abacus.PaperShareEpsilon
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Run the Abacus paper's experiments: rounds to converge against users, resources and alpha",
		Long: `Reproduce the experiments of section 7.1.1 of the Abacus paper (Zhang et al.,
IC2E 2013): random auctions with budgets uniform in [50, 200] dollars and weights
uniform in [0.5, 2] on every resource, varying one parameter at a time from the
paper's defaults (32 users, 4 resources, alpha 0.5), for linear and log utilities.
Each job's turn is its best response; a run stops after the first round that moved
no share by more than --share-epsilon (default 1e-4; 0 stops on --epsilon dollars).
Each row solves --runs auctions and reports the rounds of Algorithm 1 (mean, 95th
percentile, maximum), the runs that hit --max-iterations, and the mean time per
auction, validation included (the median too, which a busy machine's pauses move
less).

The same seed draws the same auctions and gives the same round counts on every
machine; the times are this machine's. Output: a table, or with --json one object:
{"seed","runs","epsilon","max_iterations","rows":[{"utility","vary","users",
"resources","alpha","mean_iterations","p95_iterations","max_iterations",
"not_converged","mean_time_us","median_time_us"}]}.`,
		Example: `  clearhouse abacus simulate
  clearhouse abacus simulate --runs 100 --users 32,1024 --resources 4 --alphas 0.5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAbacusSimulate(cmd, o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.runs, "runs", 1000, "auctions per row")
	f.Uint64Var(&o.seed, "seed", 1, "random seed")
	f.StringVar(&o.users, "users", "4,8,16,32,64,128,256", "comma-separated numbers of users to sweep")
	f.StringVar(&o.resources, "resources", "1,2,4,8,16", "comma-separated numbers of resources to sweep")
	f.StringVar(&o.alphas, "alphas", "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1", "comma-separated alphas to sweep")
	f.StringVar(&o.utility, "utilities", "linear,log", "comma-separated utilities: linear, log")
	f.Float64Var(&o.opt.Epsilon, "epsilon", o.opt.Epsilon, "convergence threshold on sub-budgets, in dollars")
	f.IntVar(&o.opt.MaxIterations, "max-iterations", o.opt.MaxIterations, "most rounds per auction")
	abacusTurnFlags(f, &o.opt)
	f.BoolVar(&o.json, "json", false, "print one JSON object and nothing else")
	return cmd
}

func runAbacusSimulate(cmd *cobra.Command, o abacusSimOptions) error {
	users, err := parseInts("--users", o.users)
	if err != nil {
		return &ExitError{2, err}
	}
	resources, err := parseInts("--resources", o.resources)
	if err != nil {
		return &ExitError{2, err}
	}
	alphas, err := parseFloats("--alphas", o.alphas)
	if err != nil {
		return &ExitError{2, err}
	}
	var utilities []abacus.Utility
	for _, name := range strings.Split(o.utility, ",") {
		u, err := abacus.ParseUtility(strings.TrimSpace(name))
		if err != nil {
			return abacusRefused("--utilities", err)
		}
		utilities = append(utilities, u)
	}
	if err := checkSimFlags(o, users, resources, alphas); err != nil {
		return &ExitError{2, err}
	}
	cfg := abacus.SimConfig{Seed: o.seed, Runs: o.runs, Options: o.opt,
		Rows: abacus.Sweep(utilities, users, resources, alphas)}
	rows, err := abacus.Simulate(cfg, time.Now)
	if err != nil {
		return abacusRefused("simulate", err)
	}
	var buf bytes.Buffer
	if o.json {
		err = writeAbacusSimJSON(&buf, cfg, rows)
	} else {
		writeAbacusSimTable(&buf, cfg, rows)
	}
	if err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(buf.Bytes())
	return err
}

func checkSimFlags(o abacusSimOptions, users, resources []int, alphas []float64) error {
	opt := o.opt
	opt.Alpha = abacus.PaperAlpha
	if err := opt.Validate(); err != nil {
		return fmt.Errorf("--%s", strings.Replace(clearhouse.ErrorMessage(err), "_", "-", 1))
	}
	if o.runs < 1 || o.runs > 1_000_000 {
		return fmt.Errorf("--runs: must be from 1 to 1000000, got %d", o.runs)
	}
	for _, n := range users {
		if n < 1 || n > 100_000 {
			return fmt.Errorf("--users: each must be from 1 to 100000, got %d", n)
		}
	}
	for _, m := range resources {
		if m < 1 || m > 1000 {
			return fmt.Errorf("--resources: each must be from 1 to 1000, got %d", m)
		}
	}
	for _, a := range alphas {
		if !(a >= 0 && a <= 1) {
			return fmt.Errorf("--alphas: each must be in [0, 1], got %v", a)
		}
	}
	return nil
}

func parseInts(flag, list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a whole number", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseFloats(flag, list string) ([]float64, error) {
	var out []float64
	for _, s := range strings.Split(list, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", flag, s)
		}
		out = append(out, f)
	}
	return out, nil
}

type abacusSimRow struct {
	Utility          string  `json:"utility"`
	Vary             string  `json:"vary"`
	Users            int     `json:"users"`
	Resources        int     `json:"resources"`
	Alpha            float64 `json:"alpha"`
	MeanIterations   float64 `json:"mean_iterations"`
	P95Iterations    int     `json:"p95_iterations"`
	MaxIterations    int     `json:"max_iterations"`
	NotConverged     int     `json:"not_converged"`
	MeanTimeMicros   float64 `json:"mean_time_us"`
	MedianTimeMicros float64 `json:"median_time_us"`
}

func writeAbacusSimJSON(w io.Writer, cfg abacus.SimConfig, rows []abacus.ExperimentResult) error {
	out := struct {
		Seed          uint64         `json:"seed"`
		Runs          int            `json:"runs"`
		Epsilon       float64        `json:"epsilon"`
		ShareEpsilon  float64        `json:"share_epsilon"`
		OneStep       bool           `json:"one_step"`
		MaxIterations int            `json:"max_iterations"`
		Rows          []abacusSimRow `json:"rows"`
	}{cfg.Seed, cfg.Runs, cfg.Options.Epsilon, cfg.Options.ShareEpsilon, cfg.Options.OneStep, cfg.Options.MaxIterations, make([]abacusSimRow, len(rows))}
	for k, r := range rows {
		out.Rows[k] = abacusSimRow{r.Utility.String(), r.Vary, r.Users, r.Resources, r.Alpha, r.MeanIterations,
			r.P95Iterations, r.MaxIterations, r.NotConverged, float64(r.MeanTime.Nanoseconds()) / 1e3,
			float64(r.MedianTime.Nanoseconds()) / 1e3}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeAbacusSimTable(w io.Writer, cfg abacus.SimConfig, rows []abacus.ExperimentResult) {
	turn, stop := "best response", fmt.Sprintf("no share moved by more than %g", cfg.Options.ShareEpsilon)
	if cfg.Options.OneStep {
		turn = "one step of Algorithm 2"
	}
	if cfg.Options.ShareEpsilon == 0 {
		stop = fmt.Sprintf("no sub-budget moved by more than %g dollars", cfg.Options.Epsilon)
	}
	fmt.Fprintf(w, "Abacus, section 7.1.1: %d auctions per row, seed %d; a turn is a job's %s; stop when %s; at most %d rounds\n",
		cfg.Runs, cfg.Seed, turn, stop, cfg.Options.MaxIterations)
	fmt.Fprintf(w, "defaults: %d users, %d resources, alpha %g; budgets U[50, 200], weights U[0.5, 2]\n\n",
		abacus.PaperUsers, abacus.PaperResources, abacus.PaperAlpha)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "utility\tvary\tusers\tresources\talpha\tmean rounds\tp95\tmax\tnot converged\tmedian time\tmean time\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%g\t%.2f\t%d\t%d\t%d\t%s\t%s\t\n", r.Utility, r.Vary, r.Users, r.Resources, r.Alpha,
			r.MeanIterations, r.P95Iterations, r.MaxIterations, r.NotConverged, micros(r.MedianTime), micros(r.MeanTime))
	}
	tw.Flush()
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func micros(d time.Duration) string {
	if d >= time.Millisecond {
		return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1e3)
	}
	return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1e3)
}

// abacusEffOptions are the flags of `clearhouse abacus efficiency`.
type abacusEffOptions struct {
	users, workloads      string
	mapSlots, reduceSlots int
	runs                  int
	seed                  uint64
	json                  bool
	opt                   abacus.Options
}

func newAbacusEfficiencyCmd() *cobra.Command {
	o := abacusEffOptions{opt: abacus.DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "efficiency",
		Short: "Run the Abacus paper's system-efficiency experiment: Abacus against FIFO",
		Long: `Reproduce section 7.1.3 of the Abacus paper on a simulated cluster of fixed
--map-slots and --reduce-slots, for each workload of --workloads:

  batch   each of --users users submits one MapReduce job at time 0 (maps uniform in
          [20, 100] one-step tasks, reduces in [5, 30], reduces after the job's maps);
          the auction is over the jobs (linear utilities weighted by the task counts,
          budgets uniform in [50, 200]); times in steps.
  table1  the paper's Table 1: user k is of type k mod 3 (map/reduce tasks of 30/20 s,
          15/40 s or 60/10 s; 2, 1.5 or 1.1 jobs a minute, Poisson, for 30 minutes;
          $200, u = T_m x + T_r y); 2 to 10 maps and 1 to 4 reduces a job; the auction
          is over the users with unfinished jobs; times in seconds, completion is a
          job's response time.

FIFO gives each free slot to the earliest job with a ready task, Abacus deals it by
the auction's shares. Each row averages --runs draws of the time to finish all jobs
(the makespan) and of the jobs' mean completion time. Output: a table, or with --json
{"rows":[{"workload","users","runs","fifo_makespan","abacus_makespan",
"fifo_completion","abacus_completion"}]}.`,
		Example: `  clearhouse abacus efficiency
  clearhouse abacus efficiency --users 2,4,8 --runs 50 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAbacusEfficiency(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.users, "users", "2,4,8,16,32", "comma-separated numbers of users")
	f.StringVar(&o.workloads, "workloads", "batch,table1", "comma-separated workloads: batch, table1")
	f.IntVar(&o.mapSlots, "map-slots", 20, "map slots of the cluster")
	f.IntVar(&o.reduceSlots, "reduce-slots", 10, "reduce slots of the cluster")
	f.IntVar(&o.runs, "runs", 100, "draws per row")
	f.Uint64Var(&o.seed, "seed", 1, "random seed")
	f.BoolVar(&o.json, "json", false, "print one JSON object and nothing else")
	abacusTurnFlags(f, &o.opt)
	return cmd
}

type abacusEffRow struct {
	Workload         string  `json:"workload"`
	Users            int     `json:"users"`
	Runs             int     `json:"runs"`
	FIFOMakespan     float64 `json:"fifo_makespan"`
	AbacusMakespan   float64 `json:"abacus_makespan"`
	FIFOCompletion   float64 `json:"fifo_completion"`
	AbacusCompletion float64 `json:"abacus_completion"`
}

func runAbacusEfficiency(cmd *cobra.Command, o abacusEffOptions) error {
	users, err := parseInts("--users", o.users)
	if err != nil {
		return &ExitError{2, err}
	}
	if o.runs < 1 || o.runs > 100_000 || o.mapSlots < 1 || o.reduceSlots < 1 {
		return &ExitError{2, errors.New("--runs must be from 1 to 100,000 and --map-slots and --reduce-slots at least 1")}
	}
	var workloads []abacus.Workload
	for _, name := range strings.Split(o.workloads, ",") {
		wl, err := abacus.ParseWorkload(strings.TrimSpace(name))
		if err != nil {
			return abacusRefused("--workloads", err)
		}
		workloads = append(workloads, wl)
	}
	for _, u := range users {
		if u < 1 || u > 10_000 {
			return &ExitError{2, fmt.Errorf("--users: %d is not from 1 to 10,000", u)}
		}
	}
	var rows []abacusEffRow
	for _, wl := range workloads {
		for _, u := range users {
			r, err := abacus.Efficiency(abacus.EfficiencyConfig{Workload: wl, Users: u, MapSlots: o.mapSlots, ReduceSlots: o.reduceSlots,
				Runs: o.runs, Seed: o.seed, Options: o.opt})
			if err != nil {
				return abacusRefused("efficiency", err)
			}
			rows = append(rows, abacusEffRow{Workload: wl.String(), Users: u, Runs: r.Runs, FIFOMakespan: round3(r.FIFOMakespan),
				AbacusMakespan: round3(r.AbacusMakespan), FIFOCompletion: round3(r.FIFOCompletion), AbacusCompletion: round3(r.AbacusCompletion)})
		}
	}
	w := cmd.OutOrStdout()
	if o.json {
		return json.NewEncoder(w).Encode(map[string]any{"rows": rows})
	}
	fmt.Fprintf(w, "Abacus, section 7.1.3: %d map and %d reduce slots, %d draws per row, seed %d\n", o.mapSlots, o.reduceSlots, o.runs, o.seed)
	tw := newTable(w)
	fmt.Fprintln(tw, "workload\tusers\tmakespan FIFO\tmakespan Abacus\tAbacus/FIFO\tmean completion FIFO\tmean completion Abacus\tAbacus/FIFO\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.3f\t%.2f\t%.2f\t%.3f\t\n", r.Workload, r.Users, r.FIFOMakespan, r.AbacusMakespan, r.AbacusMakespan/r.FIFOMakespan,
			r.FIFOCompletion, r.AbacusCompletion, r.AbacusCompletion/r.FIFOCompletion)
	}
	return tw.Flush()
}
