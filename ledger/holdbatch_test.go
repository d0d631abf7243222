package ledger_test

import (
	"context"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store/storetest"
	"gorm.io/gorm"
)

// A batch of holds refuses each hold its account's balance, less the batch's
// earlier holds, does not cover, with PlaceNewHold's errors, and leaves the batch
// as it was; the rest are written with consecutive ids after the holds there are,
// and the accounts hold their sum. (HoldBatch is for SQLite's writer.)
func TestHoldBatchRefusesEachHoldTheBalanceDoesNotCover(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	clock := storetest.NewClock(storetest.Epoch)
	l := newLedger(t, db, clock, 100*ledger.Dollar)
	ctx := context.Background()
	first, err := l.PlaceHold(ctx, "before", search, 10*ledger.Dollar, "before")
	if err != nil {
		t.Fatal(err)
	}
	ads := ledger.AccountID("team:ads")
	var hs []ledger.Hold
	err = db.Write.Transaction(func(tx *gorm.DB) error {
		b, err := l.NewHoldBatch(tx, []ledger.AccountID{search, ads, search})
		if err != nil {
			return err
		}
		for _, c := range []struct {
			key    string
			acct   ledger.AccountID
			amount ledger.Money
			code   string
		}{
			{"a", search, 50 * ledger.Dollar, ""},
			{"b", search, 41 * ledger.Dollar, clearhouse.EUNPROCESSABLE}, // 40 left
			{"c", ads, ledger.Dollar, clearhouse.ENOTFOUND},
			{"", search, ledger.Dollar, clearhouse.EINVALID},
			{"d", search, 0, clearhouse.EINVALID},
			{"e", search, 40 * ledger.Dollar, ""},
			{"f", search, 1, clearhouse.EUNPROCESSABLE},
		} {
			if err := b.Add(c.key, c.acct, c.amount, "ref "+c.key); clearhouse.ErrorCode(err) != c.code || (c.code == "") != (err == nil) {
				t.Errorf("hold %q of %s on %s: %v, want %q", c.key, c.amount, c.acct, err, c.code)
			}
		}
		hs, err = b.Write()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 || hs[0].Key != "a" || hs[1].Key != "e" || hs[0].ID != first.ID+1 || hs[1].ID != first.ID+2 {
		t.Fatalf("holds written: %+v, want a and e after hold %d", hs, first.ID)
	}
	for _, h := range hs {
		got, err := l.Holds(ctx, search, true)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, g := range got {
			found = found || (g.ID == h.ID && g.Key == h.Key && g.Amount == h.Amount && g.Ref == h.Ref && g.Status == ledger.HoldActive)
		}
		if !found {
			t.Errorf("hold %+v not stored as written", h)
		}
	}
	if b := balance(t, l, search); b.Held != 100*ledger.Dollar || b.Available != 0 {
		t.Errorf("search after the batch: %+v, want all $100 held", b)
	}
	if err := l.ReleaseHold(ctx, "release a", hs[0].ID); err != nil {
		t.Fatal(err)
	}
	vs, err := l.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error("violation:", v)
	}
}
