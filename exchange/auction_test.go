package exchange_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// market is exchangetest's market; tests in this package add methods to it.
type market struct{ *exchangetest.Market }

func newAuctionMarket(t *testing.T, db *store.DB) *market {
	t.Helper()
	return &market{exchangetest.NewAuctionMarket(t, db)}
}

func money(d float64) *ledger.Money { return exchangetest.Money(d) }

func TestAnAuctionFromOrdersToSettlement(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		// search buys 100 cores with 400 GiB in us-east, or 100 cores in eu-west.
		buy, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(400),
			Bundles: []exchange.Bundle{{"us-east/cpu": 100, "us-east/ram": 400}, {"eu-west/cpu": 100}}})
		if err != nil {
			t.Fatal(err)
		}
		if b := mk.Balance("search"); b.Held != 400*ledger.Dollar || b.Available != 600*ledger.Dollar {
			t.Fatalf("search after bidding: %+v", b)
		}
		// ads offers its 60 us-east cores for at least $30.
		sell, err := mk.Order("member@ads", exchange.OrderSpec{Team: "ads", Limit: money(-30), Bundles: []exchange.Bundle{{"us-east/cpu": -60}}})
		if err != nil {
			t.Fatal(err)
		}
		// It cannot offer the same quota twice.
		_, err = mk.Order("member@ads", exchange.OrderSpec{Team: "ads", Limit: money(-30), Bundles: []exchange.Bundle{{"us-east/cpu": -1}}})
		wantCode(t, err, clearhouse.EUNPROCESSABLE)
		// ml's big bid waits for its owner; the owner approves it.
		big, err := mk.Order("member@ml", exchange.OrderSpec{Team: "ml", Limits: []ledger.Money{*money(900), *money(800)},
			Bundles: []exchange.Bundle{{"us-east/cpu": 90}, {"eu-west/cpu": 90}}})
		if err != nil || big.Status != exchange.OrderAwaitingApproval {
			t.Fatalf("big order = %+v, %v", big, err)
		}
		wantCode(t, mk.M.DecideOrder(ctx, mk.Users["member@ml"], big.ID, true), clearhouse.EFORBIDDEN)
		wantCode(t, mk.M.DecideOrder(ctx, mk.Users["owner@search"], big.ID, true), clearhouse.ENOTFOUND)
		if err := mk.M.DecideOrder(ctx, mk.Users["owner@ml"], big.ID, true); err != nil {
			t.Fatal(err)
		}
		// A bid beyond the budget is refused and changes nothing.
		_, err = mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(601), Bundles: []exchange.Bundle{{"eu-west/cpu": 1}}})
		wantCode(t, err, clearhouse.EUNPROCESSABLE)
		// A withdrawn bid releases its hold.
		gone, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(10), Bundles: []exchange.Bundle{{"eu-west/cpu": 1}}})
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, mk.M.WithdrawOrder(ctx, mk.Users["member@ads"], gone.ID), clearhouse.ENOTFOUND)
		if err := mk.M.WithdrawOrder(ctx, mk.Users["member@search"], gone.ID); err != nil {
			t.Fatal(err)
		}
		if b := mk.Balance("search"); b.Held != 400*ledger.Dollar {
			t.Fatalf("search after withdrawing: %+v", b)
		}
		_, err = mk.Order("member@search", exchange.OrderSpec{Team: "ads", Limit: money(1), Bundles: []exchange.Bundle{{"eu-west/cpu": 1}}})
		wantCode(t, err, clearhouse.EFORBIDDEN)
		_, err = mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(1), Bundles: []exchange.Bundle{{"mars/cpu": 1}}})
		wantCode(t, err, clearhouse.ENOTFOUND)

		// A preview publishes provisional outcomes and moves no money.
		mk.Clock.Advance(2 * time.Minute)
		rep, err := mk.M.Tick(ctx, exchange.Cadence{PreviewEvery: time.Minute})
		if err != nil || len(rep.Previewed) != 1 {
			t.Fatalf("Tick = %+v, %v", rep, err)
		}
		v, err := mk.M.Order(ctx, mk.Users["member@search"], buy.ID)
		if err != nil || v.Provisional == nil {
			t.Fatalf("order view %+v, %v", v, err)
		}
		if b := mk.Balance("search"); b.Posted != 1000*ledger.Dollar {
			t.Fatalf("a preview moved money: %+v", b)
		}

		// The window closes: the binding run settles.
		mk.Clock.Advance(time.Hour)
		rep, err = mk.M.Tick(ctx, exchange.Cadence{PreviewEvery: time.Minute})
		if err != nil || len(rep.Closed) != 1 {
			t.Fatalf("Tick at close = %+v, %v", rep, err)
		}
		a, _ := mk.M.Auction(ctx, mk.AuctionID)
		if a.Status != exchange.AuctionSettled {
			t.Fatalf("auction %+v", a)
		}
		orders, _ := mk.M.Orders(ctx, exchange.OrderFilter{AuctionID: mk.AuctionID})
		status := map[int64]exchange.OrderStatus{}
		for _, o := range orders {
			status[o.ID] = o.Status
		}
		if status[gone.ID] != exchange.OrderWithdrawn {
			t.Fatalf("statuses %v", status)
		}
		// Money: every hold resolved, teams' payments match the settlement lines, and the
		// ledger still sums to zero.
		var lines []exchange.SettlementLine
		db.Read.Where("auction_id = ?", mk.AuctionID).Find(&lines)
		var net int64
		paid := map[string]int64{}
		for _, l := range lines {
			net += l.Payment
			paid[l.TeamID] += l.Payment
		}
		for team, budget := range map[string]ledger.Money{"search": 1000 * ledger.Dollar, "ads": 500 * ledger.Dollar, "ml": 2000 * ledger.Dollar} {
			b := mk.Balance(team)
			if b.Held != 0 || b.Posted != budget-ledger.Money(paid[team]) {
				t.Errorf("%s: %+v, paid %d", team, b, paid[team])
			}
		}
		tr, _ := mk.L.Balance(ctx, ledger.Treasury)
		if tr.Posted != ledger.Money(net) {
			t.Errorf("treasury %s, want the net of the settlement %d", tr.Posted, net)
		}
		// Quota: capacity is never exceeded, and the seller's quota moved if it sold.
		for _, pool := range []string{"us-east/cpu", "eu-west/cpu", "us-east/ram"} {
			var held int64
			db.Read.Table("holdings").Where("pool_id = ?", pool).Select("COALESCE(SUM(quantity),0)").Scan(&held)
			p, _ := mk.M.Pool(ctx, pool)
			if held > p.Capacity {
				t.Errorf("%s: %d held of %d", pool, held, p.Capacity)
			}
		}
		if status[sell.ID] == exchange.OrderWon && mk.Holding("ads", "us-east/cpu") != 0 {
			t.Errorf("ads sold but still holds %d", mk.Holding("ads", "us-east/cpu"))
		}
		if status[buy.ID] != exchange.OrderWon {
			t.Fatalf("search's bid %s; the market had room for it", status[buy.ID])
		}
		var qh int64
		db.Read.Table("quota_holds").Count(&qh)
		if qh != 0 {
			t.Errorf("%d quota holds left after settlement", qh)
		}

		// The operator's statistics count what settled.
		stats, err := mk.M.Stats(ctx, 5)
		if err != nil || len(stats) != 1 {
			t.Fatalf("Stats = %+v, %v", stats, err)
		}
		st := stats[0]
		won := 0
		for _, s := range status {
			if s == exchange.OrderWon {
				won++
			}
		}
		if st.Won != won || st.Orders != len(lines) || st.ShareSettled <= 0 || st.ShareSettled > 1 || st.PremiumMedian < 0 {
			t.Fatalf("stats %+v (won %d, lines %d)", st, won, len(lines))
		}
		if _, ok := st.Utilization["us-east/cpu"]; !ok {
			t.Errorf("utilization of settled pools: %v", st.Utilization)
		}
		// Traded prices are those of pools a winner bought in; every other pool's price
		// is indicative only, and kept apart.
		bought := map[string]bool{}
		specs := map[int64]exchange.OrderSpec{}
		for _, o := range []struct {
			who string
			id  int64
		}{{"member@search", buy.ID}, {"member@ads", sell.ID}, {"member@ml", big.ID}} {
			v, err := mk.M.Order(ctx, mk.Users[o.who], o.id)
			if err != nil {
				t.Fatal(err)
			}
			specs[o.id] = v.Spec
		}
		for _, l := range lines {
			if spec, ok := specs[l.OrderID]; ok && l.BundleIndex >= 0 {
				for pool, q := range spec.Bundles[l.BundleIndex] {
					if q > 0 {
						bought[pool] = true
					}
				}
			}
		}
		if len(st.Prices)+len(st.Indicative) != 3 {
			t.Errorf("prices %v and indicative %v: want the three pools between them", st.Prices, st.Indicative)
		}
		for pool := range st.Prices {
			if !bought[pool] {
				t.Errorf("%s shown as traded, but no winner bought there", pool)
			}
		}
		for pool := range st.Indicative {
			if bought[pool] {
				t.Errorf("%s shown as indicative, but a winner bought there", pool)
			}
		}
		if len(st.Prices) == 0 {
			t.Errorf("no traded price, though search's bid won")
		}
		// Closing again changes nothing.
		before := mk.Balance("search")
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		if after := mk.Balance("search"); after != before {
			t.Fatalf("a second close moved money: %+v -> %+v", before, after)
		}
		// The closed auction takes no orders.
		_, err = mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(1), Bundles: []exchange.Bundle{{"eu-west/cpu": 1}}})
		wantCode(t, err, clearhouse.ECONFLICT)
	})
}

