package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"gorm.io/gorm"
)

const usd = ledger.Dollar

// wantBooks checks team:search's balance and that the books agree with themselves:
// the trial balance sums to zero, every account's balance is the sum of its
// postings and its held column the sum of its active holds' remaining amounts.
func wantBooks(t *testing.T, l *ledger.Ledger, db *store.DB, posted, held ledger.Money) {
	t.Helper()
	b := balance(t, l, search)
	if b.Posted != posted || b.Held != held || b.Available != posted-held {
		t.Fatalf("search: %+v, want posted %s held %s available %s", b, posted, held, posted-held)
	}
	tb, err := l.TrialBalance(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var sum ledger.Money
	for _, a := range tb {
		sum += a.Posted
	}
	if sum != 0 {
		t.Fatalf("trial balance %+v sums to %s", tb, sum)
	}
	var mismatched int64
	err = db.Read.Raw(`SELECT COUNT(*) FROM ledger_accounts a
		WHERE a.balance <> (SELECT COALESCE(SUM(amount), 0) FROM ledger_postings p WHERE p.account_id = a.id)
		OR a.held <> (SELECT COALESCE(SUM(amount - captured - released), 0) FROM ledger_holds h WHERE h.account_id = a.id AND h.status = 'active')`).
		Scan(&mismatched).Error
	if err != nil || mismatched != 0 {
		t.Fatalf("%d accounts disagree with their postings or holds (%v)", mismatched, err)
	}
}

func placeHold(t *testing.T, l *ledger.Ledger, key string, amount ledger.Money) ledger.Hold {
	t.Helper()
	h, err := l.PlaceHold(context.Background(), key, search, amount, "reservation:"+key)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// settle settles a part that charges the treasury for reservation:1.
func settle(l *ledger.Ledger, key string, id int64, capture, release ledger.Money) (ledger.Hold, error) {
	return l.SettleHoldPart(context.Background(), key, id, capture, release, ledger.Treasury, ledger.ReasonReservation, "reservation:1")
}

func wantHold(t *testing.T, h ledger.Hold, status ledger.HoldStatus, captured, released ledger.Money) {
	t.Helper()
	if h.Status != status || h.Captured != captured || h.Released != released || h.Remaining() != h.Amount-captured-released {
		t.Fatalf("hold %+v (remaining %s), want %s captured %s released %s", h, h.Remaining(), status, captured, released)
	}
	if (status == ledger.HoldActive) != (h.ResolvedAt == nil) {
		t.Fatalf("hold %s with resolved_at %v", h.Status, h.ResolvedAt)
	}
}

func TestSettleHoldPartCapturesSlotBySlot(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, clock := context.Background(), storetest.NewClock(time.Time{})
		l := newLedger(t, db, clock, 100*usd)
		h := placeHold(t, l, "r1", 60*usd)
		wantBooks(t, l, db, 100*usd, 60*usd)
		steps := []struct {
			key                string
			capture, release   ledger.Money
			status             ledger.HoldStatus
			captured, released ledger.Money
			posted, held       ledger.Money
		}{
			{"slot1", 10 * usd, 0, ledger.HoldActive, 10 * usd, 0, 90 * usd, 50 * usd},
			{"slot2", 15 * usd, 0, ledger.HoldActive, 25 * usd, 0, 75 * usd, 35 * usd},
			{"early", 0, 5 * usd, ledger.HoldActive, 25 * usd, 5 * usd, 75 * usd, 30 * usd},
			{"slot3", 1, 0, ledger.HoldActive, 25*usd + 1, 5 * usd, 75*usd - 1, 30*usd - 1},
			// The last part captures some of the rest and releases the remainder.
			{"last", 20*usd - 1, 10 * usd, ledger.HoldCaptured, 45 * usd, 15 * usd, 55 * usd, 0},
		}
		for _, s := range steps {
			clock.Advance(time.Hour)
			got, err := settle(l, s.key, h.ID, s.capture, s.release)
			if err != nil {
				t.Fatalf("%s: %v", s.key, err)
			}
			wantHold(t, got, s.status, s.captured, s.released)
			wantBooks(t, l, db, s.posted, s.held)
		}
		if tb := balance(t, l, ledger.Treasury); tb.Posted != 45*usd {
			t.Fatalf("treasury %s, want 45.00", tb.Posted)
		}
		_, err := settle(l, "after", h.ID, usd, 0)
		wantCode(t, err, clearhouse.ECONFLICT)

		parts, err := l.HoldParts(ctx, h.ID)
		if err != nil || len(parts) != len(steps) {
			t.Fatalf("HoldParts = %+v, %v", parts, err)
		}
		for i, p := range parts {
			s := steps[i]
			if p.Key != s.key || p.Hold != h.ID || p.Captured != s.capture || p.Released != s.release || (p.EntryID != nil) != (s.capture > 0) {
				t.Fatalf("part %d = %+v, want %+v", i, p, s)
			}
			if p.EntryID == nil {
				continue
			}
			e, err := l.Entry(ctx, *p.EntryID)
			if err != nil || e.Key != s.key || e.Reason != ledger.ReasonReservation || e.Ref != "reservation:1" || len(e.Postings) != 2 {
				t.Fatalf("entry of part %s = %+v, %v", s.key, e, err)
			}
		}
		_, err = l.HoldParts(ctx, 9999)
		wantCode(t, err, clearhouse.ENOTFOUND)
		// One statement line per capturing part, after the grant.
		st, err := l.Statement(ctx, search, time.Time{}, clock.Now().Add(time.Hour))
		if err != nil || len(st.Lines) != 5 || st.Closing != 55*usd {
			t.Fatalf("statement = %+v, %v", st, err)
		}
	})
}

