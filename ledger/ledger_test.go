package ledger_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"gorm.io/gorm"
)

const search = ledger.AccountID("team:search")

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if clearhouse.ErrorCode(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

// newLedger returns a ledger with the operator's accounts and team:search, funded
// with budget from grants.
func newLedger(t *testing.T, db *store.DB, clock *storetest.Clock, budget ledger.Money) *ledger.Ledger {
	t.Helper()
	ctx := context.Background()
	l := ledger.New(db, clock.Now)
	for _, a := range []ledger.AccountID{ledger.Treasury, ledger.Grants, search} {
		if err := l.OpenAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if budget > 0 {
		grant(t, l, "fund", search, budget)
	}
	return l
}

func grant(t *testing.T, l *ledger.Ledger, key string, to ledger.AccountID, amount ledger.Money) ledger.Entry {
	t.Helper()
	e, err := l.Post(context.Background(), ledger.NewEntry{Key: key, Reason: ledger.ReasonGrant, Ref: "grant",
		Postings: []ledger.Posting{{Account: ledger.Grants, Amount: -amount}, {Account: to, Amount: amount}}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func balance(t *testing.T, l *ledger.Ledger, a ledger.AccountID) ledger.Balance {
	t.Helper()
	b, err := l.Balance(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestModelsMatchSchema(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		storetest.AssertModelsMatchSchema(t, db, &ledger.Hold{}, &ledger.HoldPart{})
	})
}

func TestPostRefusesMalformedEntries(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, l := context.Background(), newLedger(t, db, storetest.NewClock(time.Time{}), 0)
		for name, e := range map[string]ledger.NewEntry{
			"no key":        {Reason: ledger.ReasonGrant, Postings: []ledger.Posting{{ledger.Grants, -1}, {search, 1}}},
			"bad reason":    {Key: "k", Reason: "gift", Postings: []ledger.Posting{{ledger.Grants, -1}, {search, 1}}},
			"one posting":   {Key: "k", Reason: ledger.ReasonGrant, Postings: []ledger.Posting{{ledger.Grants, 0}}},
			"unbalanced":    {Key: "k", Reason: ledger.ReasonGrant, Postings: []ledger.Posting{{ledger.Grants, -2}, {search, 1}}},
			"zero amount":   {Key: "k", Reason: ledger.ReasonGrant, Postings: []ledger.Posting{{ledger.Grants, 0}, {search, 0}}},
			"same account":  {Key: "k", Reason: ledger.ReasonGrant, Postings: []ledger.Posting{{search, -1}, {search, 1}}},
			"bad account":   {Key: "k", Reason: ledger.ReasonGrant, Postings: []ledger.Posting{{"bank", -1}, {search, 1}}},
			"sum overflows": {Key: "k", Reason: ledger.ReasonGrant, Postings: []ledger.Posting{{ledger.Grants, ledger.MaxMoney}, {ledger.Treasury, ledger.MaxMoney}, {search, 2}}},
		} {
			if _, err := l.Post(ctx, e); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
				t.Errorf("%s: got %v, want EINVALID", name, err)
			}
		}
		_, err := l.Post(ctx, ledger.NewEntry{Key: "k", Reason: ledger.ReasonGrant, Postings: []ledger.Posting{{ledger.Grants, -1}, {"team:ghost", 1}}})
		wantCode(t, err, clearhouse.ENOTFOUND)
		if b := balance(t, l, ledger.Grants); b.Posted != 0 {
			t.Fatalf("a refused entry moved grants to %s", b.Posted)
		}
	})
}

func TestIdempotentAndConflictingReplays(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, l := context.Background(), newLedger(t, db, storetest.NewClock(time.Time{}), 0)
		first := grant(t, l, "g1", search, 100*ledger.Dollar)
		again := grant(t, l, "g1", search, 100*ledger.Dollar)
		if again.ID != first.ID {
			t.Fatalf("replay posted a new entry %d (first %d)", again.ID, first.ID)
		}
		_, err := l.Post(ctx, ledger.NewEntry{Key: "g1", Reason: ledger.ReasonGrant, Ref: "grant",
			Postings: []ledger.Posting{{ledger.Grants, -5}, {search, 5}}})
		wantCode(t, err, clearhouse.ECONFLICT)
		if b := balance(t, l, search); b.Posted != 100*ledger.Dollar {
			t.Fatalf("balance %s after a replay and a conflict, want 100.00", b.Posted)
		}

		h1, err := l.PlaceHold(ctx, "h1", search, 30*ledger.Dollar, "order:1")
		if err != nil {
			t.Fatal(err)
		}
		h1b, err := l.PlaceHold(ctx, "h1", search, 30*ledger.Dollar, "order:1")
		if err != nil || h1b.ID != h1.ID {
			t.Fatalf("hold replay = %+v, %v", h1b, err)
		}
		_, err = l.PlaceHold(ctx, "h1", search, 31*ledger.Dollar, "order:1")
		wantCode(t, err, clearhouse.ECONFLICT)
		if b := balance(t, l, search); b.Held != 30*ledger.Dollar {
			t.Fatalf("held %s, want 30.00", b.Held)
		}
		e1, err := l.CaptureHold(ctx, "c1", h1.ID, 20*ledger.Dollar, ledger.Treasury, ledger.ReasonSettlement, "auction:1")
		if err != nil {
			t.Fatal(err)
		}
		e2, err := l.CaptureHold(ctx, "c1", h1.ID, 20*ledger.Dollar, ledger.Treasury, ledger.ReasonSettlement, "auction:1")
		if err != nil || e2.ID != e1.ID {
			t.Fatalf("capture replay = %+v, %v", e2, err)
		}
		_, err = l.CaptureHold(ctx, "c2", h1.ID, 20*ledger.Dollar, ledger.Treasury, ledger.ReasonSettlement, "auction:1")
		wantCode(t, err, clearhouse.ECONFLICT)
		wantCode(t, l.ReleaseHold(ctx, "r1", h1.ID), clearhouse.ECONFLICT)
		b := balance(t, l, search)
		if b.Posted != 80*ledger.Dollar || b.Held != 0 || b.Available != 80*ledger.Dollar {
			t.Fatalf("after capture of 20 of a 30 hold: %+v", b)
		}
		if tb := balance(t, l, ledger.Treasury); tb.Posted != 20*ledger.Dollar {
			t.Fatalf("treasury %s, want 20.00", tb.Posted)
		}
	})
}

