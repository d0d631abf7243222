package ledger_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// TestConcurrentHoldsNeverOverspend races holds, captures, releases and transfers
// against one team's budget.
func TestConcurrentHoldsNeverOverspend(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		budget := 100 * ledger.Dollar
		l := newLedger(t, db, storetest.NewClock(time.Time{}), budget)
		const workers, ops = 8, 25
		var wg sync.WaitGroup
		var mu sync.Mutex
		var spent ledger.Money
		errs := make(chan error, workers*ops)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range ops {
					amt := ledger.Money(3+(w*ops+i)%7) * ledger.Dollar
					key := fmt.Sprintf("w%d/%d", w, i)
					if i%5 == 4 {
						_, err := l.Post(ctx, ledger.NewEntry{Key: key, Reason: ledger.ReasonAdjustment,
							Postings: []ledger.Posting{{search, -amt}, {ledger.Treasury, amt}}})
						if err == nil {
							mu.Lock()
							spent += amt
							mu.Unlock()
						} else if clearhouse.ErrorCode(err) != clearhouse.EUNPROCESSABLE {
							errs <- err
						}
						continue
					}
					h, err := l.PlaceHold(ctx, key, search, amt, "order")
					if clearhouse.ErrorCode(err) == clearhouse.EUNPROCESSABLE {
						continue
					} else if err != nil {
						errs <- err
						continue
					}
					if i%2 == 0 {
						if _, err := l.CaptureHold(ctx, key+"/c", h.ID, amt-ledger.Dollar, ledger.Treasury, ledger.ReasonSettlement, "auction"); err != nil {
							errs <- err
						} else {
							mu.Lock()
							spent += amt - ledger.Dollar
							mu.Unlock()
						}
					} else if err := l.ReleaseHold(ctx, key+"/r", h.ID); err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		b := balance(t, l, search)
		if b.Held != 0 || b.Posted != budget-spent || b.Available < 0 {
			t.Fatalf("after the race: %+v, spent %s of %s", b, spent, budget)
		}
		if spent > budget {
			t.Fatalf("spent %s of a %s budget", spent, budget)
		}
		tb, _ := l.TrialBalance(ctx)
		var sum ledger.Money
		for _, a := range tb {
			sum += a.Posted
		}
		if sum != 0 {
			t.Fatalf("trial balance sums to %s", sum)
		}
	})
}

// TestConcurrentPartsNeverOversettle races parts of one hold: together they never
// settle more than the hold, and every part either settles whole or not at all.
func TestConcurrentPartsNeverOversettle(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		l := newLedger(t, db, storetest.NewClock(time.Time{}), 100*usd)
		h := placeHold(t, l, "r1", 50*usd)
		const workers, parts = 6, 6
		var wg sync.WaitGroup
		var mu sync.Mutex
		var captured, released ledger.Money
		errs := make(chan error, workers*parts)
		for w := range workers {
			wg.Go(func() {
				for i := range parts {
					c, r := ledger.Money(w%3)*usd, ledger.Money(i%2)*usd
					if c+r == 0 {
						r = usd
					}
					key := fmt.Sprintf("w%d/%d", w, i)
					for attempt := 0; ; attempt++ {
						_, err := settle(l, key, h.ID, c, r)
						code := clearhouse.ErrorCode(err)
						if err == nil {
							mu.Lock()
							captured, released = captured+c, released+r
							mu.Unlock()
						} else if code == clearhouse.ECONFLICT && attempt < 20 {
							continue // another part moved the hold first, or resolved it
						} else if code != clearhouse.EINVALID && code != clearhouse.ECONFLICT {
							errs <- err
						}
						break
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		hs, err := l.Holds(ctx, search, false)
		if err != nil || len(hs) != 1 {
			t.Fatalf("Holds = %+v, %v", hs, err)
		}
		got := hs[0]
		if got.Captured != captured || got.Released != released || captured+released > 50*usd {
			t.Fatalf("hold %+v, parts that succeeded captured %s released %s", got, captured, released)
		}
		wantBooks(t, l, db, 100*usd-captured, got.Remaining())
	})
}