func TestSettleHoldPartReleasesOnly(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		l := newLedger(t, db, storetest.NewClock(time.Time{}), 50*usd)
		h := placeHold(t, l, "r1", 30*usd)
		got, err := settle(l, "back1", h.ID, 0, 10*usd)
		if err != nil {
			t.Fatal(err)
		}
		wantHold(t, got, ledger.HoldActive, 0, 10*usd)
		wantBooks(t, l, db, 50*usd, 20*usd)
		// Released money is available again at once.
		if _, err := l.PlaceHold(context.Background(), "r2", search, 30*usd, "reservation:2"); err != nil {
			t.Fatalf("hold on released money: %v", err)
		}
		wantBooks(t, l, db, 50*usd, 50*usd)
		got, err = settle(l, "back2", h.ID, 0, 20*usd)
		if err != nil {
			t.Fatal(err)
		}
		wantHold(t, got, ledger.HoldReleased, 0, 30*usd)
		wantBooks(t, l, db, 50*usd, 30*usd)
		parts, _ := l.HoldParts(context.Background(), h.ID)
		if len(parts) != 2 || parts[0].EntryID != nil || parts[1].EntryID != nil {
			t.Fatalf("release parts = %+v", parts)
		}
	})
}

func TestSettleHoldPartReplays(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		l := newLedger(t, db, storetest.NewClock(time.Time{}), 100*usd)
		h := placeHold(t, l, "r1", 40*usd)
		other := placeHold(t, l, "r2", 10*usd)
		first, err := settle(l, "p1", h.ID, 10*usd, 5*usd)
		if err != nil {
			t.Fatal(err)
		}
		again, err := settle(l, "p1", h.ID, 10*usd, 5*usd)
		if err != nil || again != first {
			t.Fatalf("replay = %+v, %v; first %+v", again, err, first)
		}
		wantBooks(t, l, db, 90*usd, 35*usd)
		type part struct {
			id               int64
			capture, release ledger.Money
			to               ledger.AccountID
			reason           ledger.Reason
			ref              string
		}
		p1 := part{h.ID, 10 * usd, 5 * usd, ledger.Treasury, ledger.ReasonReservation, "reservation:1"}
		for name, change := range map[string]func(p *part){
			"capture":   func(p *part) { p.capture++ },
			"release":   func(p *part) { p.release-- },
			"hold":      func(p *part) { p.id = other.ID },
			"unknown":   func(p *part) { p.id = 9999 },
			"recipient": func(p *part) { p.to = ledger.Grants },
			"reason":    func(p *part) { p.reason = ledger.ReasonSettlement },
			"ref":       func(p *part) { p.ref = "reservation:2" },
		} {
			p := p1
			change(&p)
			_, err := l.SettleHoldPart(ctx, "p1", p.id, p.capture, p.release, p.to, p.reason, p.ref)
			if clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
				t.Errorf("replay with another %s = %v, want ECONFLICT", name, err)
			}
		}
		wantBooks(t, l, db, 90*usd, 35*usd)
		// A replay after later parts returns the hold as it is now, even resolved.
		if _, err := settle(l, "p2", h.ID, 25*usd, 0); err != nil {
			t.Fatal(err)
		}
		now, err := settle(l, "p1", h.ID, 10*usd, 5*usd)
		if err != nil {
			t.Fatal(err)
		}
		wantHold(t, now, ledger.HoldCaptured, 35*usd, 5*usd)
		wantBooks(t, l, db, 65*usd, 10*usd)
		if parts, _ := l.HoldParts(ctx, h.ID); len(parts) != 2 {
			t.Fatalf("replays added parts: %+v", parts)
		}
		// A part's key is also its entry's key: a key another write used is a conflict.
		grant(t, l, "taken", search, usd)
		_, err = settle(l, "taken", other.ID, usd, 0)
		wantCode(t, err, clearhouse.ECONFLICT)
		wantBooks(t, l, db, 66*usd, 10*usd)
	})
}

