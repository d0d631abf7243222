package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

func newCapacityCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "capacity",
		Short: "Effective capacity: each pool's capacity as the market sells it, and operators' overrides (docs/capacity.md)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCapacityShowCmd(), newCapacityOverrideCmd())
	return cmd
}

func newCapacityShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show",
		Short: "Each pool's effective capacity, where it comes from, what teams hold and by how much it is oversold",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, func(db *store.DB) error {
				cs, err := server.MarketFor(db).Capacities(cmd.Context())
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
				fmt.Fprintln(w, "POOL\tEFFECTIVE\tSOURCE\tCONFIGURED\tMEASURED\tHELD\tOVERSOLD\tOVERRIDE")
				for _, c := range cs {
					measured, override := "-", "-"
					if c.Measured != nil {
						measured = fmt.Sprintf("%d at %s", *c.Measured, c.MeasuredAt.Format(time.RFC3339))
					}
					if c.Override != nil {
						override = fmt.Sprintf("%d until %s by %s (%s)", *c.Override, c.OverrideExpires.Format(time.RFC3339), c.OverrideBy, c.OverrideReason)
					}
					fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%s\t%d\t%d\t%s\n", c.Pool, c.Effective, c.Source, c.Configured, measured, c.Held, c.Oversold(), override)
				}
				return w.Flush()
			})
		},
	}
}

func newCapacityOverrideCmd() *cobra.Command {
	var pool, reason, by string
	var units int64
	var expires time.Duration
	var clear bool
	cmd := &cobra.Command{
		Use:   "override --pool us-east/cpu --units 96 --reason '...' --expires 72h --by you@example.com | --clear",
		Short: "Override a pool's capacity with a reason until it expires (or --clear the override)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, func(db *store.DB) error {
				m := server.MarketFor(db)
				if clear {
					if err := m.ClearCapacityOverride(cmd.Context(), pool, by); err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s: capacity override cleared\n", pool)
					return nil
				}
				until := time.Now().Add(expires)
				if err := m.OverrideCapacity(cmd.Context(), pool, units, reason, until, by); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: capacity %d until %s\n", pool, units, until.UTC().Format(time.RFC3339))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&pool, "pool", "", "pool id, cluster/resource")
	f.Int64Var(&units, "units", -1, "the capacity, in the pool's units")
	f.StringVar(&reason, "reason", "", "why the measured capacity is overridden")
	f.DurationVar(&expires, "expires", 72*time.Hour, "how long the override holds")
	f.StringVar(&by, "by", "command line", "who overrides")
	f.BoolVar(&clear, "clear", false, "remove the pool's override")
	return cmd
}
