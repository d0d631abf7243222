package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

// newShareFairnessCmd computes the fairness reports, as the scheduled job does.
func newShareFairnessCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fairness",
		Short: "Compute every cluster's fairness report of idle capacity (teams' waits against their Shapley values, last day and week), as the scheduled job does hourly",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, func(db *store.DB) error {
				be := besteffort.New(db, ledger.New(db, time.Now), time.Now, besteffort.DefaultConfig)
				reports, err := be.ComputeFairness(cmd.Context())
				if err != nil {
					return err
				}
				printFairness(cmd.OutOrStdout(), reports)
				return nil
			})
		},
	}
	return cmd
}

func printFairness(w io.Writer, reports []besteffort.FairnessReport) {
	for _, r := range reports {
		if len(r.Pools) == 0 {
			fmt.Fprintf(w, "%s, last %s: no best-effort jobs\n", r.Cluster, r.Span)
		}
		for _, p := range r.Pools {
			pols := slices.Sorted(maps.Keys(p.Unfairness))
			fmt.Fprintf(w, "%s, last %s (unit-hours of wait; coalition %.2f):\n", p.Pool, r.Span, p.CoalitionValue)
			fmt.Fprintf(w, "  %-14s %10s %10s", "team", "shapley", "measured")
			for _, pol := range pols {
				fmt.Fprintf(w, " %12s", pol)
			}
			fmt.Fprintln(w)
			for _, t := range p.Teams {
				fmt.Fprintf(w, "  %-14s %10.2f %10.2f", t.Team, t.Shapley, t.Measured)
				for _, pol := range pols {
					fmt.Fprintf(w, " %12.2f", t.Simulated[pol])
				}
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "  %-14s %10s %10.2f", "unfairness", "", p.MeasuredUnfairness)
			for _, pol := range pols {
				fmt.Fprintf(w, " %12.2f", p.Unfairness[pol])
			}
			fmt.Fprintln(w)
		}
	}
}
