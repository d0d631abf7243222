package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
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
	var id, name, budget, threshold string
	cmd := &cobra.Command{
		Use:   "add",
		Short: "Add a team, with an initial budget granted from the grants account",
		Example: `  clearhouse team add --id search --name "Search infrastructure" --budget 250,000
  clearhouse team add --id ads --budget 100000 --approval-threshold 5000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			nt := exchange.NewTeam{ID: id, Name: name}
			var err error
			if budget != "" {
				if nt.Budget, err = ledger.ParseMoney(budget); err != nil {
					return &exitError{2, fmt.Errorf("--budget: %w", err)}
				}
			}
			if threshold != "" {
				t, err := ledger.ParseMoney(threshold)
				if err != nil {
					return &exitError{2, fmt.Errorf("--approval-threshold: %w", err)}
				}
				nt.ApprovalThreshold = int64(t)
			}
			return withDB(cmd, func(db *store.DB) error {
				m := exchange.NewMarket(db, ledger.New(db, time.Now), time.Now)
				t, err := m.AddTeam(cmd.Context(), nt)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "added team %s (%s) with a budget of $%s\n", t.ID, t.Name, nt.Budget)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&id, "id", "", "the team's id: lower-case letters, digits and dashes (required)")
	f.StringVar(&name, "name", "", "the team's display name (defaults to the id)")
	f.StringVar(&budget, "budget", "", "initial budget in dollars, e.g. 250,000")
	f.StringVar(&threshold, "approval-threshold", "", "orders that could pay more than this many dollars wait for an owner (default: none)")
	_ = cmd.MarkFlagRequired("id")
	return cmd
}

func newTeamListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the teams",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, func(db *store.DB) error {
				teams, err := exchange.NewMarket(db, ledger.New(db, time.Now), time.Now).Teams(cmd.Context())
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
	return cmd
}