func TestAnAuctionThatDoesNotConvergeSettlesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		db.Write.Exec(`UPDATE auctions SET params = '{"alpha":1,"delta":0.05,"min_step":0.001,"max_rounds":2}' WHERE id = ?`, mk.AuctionID)
		for _, team := range []string{"search", "ml"} {
			if _, err := mk.Order("owner@"+team, exchange.OrderSpec{Team: team, Limit: money(900), Bundles: []exchange.Bundle{{"eu-west/cpu": 100}}}); err != nil {
				t.Fatal(err)
			}
		}
		run, err := mk.M.Close(ctx, mk.AuctionID)
		if err != nil || run.Converged {
			t.Fatalf("Close = %+v, %v", run, err)
		}
		a, _ := mk.M.Auction(ctx, mk.AuctionID)
		if a.Status != exchange.AuctionFailed || a.Failure == "" {
			t.Fatalf("auction %+v", a)
		}
		for _, team := range []string{"search", "ml"} {
			if b := mk.Balance(team); b.Held != 0 || b.Available != b.Posted {
				t.Errorf("%s: %+v after a failed auction", team, b)
			}
		}
		if mk.Holding("search", "eu-west/cpu") != 0 {
			t.Error("a failed auction moved quota")
		}
	})
}

func TestOrderValidation(t *testing.T) {
	one := ledger.Dollar
	for name, spec := range map[string]exchange.OrderSpec{
		"no bundles":        {Team: "t", Limit: &one},
		"no limit":          {Team: "t", Bundles: []exchange.Bundle{{"p": 1}}},
		"both limits":       {Team: "t", Limit: &one, Limits: []ledger.Money{one}, Bundles: []exchange.Bundle{{"p": 1}}},
		"limits per bundle": {Team: "t", Limits: []ledger.Money{one, one}, Bundles: []exchange.Bundle{{"p": 1}}},
		"empty bundle":      {Team: "t", Limit: &one, Bundles: []exchange.Bundle{{}}},
		"zero quantity":     {Team: "t", Limit: &one, Bundles: []exchange.Bundle{{"p": 0}}},
		"huge quantity":     {Team: "t", Limit: &one, Bundles: []exchange.Bundle{{"p": 2e12}}},
	} {
		if err := spec.Validate(); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Errorf("%s: got %v", name, err)
		}
	}
	spec := exchange.OrderSpec{Team: "t", Limits: []ledger.Money{5 * one, -2 * one}, Bundles: []exchange.Bundle{{"a": 3}, {"b": -4, "a": 1}}}
	if spec.MaxPayment() != 5*one || spec.QuotaToHold()["b"] != 4 || spec.Kind() != "trade" {
		t.Fatalf("MaxPayment %s, quota %v, kind %s", spec.MaxPayment(), spec.QuotaToHold(), spec.Kind())
	}
}

