package main

import (
	"errors"
	"fmt"

	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

// errViolations makes verify exit 1 after it has printed what it found.
var errViolations = errors.New("")

func newVerifyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the database's invariants (ledger, market, reservations, audit trail) and name every violation",
		Long: `Check that the database is sound: every journal entry sums to zero; account
balances and holds equal their postings; no live order has a released hold and no final
order an active one; no open order in a settled auction; one binding run per settled
auction; settlement lines only for won and lost orders; quota within holdings and
holdings within 4 times the configured capacity (supply follows the measured capacity,
which may exceed it); each holding charge matches its entry; reservation charges
equal their holds; the trial balance is zero; the audit trail is whole (numbered
without gaps, each row's hash over its content and the previous row's hash, the head
naming the last row: a row edited or deleted is named). It changes nothing and may run at any time, also while the server runs.

Exits 0 when every check passes, 1 naming each violation otherwise (at most 20 per
check), 2 when the database cannot be read.`,
		Example: `  clearhouse verify --db clearhouse.db`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var found []ledger.Violation
			err := withDB(cmd, func(db *store.DB) error {
				var err error
				found, err = server.Verify(cmd.Context(), db)
				return err
			})
			if err != nil {
				return &exitError{2, err}
			}
			out := cmd.OutOrStdout()
			for _, v := range found {
				fmt.Fprintln(out, "violation:", v)
			}
			if len(found) > 0 {
				fmt.Fprintf(out, "%d violations\n", len(found))
				return &exitError{1, errViolations}
			}
			fmt.Fprintln(out, "ok: every invariant holds")
			return nil
		},
	}
	return cmd
}