func TestHoldsKeepAvailableNonNegative(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, l := context.Background(), newLedger(t, db, storetest.NewClock(time.Time{}), 50*ledger.Dollar)
		h, err := l.PlaceHold(ctx, "a", search, 40*ledger.Dollar, "order:1")
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.PlaceHold(ctx, "b", search, 11*ledger.Dollar, "order:2")
		wantCode(t, err, clearhouse.EUNPROCESSABLE)
		_, err = l.Post(ctx, ledger.NewEntry{Key: "spend", Reason: ledger.ReasonAdjustment,
			Postings: []ledger.Posting{{search, -11 * ledger.Dollar}, {ledger.Treasury, 11 * ledger.Dollar}}})
		wantCode(t, err, clearhouse.EUNPROCESSABLE)
		_, err = l.PlaceHold(ctx, "c", ledger.Treasury, 1, "x")
		wantCode(t, err, clearhouse.EINVALID)
		_, err = l.PlaceHold(ctx, "d", search, 0, "x")
		wantCode(t, err, clearhouse.EINVALID)
		if err := l.ReleaseHold(ctx, "rel", h.ID); err != nil {
			t.Fatal(err)
		}
		if err := l.ReleaseHold(ctx, "rel", h.ID); err != nil {
			t.Fatalf("release replay: %v", err)
		}
		if _, err := l.PlaceHold(ctx, "b2", search, 50*ledger.Dollar, "order:2"); err != nil {
			t.Fatalf("the released hold still counts: %v", err)
		}
		_, err = l.CaptureHold(ctx, "cap", 999, 1, ledger.Treasury, ledger.ReasonSettlement, "x")
		wantCode(t, err, clearhouse.ENOTFOUND)
	})
}

func TestReversal(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, l := context.Background(), newLedger(t, db, storetest.NewClock(time.Time{}), 0)
		e := grant(t, l, "g", search, 70*ledger.Dollar)
		r, err := l.Reverse(ctx, "undo-g", e.ID, "granted to the wrong team")
		if err != nil || r.Reverses != e.ID || r.Reason != ledger.ReasonReversal {
			t.Fatalf("Reverse = %+v, %v", r, err)
		}
		if b := balance(t, l, search); b.Posted != 0 {
			t.Fatalf("balance after reversal %s", b.Posted)
		}
		if r2, err := l.Reverse(ctx, "undo-g", e.ID, "granted to the wrong team"); err != nil || r2.ID != r.ID {
			t.Fatalf("reversal replay = %+v, %v", r2, err)
		}
		_, err = l.Reverse(ctx, "undo-g-again", e.ID, "")
		wantCode(t, err, clearhouse.ECONFLICT)
		_, err = l.Reverse(ctx, "undo-undo", r.ID, "")
		wantCode(t, err, clearhouse.EINVALID)
		_, err = l.Reverse(ctx, "nothing", 12345, "")
		wantCode(t, err, clearhouse.ENOTFOUND)

		// A reversal that would overdraw a team is refused.
		e2 := grant(t, l, "g2", search, 10*ledger.Dollar)
		if _, err := l.PlaceHold(ctx, "h", search, 10*ledger.Dollar, "order:9"); err != nil {
			t.Fatal(err)
		}
		_, err = l.Reverse(ctx, "undo-g2", e2.ID, "")
		wantCode(t, err, clearhouse.EUNPROCESSABLE)
	})
}