func TestSettleHoldPartRefusesBadParts(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		l := newLedger(t, db, storetest.NewClock(time.Time{}), 100*usd)
		h := placeHold(t, l, "r1", 40*usd)
		if _, err := settle(l, "p1", h.ID, 10*usd, 10*usd); err != nil {
			t.Fatal(err)
		}
		wantBooks(t, l, db, 90*usd, 20*usd)
		for name, c := range map[string]struct {
			key              string
			id               int64
			capture, release ledger.Money
			to               ledger.AccountID
			reason           ledger.Reason
			code             string
		}{
			"over-capture":      {"x", h.ID, 20*usd + 1, 0, ledger.Treasury, ledger.ReasonReservation, clearhouse.EINVALID},
			"over-release":      {"x", h.ID, 0, 20*usd + 1, ledger.Treasury, ledger.ReasonReservation, clearhouse.EINVALID},
			"over together":     {"x", h.ID, 10 * usd, 10*usd + 1, ledger.Treasury, ledger.ReasonReservation, clearhouse.EINVALID},
			"overflowing sum":   {"x", h.ID, ledger.MaxMoney, ledger.MaxMoney, ledger.Treasury, ledger.ReasonReservation, clearhouse.EINVALID},
			"negative capture":  {"x", h.ID, -1, 2, ledger.Treasury, ledger.ReasonReservation, clearhouse.EINVALID},
			"negative release":  {"x", h.ID, 2, -1, ledger.Treasury, ledger.ReasonReservation, clearhouse.EINVALID},
			"nothing":           {"x", h.ID, 0, 0, ledger.Treasury, ledger.ReasonReservation, clearhouse.EINVALID},
			"no key":            {" ", h.ID, 1, 0, ledger.Treasury, ledger.ReasonReservation, clearhouse.EINVALID},
			"bad recipient":     {"x", h.ID, 1, 0, "bank", ledger.ReasonReservation, clearhouse.EINVALID},
			"to its own budget": {"x", h.ID, 1, 0, search, ledger.ReasonReservation, clearhouse.EINVALID},
			"bad reason":        {"x", h.ID, 1, 0, ledger.Treasury, "gift", clearhouse.EINVALID},
			"unknown recipient": {"x", h.ID, 1, 0, "team:ghost", ledger.ReasonReservation, clearhouse.ENOTFOUND},
			"unknown hold":      {"x", 9999, 1, 0, ledger.Treasury, ledger.ReasonReservation, clearhouse.ENOTFOUND},
		} {
			_, err := l.SettleHoldPart(ctx, c.key, c.id, c.capture, c.release, c.to, c.reason, "reservation:1")
			if clearhouse.ErrorCode(err) != c.code {
				t.Errorf("%s: got %v, want %s", name, err, c.code)
			}
		}
		wantBooks(t, l, db, 90*usd, 20*usd)
		got, err := settle(l, "p1", h.ID, 10*usd, 10*usd)
		if err != nil {
			t.Fatal(err)
		}
		wantHold(t, got, ledger.HoldActive, 10*usd, 10*usd)
		if parts, _ := l.HoldParts(ctx, h.ID); len(parts) != 1 {
			t.Fatalf("refused parts were recorded: %+v", parts)
		}
		// The key of a refused part is still free.
		if _, err := settle(l, "x", h.ID, 20*usd, 0); err != nil {
			t.Fatal(err)
		}
		wantBooks(t, l, db, 70*usd, 0)
		for _, resolved := range []func() error{
			func() error { _, err := settle(l, "y", h.ID, usd, 0); return err },
			func() error { return l.ReleaseHold(ctx, "y", h.ID) },
			func() error {
				_, err := l.CaptureHold(ctx, "y", h.ID, 0, ledger.Treasury, ledger.ReasonReservation, "reservation:1")
				return err
			},
		} {
			wantCode(t, resolved(), clearhouse.ECONFLICT)
		}
		wantBooks(t, l, db, 70*usd, 0)
	})
}

