package exchange_test

import (
	"context"
	"maps"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// Concurrent placements share commits (on SQLite, one transaction: bids checked
// together by placeBatch, offers each in a savepoint), so orders that fail late
// (over the budget, over the quota, past the team's budget once others took it)
// fail in the same transaction as orders that succeed. Each failure must leave no trace and cost
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

// attempt is one placement of a test batch: who places spec.
type attempt struct {
	who  string
	spec exchange.OrderSpec
}

// placeInOneBatch places every attempt concurrently while SQLite's group commit
// is paused, so that all of them that reach the writer share one batch (on
// PostgreSQL each is its own transaction, as always), and returns each one's
// order and error, in the attempts' order.
func placeInOneBatch(t *testing.T, db *store.DB, mk *market, as []attempt) ([]exchange.Order, []error) {
	t.Helper()
	resume := db.PauseGroup()
	orders, errs := make([]exchange.Order, len(as)), make([]error, len(as))
	var finished atomic.Int64
	var wg sync.WaitGroup
	for i, a := range as {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer finished.Add(1)
			orders[i], errs[i] = mk.Order(a.who, a.spec)
		}()
	}
	for int64(db.Pending())+finished.Load() < int64(len(as)) {
		runtime.Gosched() // until every placement waits for the writer or has failed before it
	}
	resume()
	wg.Wait()
	return orders, errs
}

// Bids checked together in one batch (placeBatch) fail alone, each with the
// error placing it alone gives, while the batch's other bids, and the orders
// placed one by one after it (an offer, an order awaiting approval), commit: a
// team over its live orders' limit, a budget used up by the batch's earlier bids,
// a bid on a pool the team's live offer sells, an offer over the team's quota.
func TestBatchedPlacementsFailAlone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := newAuctionMarket(t, db)
		ctx := context.Background()
		limits := exchange.DefaultLimits
		limits.OpenOrdersPerTeam = 4
		if err := mk.M.SetLimits(ctx, limits); err != nil {
			t.Fatal(err)
		}
		if _, err := mk.Order("member@ads", exchange.OrderSpec{Team: "ads", Limit: money(-0.5), Bundles: []exchange.Bundle{{"us-east/cpu": -60}}}); err != nil {
			t.Fatal(err)
		}
		var as []attempt
		add := func(n int, who string, spec exchange.OrderSpec) {
			for range n {
				as = append(as, attempt{who, spec})
			}
		}
		add(6, "member@search", exchange.OrderSpec{Team: "search", Limit: money(1), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}}) // 4 live at most
		add(3, "member@ads", exchange.OrderSpec{Team: "ads", Limit: money(200), Bundles: []exchange.Bundle{{"eu-west/cpu": 1}}})     // $500: 2 fit
		add(1, "member@ads", exchange.OrderSpec{Team: "ads", Limit: money(1), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}})       // ads sells it
		add(1, "member@ads", exchange.OrderSpec{Team: "ads", Limit: money(-1), Bundles: []exchange.Bundle{{"us-east/cpu": -1}}})     // quota all offered
		add(1, "member@ml", exchange.OrderSpec{Team: "ml", Limit: money(350), Bundles: []exchange.Bundle{{"eu-west/cpu": 2}}})       // over $300: awaits approval
		add(2, "owner@ml", exchange.OrderSpec{Team: "ml", Limit: money(600), Bundles: []exchange.Bundle{{"us-east/ram": 4}}})
		_, errs := placeInOneBatch(t, db, mk, as)

		placed := map[string]int{}
		failed := map[string]int{} // by the start of the message
		for i, err := range errs {
			if err == nil {
				placed[as[i].spec.Team]++
				continue
			}
			if clearhouse.ErrorCode(err) != clearhouse.EUNPROCESSABLE {
				t.Fatalf("%s: %v", as[i].who, err)
			}
			msg := err.Error()
			switch {
			case strings.Contains(msg, "live orders in auction"):
				failed["limit"]++
			case strings.Contains(msg, "insufficient funds: team ads"):
				failed["funds"]++
			case strings.Contains(msg, "already sells us-east/cpu"):
				failed["one side"]++
			case strings.Contains(msg, "can offer at most 0 units of us-east/cpu"):
				failed["quota"]++
			default:
				t.Errorf("%s: unexpected %v", as[i].who, err)
			}
		}
		if want := map[string]int{"search": 4, "ads": 2, "ml": 3}; !maps.Equal(placed, want) {
			t.Errorf("placed per team %v, want %v", placed, want)
		}
		if want := map[string]int{"limit": 2, "funds": 1, "one side": 1, "quota": 1}; !maps.Equal(failed, want) {
			t.Errorf("failures %v, want %v", failed, want)
		}
		for team, want := range map[string]ledger.Money{"search": 4 * ledger.Dollar, "ads": 400 * ledger.Dollar, "ml": 1550 * ledger.Dollar} {
			if b := mk.Balance(team); b.Held != want {
				t.Errorf("%s holds %s, want %s", team, b.Held, want)
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
			"SELECT COUNT(*) FROM orders":                                    1 + 4 + 2 + 3,
			"SELECT COUNT(*) FROM orders WHERE status = 'awaiting_approval'": 1,
			"SELECT COUNT(*) FROM order_items":                               1 + 4 + 2 + 3,
			"SELECT COUNT(*) FROM ledger_holds":                              4 + 2 + 3,
			"SELECT COUNT(*) FROM orders o JOIN ledger_holds h ON h.id = o.hold_id AND h.ref = 'order:' || o.id AND h.idem_key = 'order/' || o.id || '/hold' AND h.status = 'active'": 4 + 2 + 3,
			"SELECT COALESCE(SUM(quantity), 0) FROM quota_holds WHERE team_id = 'ads'":                                                                                                60,
		} {
			if got := count(q); got != want {
				t.Errorf("%s: %d, want %d", q, got, want)
			}
		}
		mk.Verify()
	})
}

