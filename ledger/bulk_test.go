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

// A batch of more than a thousand holds (full chunks and a last partial one, which
// SQLite runs through different statements) resolves every hold exactly as one-by-one
// calls would: its status, captured total, entry and resolving key.
func TestBulkResolvesEveryHoldOfALargeBatch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		const n = 2_345
		l := newLedger(t, db, storetest.NewClock(time.Time{}), n*ledger.Dollar)
		var b ledger.Batch
		amount := map[int64]ledger.Money{}
		for i := range n {
			h, err := l.PlaceHold(ctx, fmt.Sprintf("h%d", i), search, ledger.Dollar, fmt.Sprintf("order:%d", i))
			if err != nil {
				t.Fatal(err)
			}
			if i%4 == 3 {
				b.Releases = append(b.Releases, ledger.Release{Key: fmt.Sprintf("r%d", i), HoldID: h.ID})
				continue
			}
			amount[h.ID] = ledger.Money(i%3) * ledger.Dollar / 3 // some captures of nothing
			b.Captures = append(b.Captures, ledger.Capture{Key: fmt.Sprintf("c%d", i), HoldID: h.ID, Amount: amount[h.ID],
				To: ledger.Treasury, Reason: ledger.ReasonSettlement, Ref: "auction:1"})
		}
		out, err := l.Apply(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		entry := map[int64]int64{}
		for i, c := range b.Captures {
			entry[c.HoldID] = out.Captured[i].ID
		}
		type row struct {
			ID         int64
			Status     string
			Captured   int64
			EntryID    *int64
			ResolveKey string
		}
		var rows []row
		if err := db.Read.Raw("SELECT id, status, captured, entry_id, resolve_key FROM ledger_holds ORDER BY id").Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) != n {
			t.Fatalf("%d holds, want %d", len(rows), n)
		}
		for i, r := range rows {
			want := row{ID: r.ID, Status: "released", ResolveKey: fmt.Sprintf("r%d", i)}
			if i%4 != 3 {
				want = row{ID: r.ID, Status: "captured", Captured: int64(amount[r.ID]), ResolveKey: fmt.Sprintf("c%d", i)}
				if amount[r.ID] > 0 {
					want.EntryID = &[]int64{entry[r.ID]}[0]
				}
			}
			if (r.EntryID == nil) != (want.EntryID == nil) || (r.EntryID != nil && *r.EntryID != *want.EntryID) ||
				r.Status != want.Status || r.Captured != want.Captured || r.ResolveKey != want.ResolveKey {
				t.Fatalf("hold %d: %+v, want %+v", r.ID, r, want)
			}
		}
		if bal := balance(t, l, search); bal.Held != 0 {
			t.Fatalf("after the batch: %+v", bal)
		}
		if vs, err := l.Verify(ctx); err != nil || len(vs) > 0 {
			t.Fatalf("verify: %v %v", vs, err)
		}
	})
}