func TestBalancesAtPastInstantsAndStatements(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, clock := context.Background(), storetest.NewClock(time.Time{})
		l := newLedger(t, db, clock, 0)
		t0 := clock.Now()
		grant(t, l, "g1", search, 100*ledger.Dollar)
		clock.Advance(time.Hour)
		t1 := clock.Now()
		grant(t, l, "g2", search, 50*ledger.Dollar)
		clock.Advance(time.Hour)
		h, _ := l.PlaceHold(ctx, "h", search, 30*ledger.Dollar, "order:1")
		if _, err := l.CaptureHold(ctx, "c", h.ID, 25*ledger.Dollar, ledger.Treasury, ledger.ReasonSettlement, "auction:1"); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Hour)
		for _, c := range []struct {
			at   time.Time
			want ledger.Money
		}{{t0.Add(-time.Second), 0}, {t0, 100 * ledger.Dollar}, {t1.Add(-time.Second), 100 * ledger.Dollar}, {t1, 150 * ledger.Dollar}, {clock.Now(), 125 * ledger.Dollar}} {
			if got, err := l.BalanceAt(ctx, search, c.at); err != nil || got != c.want {
				t.Errorf("BalanceAt(%s) = %s, %v; want %s", c.at.Sub(t0), got, err, c.want)
			}
		}
		s, err := l.Statement(ctx, search, t1, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if s.Opening != 100*ledger.Dollar || s.Closing != 125*ledger.Dollar || len(s.Lines) != 2 || s.Lines[0].Running != 150*ledger.Dollar {
			t.Fatalf("statement = %+v", s)
		}
		var buf bytes.Buffer
		if err := ledger.WriteStatementCSV(&buf, s); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&buf).ReadAll()
		if err != nil || len(recs) != 5 || recs[0][0] != "entry_id" || recs[2][5] != "50.000000" || recs[4][6] != "125.000000" {
			t.Fatalf("statement CSV = %q, %v", recs, err)
		}
		buf.Reset()
		if err := l.WriteJournalCSV(ctx, &buf, t0, clock.Now()); err != nil {
			t.Fatal(err)
		}
		recs, _ = csv.NewReader(&buf).ReadAll()
		if len(recs) != 7 { // header + 3 entries x 2 postings
			t.Fatalf("journal CSV has %d lines: %q", len(recs), recs)
		}
		_, err = l.Statement(ctx, search, clock.Now(), t0)
		wantCode(t, err, clearhouse.EINVALID)
		tb, err := l.TrialBalance(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var sum ledger.Money
		for _, a := range tb {
			sum += a.Posted
		}
		if sum != 0 || len(tb) != 3 {
			t.Fatalf("trial balance %+v sums to %s", tb, sum)
		}
	})
}

func TestWithTxJoinsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, l := context.Background(), newLedger(t, db, storetest.NewClock(time.Time{}), 0)
		boom := clearhouse.Errorf(clearhouse.EINTERNAL, "boom")
		err := db.Write.Transaction(func(tx *gorm.DB) error {
			if _, err := l.WithTx(tx).Post(ctx, ledger.NewEntry{Key: "in-tx", Reason: ledger.ReasonGrant,
				Postings: []ledger.Posting{{ledger.Grants, -ledger.Dollar}, {search, ledger.Dollar}}}); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatalf("transaction = %v", err)
		}
		if b := balance(t, l, search); b.Posted != 0 {
			t.Fatalf("a rolled-back transaction left %s posted", b.Posted)
		}
		// A failing ledger call inside a transaction leaves the rest of it usable.
		err = db.Write.Transaction(func(tx *gorm.DB) error {
			lt := l.WithTx(tx)
			if _, err := lt.PlaceHold(ctx, "too-much", search, ledger.Dollar, "order:1"); clearhouse.ErrorCode(err) != clearhouse.EUNPROCESSABLE {
				t.Errorf("hold without funds = %v", err)
			}
			_, err := lt.Post(ctx, ledger.NewEntry{Key: "after", Reason: ledger.ReasonGrant,
				Postings: []ledger.Posting{{ledger.Grants, -ledger.Dollar}, {search, ledger.Dollar}}})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if b := balance(t, l, search); b.Posted != ledger.Dollar || b.Held != 0 {
			t.Fatalf("after the savepoint: %+v", b)
		}
	})
}

func TestBalancesNeverOverflow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, l := context.Background(), newLedger(t, db, storetest.NewClock(time.Time{}), 0)
		grant(t, l, "big", search, ledger.MaxMoney-1)
		_, err := l.Post(ctx, ledger.NewEntry{Key: "more", Reason: ledger.ReasonGrant,
			Postings: []ledger.Posting{{ledger.Grants, -2}, {search, 2}}})
		wantCode(t, err, clearhouse.EINVALID)
		if b := balance(t, l, search); b.Posted != ledger.MaxMoney-1 {
			t.Fatalf("balance %d after a refused overflow", b.Posted)
		}
		_, err = l.Post(ctx, ledger.NewEntry{Key: "under", Reason: ledger.ReasonGrant,
			Postings: []ledger.Posting{{ledger.Grants, -3}, {ledger.Treasury, 3}}})
		wantCode(t, err, clearhouse.EINVALID)
	})
}
