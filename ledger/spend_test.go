package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// A team's spend per month sorts its budget's postings by kind (grants are not
// spend; a reversal counts against what it reverses) and by the month they were
// posted in, on SQLite as on PostgreSQL.
func TestSpendByMonth(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := storetest.NewClock(time.Date(2026, 10, 30, 12, 0, 0, 0, time.UTC))
		l := newLedger(t, db, clock, 1000*ledger.Dollar)
		post := func(key string, reason ledger.Reason, ref string, team ledger.Money) ledger.Entry {
			t.Helper()
			e, err := l.Post(ctx, ledger.NewEntry{Key: key, Reason: reason, Ref: ref,
				Postings: []ledger.Posting{{Account: search, Amount: team}, {Account: ledger.Treasury, Amount: -team}}})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		paid := post("pay", ledger.ReasonSettlement, "auction:1", -10*ledger.Dollar)
		post("sold", ledger.ReasonSettlement, "auction:1", 3*ledger.Dollar)
		post("res", ledger.ReasonReservation, "reservation:4", -5*ledger.Dollar)
		post("old-be", ledger.ReasonReservation, "best-effort:2", -ledger.Dollar) // before migration 00014
		clock.Set(time.Date(2026, 11, 1, 0, 30, 0, 0, time.UTC))
		post("hold", ledger.ReasonHolding, "pool:us-east/cpu", -2*ledger.Dollar)
		post("be", ledger.ReasonBestEffort, "best-effort:3", -4*ledger.Dollar)
		if _, err := l.Reverse(ctx, "undo-pay", paid.ID, "refund"); err != nil {
			t.Fatal(err)
		}
		got, err := l.SpendByMonth(ctx, "search", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		d := ledger.Dollar
		want := []ledger.MonthSpend{
			{Team: "search", Month: "2026-10", Bought: 10 * d, Sold: 3 * d, Reservations: 5 * d, BestEffort: d},
			{Team: "search", Month: "2026-11", Bought: -10 * d, Holding: 2 * d, BestEffort: 4 * d},
		}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("spend %+v, want %+v", got, want)
		}
		// The charges themselves: a reversal is of the kind it reverses, with the
		// opposite sign, and names that entry as its source; the grant is not spend.
		cs, err := l.TeamCharges(ctx, "search", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
		if err != nil || len(cs) != 7 {
			t.Fatalf("charges %+v, %v", cs, err)
		}
		undo := cs[6]
		if undo.Kind != ledger.SpendBought || undo.Amount != -10*d || undo.Source != paid.ID || undo.EntryID == paid.ID || undo.Ref != "auction:1" {
			t.Fatalf("the reversal's charge %+v, want bought, -$10, source %d", undo, paid.ID)
		}
		if cs[1].Kind != ledger.SpendSold || cs[1].Amount != 3*d || cs[3].Kind != ledger.SpendBestEffort {
			t.Fatalf("the sale and the old best-effort charge: %+v, %+v", cs[1], cs[3])
		}
		if got[0].Net() != 13*d || got[1].Net() != -4*d {
			t.Fatalf("net %s and %s", got[0].Net(), got[1].Net())
		}
		if all, err := l.SpendByMonth(ctx, "", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), ledger.Latest.AddDate(0, 0, 1)); err != nil || len(all) != 1 || all[0] != want[1] {
			t.Fatalf("every team's spend from November: %+v, %v", all, err)
		}
		_, err = l.SpendByMonth(ctx, "", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC))
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Fatalf("a backwards period: %v", err)
		}
	})
}