func TestCaptureAndReleaseAfterPartsMoveOnlyTheRest(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		l := newLedger(t, db, storetest.NewClock(time.Time{}), 200*usd)
		h := placeHold(t, l, "r1", 50*usd)
		if _, err := settle(l, "p1", h.ID, 10*usd, 5*usd); err != nil {
			t.Fatal(err)
		}
		wantBooks(t, l, db, 190*usd, 35*usd)
		_, err := l.CaptureHold(ctx, "c1", h.ID, 35*usd+1, ledger.Treasury, ledger.ReasonReservation, "reservation:1")
		wantCode(t, err, clearhouse.EINVALID)
		e, err := l.CaptureHold(ctx, "c1", h.ID, 20*usd, ledger.Treasury, ledger.ReasonReservation, "reservation:1")
		if err != nil {
			t.Fatal(err)
		}
		wantBooks(t, l, db, 170*usd, 0)
		again, err := l.CaptureHold(ctx, "c1", h.ID, 20*usd, ledger.Treasury, ledger.ReasonReservation, "reservation:1")
		if err != nil || again.ID != e.ID {
			t.Fatalf("capture replay = %+v, %v", again, err)
		}
		_, err = l.CaptureHold(ctx, "c1", h.ID, 30*usd, ledger.Treasury, ledger.ReasonReservation, "reservation:1")
		wantCode(t, err, clearhouse.ECONFLICT)
		hs, _ := l.Holds(ctx, search, false)
		wantHold(t, hs[0], ledger.HoldCaptured, 30*usd, 5*usd)
		if hs[0].EntryID == nil || *hs[0].EntryID != e.ID {
			t.Fatalf("hold's entry %v, want %d", hs[0].EntryID, e.ID)
		}

		// Releasing after a captured part frees only the rest; the part stays charged.
		h2 := placeHold(t, l, "r2", 40*usd)
		if _, err := settle(l, "p2", h2.ID, 15*usd, 0); err != nil {
			t.Fatal(err)
		}
		wantBooks(t, l, db, 155*usd, 25*usd)
		if err := l.ReleaseHold(ctx, "rel2", h2.ID); err != nil {
			t.Fatal(err)
		}
		if err := l.ReleaseHold(ctx, "rel2", h2.ID); err != nil {
			t.Fatalf("release replay: %v", err)
		}
		wantBooks(t, l, db, 155*usd, 0)
		hs, _ = l.Holds(ctx, search, false)
		wantHold(t, hs[0], ledger.HoldReleased, 15*usd, 0)

		// A zero capture after a part resolves the hold and replays as such.
		h3 := placeHold(t, l, "r3", 10*usd)
		if _, err := settle(l, "p3", h3.ID, 4*usd, 0); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := l.CaptureHold(ctx, "c3", h3.ID, 0, ledger.Treasury, ledger.ReasonReservation, "reservation:3"); err != nil {
				t.Fatal(err)
			}
		}
		wantBooks(t, l, db, 151*usd, 0)

		// The bulk forms do the same.
		h4, h5 := placeHold(t, l, "r4", 20*usd), placeHold(t, l, "r5", 20*usd)
		for i, id := range []int64{h4.ID, h5.ID} {
			if _, err := settle(l, fmt.Sprintf("p4/%d", i), id, 5*usd, 5*usd); err != nil {
				t.Fatal(err)
			}
		}
		wantBooks(t, l, db, 141*usd, 20*usd)
		_, err = l.CaptureHolds(ctx, []ledger.Capture{{Key: "c4", HoldID: h4.ID, Amount: 10*usd + 1, To: ledger.Treasury, Reason: ledger.ReasonReservation}})
		wantCode(t, err, clearhouse.EINVALID)
		if _, err := l.CaptureHolds(ctx, []ledger.Capture{{Key: "c4", HoldID: h4.ID, Amount: 6 * usd, To: ledger.Treasury, Reason: ledger.ReasonReservation}}); err != nil {
			t.Fatal(err)
		}
		wantBooks(t, l, db, 135*usd, 10*usd)
		if err := l.ReleaseHolds(ctx, []ledger.Release{{Key: "rel5", HoldID: h5.ID}}); err != nil {
			t.Fatal(err)
		}
		wantBooks(t, l, db, 135*usd, 0)
		hs, _ = l.Holds(ctx, search, false)
		wantHold(t, hs[1], ledger.HoldCaptured, 11*usd, 5*usd)
		wantHold(t, hs[0], ledger.HoldReleased, 5*usd, 5*usd)
	})
}

func TestSettleHoldPartJoinsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		l := newLedger(t, db, storetest.NewClock(time.Time{}), 100*usd)
		h := placeHold(t, l, "r1", 40*usd)
		boom := clearhouse.Errorf(clearhouse.EINTERNAL, "boom")
		err := db.Write.Transaction(func(tx *gorm.DB) error {
			if _, err := l.WithTx(tx).SettleHoldPart(ctx, "p1", h.ID, 10*usd, 0, ledger.Treasury, ledger.ReasonReservation, "r"); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatalf("transaction = %v", err)
		}
		wantBooks(t, l, db, 100*usd, 40*usd)
		// A refused part inside a transaction leaves the rest of it usable.
		err = db.Write.Transaction(func(tx *gorm.DB) error {
			lt := l.WithTx(tx)
			if _, err := lt.SettleHoldPart(ctx, "big", h.ID, 41*usd, 0, ledger.Treasury, ledger.ReasonReservation, "r"); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
				t.Errorf("over-capture in a transaction = %v", err)
			}
			got, err := lt.SettleHoldPart(ctx, "p1", h.ID, 10*usd, 0, ledger.Treasury, ledger.ReasonReservation, "r")
			if err != nil {
				return err
			}
			wantHold(t, got, ledger.HoldActive, 10*usd, 0)
			_, err = lt.SettleHoldPart(ctx, "p2", h.ID, 0, 30*usd, ledger.Treasury, ledger.ReasonReservation, "r")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		wantBooks(t, l, db, 90*usd, 0)
	})
}
