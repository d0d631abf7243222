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