// Operators cannot schedule an auction years ahead (which would block scheduling
// for good), and can cancel a scheduled auction that has not opened.
func TestSchedulingIsBoundedAndAScheduledAuctionCanBeCancelled(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		now := mk.Clock.Now()
		_, err := mk.M.ScheduleAuction(ctx, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 1, 1, 1, 0, 0, 0, time.UTC), auction.DefaultParams)
		wantCode(t, err, clearhouse.EINVALID)
		_, err = mk.M.ScheduleAuction(ctx, now.Add(2*time.Hour), now.Add(9*24*time.Hour), auction.DefaultParams)
		wantCode(t, err, clearhouse.EINVALID)
		later, err := mk.M.ScheduleAuction(ctx, now.Add(300*24*time.Hour), now.Add(300*24*time.Hour+time.Hour), auction.DefaultParams)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, mk.M.CancelAuction(ctx, mk.AuctionID), clearhouse.ECONFLICT) // open
		if err := mk.M.CancelAuction(ctx, later.ID); err != nil {
			t.Fatal(err)
		}
		_, err = mk.M.Auction(ctx, later.ID)
		wantCode(t, err, clearhouse.ENOTFOUND)
		wantCode(t, mk.M.CancelAuction(ctx, later.ID), clearhouse.ENOTFOUND)
	})
}

