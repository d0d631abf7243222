package exchange_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// Concurrent placements share commits (on SQLite, one transaction with a savepoint
// each), so orders that fail late, after their rows were written (over the budget,
// over the quota, past the team's budget once others took it), fail in the same
// transaction as orders that succeed. Each failure must leave no trace and cost
// the others nothing; afterwards every order has its rows and its holds, the
// budgets and quota hold exactly what the successes set aside, and every
// invariant of the ledger and the market holds.
func TestConcurrentPlacementsFailAloneInASharedCommit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := newAuctionMarket(t, db)
		type kind struct {
			who   string
			spec  exchange.OrderSpec
			n     int // placed concurrently
			wantN int // of which succeed
		}
		kinds := []kind{
			{"member@search", exchange.OrderSpec{Team: "search", Limit: money(1), Bundles: []exchange.Bundle{{"us-east/cpu": 1}, {"eu-west/cpu": 1}}}, 24, 24},
			{"member@search", exchange.OrderSpec{Team: "search", Limit: money(5000), Bundles: []exchange.Bundle{{"us-east/cpu": 2}}}, 12, 0}, // over the $1,000 budget
			{"member@ads", exchange.OrderSpec{Team: "ads", Limit: money(-0.5), Bundles: []exchange.Bundle{{"us-east/cpu": -10}}}, 8, 6},      // 60 units of quota
			{"member@ml", exchange.OrderSpec{Team: "ml", Limit: money(400), Bundles: []exchange.Bundle{{"us-east/ram": 4}}}, 8, 5},           // $2,000 of budget
		}
		placed := make([]atomic.Int64, len(kinds))
		var wg sync.WaitGroup
		for k, kd := range kinds {
			for range kd.n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := mk.Order(kd.who, kd.spec)
					switch clearhouse.ErrorCode(err) {
					case "":
						placed[k].Add(1)
					case clearhouse.EUNPROCESSABLE:
					default:
						t.Errorf("%s: %v", kd.who, err)
					}
				}()
			}
		}
		wg.Wait()
		var orders, bundles, items int64
		for k, kd := range kinds {
			if got := placed[k].Load(); got != int64(kd.wantN) {
				t.Errorf("%s's orders %d: %d placed, want %d", kd.who, k, got, kd.wantN)
			}
			orders += int64(kd.wantN)
			bundles += int64(kd.wantN * len(kd.spec.Bundles))
			for _, b := range kd.spec.Bundles {
				items += int64(kd.wantN * len(b))
			}
		}
		count := func(q string) int64 {
			t.Helper()
			var n int64
			if err := db.Read.Raw(q).Row().Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		for q, want := range map[string]int64{
			"SELECT COUNT(*) FROM orders":        orders,
			"SELECT COUNT(*) FROM order_bundles": bundles,
			"SELECT COUNT(*) FROM order_items":   items,
			"SELECT COUNT(*) FROM ledger_holds":  24 + 5, // the paying orders'
			"SELECT COUNT(*) FROM orders o JOIN ledger_holds h ON h.id = o.hold_id AND h.ref = 'order:' || o.id AND h.status = 'active'": 24 + 5,
			"SELECT COALESCE(SUM(quantity), 0) FROM quota_holds WHERE team_id = 'ads'":                                                   60,
		} {
			if got := count(q); got != want {
				t.Errorf("%s: %d, want %d", q, got, want)
			}
		}
		if b := mk.Balance("search"); b.Held != 24*ledger.Dollar {
			t.Errorf("search holds %s for 24 orders of $1", b.Held)
		}
		if b := mk.Balance("ml"); b.Held != 2000*ledger.Dollar {
			t.Errorf("ml holds %s for 5 orders of $400", b.Held)
		}
		mk.Verify()
	})
}