// Placements with one idempotency key in one batch make one order: the same order
// placed again returns it, and another order with the key is ECONFLICT, whichever
// of them the batch takes first.
func TestBatchedPlacementsWithOneKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := newAuctionMarket(t, db)
		same := exchange.OrderSpec{Team: "search", Key: "k1", Limit: money(10), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}}
		as := []attempt{{"member@search", same}, {"member@search", same}, {"member@search", same},
			{"member@search", exchange.OrderSpec{Team: "search", Key: "k2", Limit: money(20), Bundles: []exchange.Bundle{{"us-east/cpu": 2}}}}}
		orders, errs := placeInOneBatch(t, db, mk, as)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("placement %d: %v", i, err)
			}
		}
		if orders[0].ID != orders[1].ID || orders[0].ID != orders[2].ID || orders[3].ID == orders[0].ID {
			t.Errorf("orders %d, %d, %d with one key and %d with another", orders[0].ID, orders[1].ID, orders[2].ID, orders[3].ID)
		}

		other := same
		other.Limit = money(30)
		as = []attempt{{"member@search", exchange.OrderSpec{Team: "search", Key: "k3", Limit: money(10), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}}},
			{"member@search", exchange.OrderSpec{Team: "search", Key: "k3", Limit: money(30), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}}}}
		_, errs = placeInOneBatch(t, db, mk, as)
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("two orders with key k3: %v and %v, want one placed and one ECONFLICT", errs[0], errs[1])
		}
		winner := money(10)
		for i, err := range errs {
			if err != nil {
				wantCode(t, err, clearhouse.ECONFLICT)
			} else {
				winner = as[i].spec.Limit
			}
		}
		var n int64
		if err := db.Read.Raw("SELECT COUNT(*) FROM orders").Row().Scan(&n); err != nil || n != 3 {
			t.Errorf("%d orders (%v), want 3", n, err)
		}
		if b := mk.Balance("search"); b.Held != 30*ledger.Dollar+*winner {
			t.Errorf("search holds %s, want $30 and %s", b.Held, *winner)
		}
		mk.Verify()
	})
}