// The clock's parameters are checked wherever an auction is scheduled from (the
// cadence of serve and auction tick, the operator's form): a final round of 1e9 s
// or a NaN step is refused and nothing is stored.
func TestSchedulingRefusesParamsTheClockRefuses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		now := mk.Clock.Now()
		var before int64
		db.Read.Model(&exchange.Auction{}).Count(&before)
		for _, p := range []auction.Params{
			{FinalRound: &auction.FinalParams{Seconds: 1e9}},
			{FinalRound: &auction.FinalParams{Seconds: -1}},
			{Delta: math.NaN()},
			{MaxRounds: -1},
		} {
			_, err := mk.M.ScheduleAuction(ctx, now.Add(48*time.Hour), now.Add(49*time.Hour), p)
			wantCode(t, err, clearhouse.EINVALID)
			if msg := clearhouse.ErrorMessage(err); !strings.HasPrefix(msg, "params.") {
				t.Errorf("%+v: %q does not name the parameter", p, msg)
			}
		}
		var after int64
		db.Read.Model(&exchange.Auction{}).Count(&after)
		if after != before {
			t.Errorf("%d auctions stored by refused schedules", after-before)
		}
		if _, err := mk.M.ScheduleAuction(ctx, now.Add(48*time.Hour), now.Add(49*time.Hour), auction.Params{FinalRound: auction.FinalRoundParams(3600)}); err != nil {
			t.Fatal(err)
		}
	})
}

// An auction whose window ended but which has not settled (the server was down,
// say) keeps the next one from opening: both would sell the capacity no team
// holds. Tick closes it first, then opens the next with the supply that is left;
// servers opening at once open one auction, never two.
func TestAnAuctionOpensOnlyAfterTheOneBeforeItSettled(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"eu-west/cpu": 70}}, Limit: exchangetest.Money(400)}); err != nil {
			t.Fatal(err)
		}
		mk.Clock.Advance(90 * time.Minute) // the first window ended; nobody closed it
		now := mk.Clock.Now()
		next, err := mk.M.ScheduleAuction(ctx, now, now.Add(time.Hour), auction.DefaultParams)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var opened atomic.Int64
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				as, err := mk.M.OpenDue(ctx)
				if err != nil {
					t.Error(err)
				}
				opened.Add(int64(len(as)))
			}()
		}
		wg.Wait()
		if n := opened.Load(); n != 0 {
			t.Fatalf("OpenDue opened %d auctions while auction %d is unsettled", n, mk.AuctionID)
		}
		rep, err := mk.M.Tick(ctx, exchange.Cadence{PreviewEvery: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Closed) != 1 || rep.Closed[0] != mk.AuctionID || len(rep.Opened) != 1 || rep.Opened[0] != next.ID {
			t.Fatalf("Tick closed %v and opened %v, want %d then %d", rep.Closed, rep.Opened, mk.AuctionID, next.ID)
		}
		pools, err := mk.M.AuctionPools(ctx, next.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pools {
			if p.PoolID == "eu-west/cpu" && p.Supply != 30 {
				t.Fatalf("the next auction sells %d of eu-west/cpu; 70 of 100 were sold before it", p.Supply)
			}
		}
		mk.Verify()
	})
}
