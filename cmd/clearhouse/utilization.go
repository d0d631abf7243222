package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

func newUtilizationCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "utilization",
		Short: "Measured utilization psi(r): run the job, show each pool's psi, set percentiles and overrides",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newUtilizationRefreshCmd(), newUtilizationShowCmd(), newUtilizationPolicyCmd(), newUtilizationOverrideCmd())
	return cmd
}

func utilizationFor(db *store.DB) *fleet.Utilization {
	return fleet.NewUtilization(db, time.Now, fleet.DefaultUtilizationConfig)
}

func newUtilizationRefreshCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "refresh",
		Short: "Run the utilization job once (what serve runs every slot): fill from the plan, aggregate hours, prune, measure every pool",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, func(db *store.DB) error {
				var rep fleet.RefreshReport
				ran, err := db.Exclusive(cmd.Context(), server.UtilizationLock, func() error {
					var err error
					rep, err = utilizationFor(db).Refresh(cmd.Context())
					return err
				})
				if err != nil {
					return err
				}
				if !ran {
					fmt.Fprintln(cmd.OutOrStdout(), "another server is running the job; nothing done")
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "filled %s to %s: %d samples from the plan, %d hourly aggregates; pruned %d samples, %d hours; measured %d pools",
					rep.From.Format(time.RFC3339), rep.To.Format(time.RFC3339), rep.PlanSamples, rep.Hours, rep.PrunedRaw, rep.PrunedHourly, rep.Measured)
				if len(rep.NoData) > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "; no usage data (held/capacity used): %s", strings.Join(rep.NoData, ", "))
				}
				fmt.Fprintln(cmd.OutOrStdout())
				return nil
			})
		},
	}
	return cmd
}

func newUtilizationShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Each pool's psi: measured, overridden or held/capacity, with its percentile and window",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, func(db *store.DB) error {
				ps, err := utilizationFor(db).Pools(cmd.Context())
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
				fmt.Fprintln(w, "POOL\tPSI\tSOURCE\tMEASURED\tSETTING\tSAMPLES\tOVERRIDE\tHELD/CAPACITY")
				for _, p := range ps {
					measured, override := "no data", "-"
					if p.Measured != nil {
						measured = pct(*p.Measured)
					}
					if p.Override != nil {
						override = fmt.Sprintf("%s until %s (%s)", pct(*p.Override), p.OverrideExpires.Format(time.RFC3339), p.OverrideReason)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\tp%d over %dd\t%d\t%s\t%s\n", p.Pool, pct(p.Psi), p.Source, measured, p.Percentile, p.WindowDays, p.Samples, override, pct(p.Fallback))
				}
				return w.Flush()
			})
		},
	}
	return cmd
}

func pct(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" }

func newUtilizationPolicyCmd() *cobra.Command {
	var pool string
	var percentile, window int
	cmd := &cobra.Command{
		Use:   "policy --pool us-east/cpu --percentile 95 --window 7",
		Short: "Set the percentile (50, 90, 95, 99) and trailing window (1-14 days) a pool's psi is measured with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, func(db *store.DB) error {
				u := utilizationFor(db)
				if err := u.SetPolicy(cmd.Context(), pool, percentile, window); err != nil {
					return err
				}
				p, err := u.Pool(cmd.Context(), pool)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: p%d over %d days; psi %s (%s)\n", pool, p.Percentile, p.WindowDays, pct(p.Psi), p.Source)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&pool, "pool", "", "pool id, cluster/resource")
	f.IntVar(&percentile, "percentile", fleet.DefaultPercentile, "50, 90, 95 or 99")
	f.IntVar(&window, "window", fleet.DefaultWindowDays, "trailing window in days, 1 to 14")
	return cmd
}

func newUtilizationOverrideCmd() *cobra.Command {
	var pool, reason, by string
	var psi float64
	var expires time.Duration
	var clear bool
	cmd := &cobra.Command{
		Use:   "override --pool us-east/cpu --psi 0.5 --reason '...' --expires 72h | --clear",
		Short: "Override a pool's psi with a reason until it expires (or --clear the override)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, func(db *store.DB) error {
				u := utilizationFor(db)
				if clear {
					if err := u.ClearOverride(cmd.Context(), pool); err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s: override cleared\n", pool)
					return nil
				}
				until := time.Now().Add(expires)
				if err := u.Override(cmd.Context(), pool, psi, reason, until, by); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: psi %s until %s\n", pool, pct(psi), until.UTC().Format(time.RFC3339))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&pool, "pool", "", "pool id, cluster/resource")
	f.Float64Var(&psi, "psi", -1, "utilization from 0 to 1")
	f.StringVar(&reason, "reason", "", "why the measured value is overridden")
	f.DurationVar(&expires, "expires", 72*time.Hour, "how long the override holds")
	f.StringVar(&by, "by", "command line", "who overrides")
	f.BoolVar(&clear, "clear", false, "remove the pool's override")
	return cmd
}
