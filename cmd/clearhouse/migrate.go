package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

func newMigrateCmd() *cobra.Command {
	var status bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations embedded in this binary",
		Long: `Apply every pending schema migration to the database, each in its own
transaction. Safe to run again: an up-to-date database is left as it is.
With --status, list the migrations and whether each has been applied, and change nothing.`,
		Example: `  clearhouse migrate --db clearhouse.db
  clearhouse migrate --db postgres://clearhouse@db.internal/clearhouse --status`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, dsn := cmd.Context(), dbFlag(cmd)
			db, err := store.Open(ctx, dsn)
			if err != nil {
				return &exitError{2, err}
			}
			defer db.Close()
			if !status {
				if err := store.CheckNotNewer(ctx, db); err != nil { // a rolled-back binary writes nothing
					return &exitError{1, err}
				}
				before, err := store.Status(ctx, db)
				if err != nil {
					return err
				}
				if err := store.Migrate(ctx, db); err != nil {
					return err
				}
				n := 0
				for _, m := range before {
					if !m.Applied {
						n++
						fmt.Fprintf(cmd.OutOrStdout(), "applied %s\n", m.Name)
					}
				}
				if n == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "the schema is up to date")
				}
				return nil
			}
			st, err := store.Status(ctx, db)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "VERSION\tMIGRATION\tSTATE")
			for _, m := range st {
				state := "pending"
				if m.Applied {
					state = "applied"
				}
				fmt.Fprintf(w, "%d\t%s\t%s\n", m.Version, m.Name, state)
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&status, "status", false, "list migrations and their state; change nothing")
	return cmd
}
