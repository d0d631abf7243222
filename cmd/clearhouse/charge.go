package main

import (
	"fmt"
	"io"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

func newChargeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "charge",
		Short: "Run the market's recurring charges by hand",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newChargeHoldingCmd())
	return cmd
}

func newChargeHoldingCmd() *cobra.Command {
	var month string
	cmd := &cobra.Command{
		Use:   "holding",
		Short: "Charge each team the holding charge of the quota it holds, for one month",
		Long: `Charge every team holding quota in a pool with a holding charge (set on the
pool's operator page; off by default) for one month: the units it holds now times
the pool's rate per unit and month, posted from the team's budget to the treasury
with a memo such as "Holding charge, us-east/cpu, November 2026: 1,600 cores x $0.10".
A rate set on a pool that had none applies from the day it was set (UTC), so that
month is charged pro rata for its remaining days; a changed rate applies from the
next month. The server does this itself every hour for the month under way; a
(pool, team, month) is charged once however often this runs, here or on several
servers. A team whose available budget is short is
named and not charged; run again once it is funded.`,
		Example: `  clearhouse charge holding --month 2026-11`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			at := time.Now().UTC()
			if month != "" {
				var err error
				if at, err = exchange.ParseMonth(month); err != nil {
					return &exitError{2, fmt.Errorf("--month: %w", err)}
				}
			}
			return withDB(cmd, func(db *store.DB) error {
				m := exchange.NewMarket(db, ledger.New(db, time.Now), time.Now)
				run, err := m.ChargeHolding(cmd.Context(), at)
				if err != nil {
					return err
				}
				printHoldingRun(cmd.OutOrStdout(), run)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&month, "month", "", "the month to charge, YYYY-MM (default: this month)")
	return cmd
}

// printHoldingRun says what a holding-charge run did, one line per charge.
func printHoldingRun(w io.Writer, run exchange.HoldingRun) {
	var total ledger.Money
	for _, c := range run.Charged {
		fmt.Fprintf(w, "charged team %s %s for %s (entry %d)\n", c.TeamID, moneyfmt.Cents(int64(c.Amount)), c.PoolID, c.EntryID)
		total += c.Amount
	}
	for _, s := range run.Shortfall {
		fmt.Fprintf(w, "not charged: team %s cannot pay %s for %s (too little available budget)\n", s.TeamID, moneyfmt.Cents(int64(s.Amount)), s.PoolID)
	}
	fmt.Fprintf(w, "holding charges for %s: %d made (%s), %d made before, %d short of budget\n",
		run.Month, len(run.Charged), moneyfmt.Cents(int64(total)), run.Already, len(run.Shortfall))
}
