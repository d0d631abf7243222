package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

func newTeamCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "team",
		Short: "Manage the teams that hold budgets and quota",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newTeamAddCmd(), newTeamListCmd())
	return cmd
}

func newTeamAddCmd() *cobra.Command {
	var dsn, id, name string
	cmd := &cobra.Command{
		Use:     "add",
		Short:   "Add a team",
		Example: `  clearhouse team add --id search --name "Search infrastructure"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, dsn, func(db *store.DB) error {
				m := exchange.NewMarket(db, time.Now)
				t, err := m.AddTeam(cmd.Context(), exchange.NewTeam{ID: id, Name: name})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "added team %s (%s)\n", t.ID, t.Name)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&dsn, "db", defaultDB, "SQLite file or PostgreSQL URL")
	f.StringVar(&id, "id", "", "the team's id: lower-case letters, digits and dashes (required)")
	f.StringVar(&name, "name", "", "the team's display name (defaults to the id)")
	_ = cmd.MarkFlagRequired("id")
	return cmd
}

func newTeamListCmd() *cobra.Command {
	var dsn string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the teams",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, dsn, func(db *store.DB) error {
				teams, err := exchange.NewMarket(db, time.Now).Teams(cmd.Context())
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tNAME")
				for _, t := range teams {
					fmt.Fprintf(w, "%s\t%s\n", t.ID, t.Name)
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&dsn, "db", defaultDB, "SQLite file or PostgreSQL URL")
	return cmd
}
