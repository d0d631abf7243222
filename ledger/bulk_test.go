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
)

func TestBulkCapturesAndReleasesMatchOneByOne(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		l := newLedger(t, db, storetest.NewClock(time.Time{}), 1000*ledger.Dollar)
		var cs []ledger.Capture
		var rs []ledger.Release
		for i := range 30 {
			h, err := l.PlaceHold(ctx, fmt.Sprintf("h%d", i), search, 10*ledger.Dollar, fmt.Sprintf("order:%d", i))
			if err != nil {
				t.Fatal(err)
			}
			if i%3 == 2 {
				rs = append(rs, ledger.Release{Key: fmt.Sprintf("r%d", i), HoldID: h.ID})
				continue
			}
			cs = append(cs, ledger.Capture{Key: fmt.Sprintf("c%d", i), HoldID: h.ID, Amount: ledger.Money(i%2) * 7 * ledger.Dollar,
				To: ledger.Treasury, Reason: ledger.ReasonSettlement, Ref: "auction:1"})
		}
		es, err := l.CaptureHolds(ctx, cs)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.ReleaseHolds(ctx, rs); err != nil {
			t.Fatal(err)
		}
		var captured ledger.Money
		for i, c := range cs {
			captured += c.Amount
			if (c.Amount > 0) != (es[i].ID != 0) {
				t.Fatalf("capture %d: entry %+v", i, es[i])
			}
		}
		b := balance(t, l, search)
		if b.Held != 0 || b.Posted != 1000*ledger.Dollar-captured {
			t.Fatalf("after bulk: %+v, captured %s", b, captured)
		}
		// Replays return the same entries and move nothing; a different capture of a
		// resolved hold is a conflict.
		again, err := l.CaptureHolds(ctx, cs)
		if err != nil || again[1].ID != es[1].ID {
			t.Fatalf("replay: %v (%d vs %d)", err, again[1].ID, es[1].ID)
		}
		if err := l.ReleaseHolds(ctx, rs); err != nil {
			t.Fatalf("release replay: %v", err)
		}
		if b2 := balance(t, l, search); b2 != b {
			t.Fatalf("a replay moved money: %+v -> %+v", b, b2)
		}
		bad := []ledger.Capture{cs[0]}
		bad[0].Key = "other"
		_, err = l.CaptureHolds(ctx, bad)
		wantCode(t, err, clearhouse.ECONFLICT)
		// Statement lines are one per captured entry, as one-by-one captures give.
		st, err := l.Statement(ctx, search, time.Time{}, time.Now().Add(time.Hour))
		if err != nil || len(st.Lines) != 1+len(cs)/2 {
			t.Fatalf("statement has %d lines, %v", len(st.Lines), err)
		}
		tb, _ := l.TrialBalance(ctx)
		var sum ledger.Money
		for _, a := range tb {
			sum += a.Posted
		}
		if sum != 0 {
			t.Fatalf("trial balance %s", sum)
		}
	})
}
