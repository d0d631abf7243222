package exchange_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// snapshot is everything settlement may change.
type snapshot struct {
	auction  exchange.AuctionStatus
	balances map[string]ledger.Balance
	holdings string
	entries  int64
	lines    int64
}

func (mk *market) snapshot() snapshot {
	ctx := context.Background()
	a, _ := mk.M.Auction(ctx, mk.AuctionID)
	s := snapshot{auction: a.Status, balances: map[string]ledger.Balance{}}
	for _, t := range []string{"search", "ads", "ml"} {
		s.balances[t] = mk.Balance(t)
	}
	hs, _ := mk.M.Holdings(ctx, "")
	s.holdings = fmt.Sprint(hs)
	mk.DB.Read.Table("ledger_entries").Count(&s.entries)
	mk.DB.Read.Table("settlement_lines").Count(&s.lines)
	return s
}

// A settlement that fails part way (here: the database refuses the last write, as
// a crash or a full disk would) leaves everything as it was; closing again after the
// "restart" settles exactly once.
func TestASettlementCutShortChangesNothing(t *testing.T) {
	db := storetest.New(t)
	ctx := context.Background()
	mk := newAuctionMarket(t, db)
	for _, o := range []struct {
		who  string
		spec exchange.OrderSpec
	}{
		{"member@search", exchange.OrderSpec{Team: "search", Limit: money(300), Bundles: []exchange.Bundle{{"eu-west/cpu": 50}}}},
		{"member@ads", exchange.OrderSpec{Team: "ads", Limit: money(-10), Bundles: []exchange.Bundle{{"us-east/cpu": -20}}}},
		{"owner@ml", exchange.OrderSpec{Team: "ml", Limit: money(200), Bundles: []exchange.Bundle{{"us-east/cpu": 30}}}},
	} {
		if _, err := mk.Order(o.who, o.spec); err != nil {
			t.Fatal(err)
		}
	}
	before := mk.snapshot()
	if err := db.Write.Exec(`CREATE TRIGGER crash BEFORE INSERT ON settlement_lines BEGIN SELECT RAISE(ABORT, 'simulated crash'); END`).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := mk.M.Close(ctx, mk.AuctionID); err == nil {
		t.Fatal("the cut-short settlement reported success")
	}
	// Bidding stopped (the first step committed), and nothing else moved.
	after := mk.snapshot()
	if after.auction != exchange.AuctionClosing {
		t.Fatalf("after the cut-short close the auction is %s, want closing", after.auction)
	}
	after.auction = before.auction
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a failed settlement changed state:\n before %+v\n after  %+v", before, after)
	}
	if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(1), Bundles: []exchange.Bundle{{"eu-west/cpu": 1}}}); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
		t.Fatalf("an order placed in a closing auction: %v, want a conflict", err)
	}
	db.Write.Exec(`DROP TRIGGER crash`)
	// The next tick (or `clearhouse auction close`) finishes the job.
	if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
		t.Fatal(err)
	}
	settled := mk.snapshot()
	if settled.auction != exchange.AuctionSettled || settled.lines != 3 {
		t.Fatalf("after the retry: %+v", settled)
	}
	if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
		t.Fatal(err)
	}
	if again := mk.snapshot(); fmt.Sprint(again) != fmt.Sprint(settled) {
		t.Fatal("closing a settled auction changed state")
	}
}

// Settlement on random markets agrees with the engine's binding result, keeps
// quota within capacity, and the ledger's trial balance at zero.
func TestSettlementOfRandomMarketsAgreesWithTheEngine(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		rng := rand.New(rand.NewPCG(3, 5))
		pools := []string{"us-east/cpu", "us-east/ram", "eu-west/cpu"}
		teams := []string{"search", "ads", "ml"}
		placed := 0
		for range 60 {
			team := teams[rng.IntN(len(teams))]
			var bundles []exchange.Bundle
			for range 1 + rng.IntN(2) {
				b := exchange.Bundle{}
				for _, p := range pools {
					if rng.IntN(2) == 0 {
						q := int64(1 + rng.IntN(30))
						if team == "ads" && p == "us-east/cpu" && rng.IntN(2) == 0 {
							q = -q
						}
						b[p] = q
					}
				}
				if len(b) == 0 {
					b[pools[0]] = 1
				}
				bundles = append(bundles, b)
			}
			spec := exchange.OrderSpec{Team: team, Bundles: bundles, Limit: money(float64(rng.IntN(200)) - 20)}
			switch spec.Kind() { // bids pay a positive limit, offers receive (limit <= 0)
			case "bid":
				spec.Limit = money(float64(1 + rng.IntN(200)))
			case "offer":
				spec.Limit = money(-float64(rng.IntN(20)))
			}
			_, err := mk.Order("owner@"+team, spec)
			if code := clearhouse.ErrorCode(err); err != nil && code != clearhouse.EUNPROCESSABLE {
				t.Fatal(err)
			}
			if err == nil {
				placed++
			}
		}
		if placed < 20 {
			t.Fatalf("only %d orders placed", placed)
		}
		run, err := mk.M.Close(ctx, mk.AuctionID)
		if err != nil || !run.Converged {
			t.Fatalf("close: %+v %v", run, err)
		}
		rep, err := mk.M.SettlementReport(ctx, mk.AuctionID)
		if err != nil || len(rep.Lines) != placed {
			t.Fatalf("report: %d lines of %d orders, %v", len(rep.Lines), placed, err)
		}
		if rep.BuyersPaid != rep.SellersReceived+rep.TreasuryNet {
			t.Fatal("the report does not balance")
		}
		paid := map[string]ledger.Money{}
		for _, l := range rep.Lines {
			want, err := ledger.FromDollars(l.Exact)
			if err != nil {
				t.Fatal(err)
			}
			if l.BundleIndex < 0 && (l.Payment != 0 || l.Exact != 0) {
				t.Fatalf("order %d lost but pays %d", l.OrderID, l.Payment)
			}
			if l.BundleIndex >= 0 && ledger.Money(l.Payment) != want {
				t.Fatalf("order %d settled %d, the engine said %v", l.OrderID, l.Payment, l.Exact)
			}
			paid[l.TeamID] += ledger.Money(l.Payment)
		}
		for team, budget := range map[string]ledger.Money{"search": 1000 * ledger.Dollar, "ads": 500 * ledger.Dollar, "ml": 2000 * ledger.Dollar} {
			if b := mk.Balance(team); b.Posted != budget-paid[team] || b.Held != 0 {
				t.Fatalf("%s: %+v, paid %s", team, b, paid[team])
			}
		}
		tb, _ := mk.L.TrialBalance(ctx)
		var sum ledger.Money
		for _, a := range tb {
			sum += a.Posted
		}
		if sum != 0 {
			t.Fatalf("trial balance %s", sum)
		}
		for _, p := range pools {
			var held int64
			db.Read.Table("holdings").Where("pool_id = ?", p).Select("COALESCE(SUM(quantity),0)").Scan(&held)
			pool, _ := mk.M.Pool(ctx, p)
			if held > pool.Capacity {
				t.Fatalf("%s: %d held of %d", p, held, pool.Capacity)
			}
		}
	})
}

// A close writes exactly each order's status and updated_at, and nothing else of
// it: every order of the run won (settlement line with a bundle) or lost (none),
// every order still awaiting approval is rejected, all of them at the close's
// time (the very value written as the auction's settled_at), and the orders of
// no other auction change.
func TestACloseSetsEveryOrdersStatusAndNothingElse(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		rng := rand.New(rand.NewPCG(7, 11))
		pools := []string{"us-east/cpu", "us-east/ram", "eu-west/cpu"}
		waiting := map[int64]bool{}
		for i := range 80 {
			team := []string{"search", "ads", "ml"}[i%3]
			b := exchange.Bundle{pools[rng.IntN(len(pools))]: int64(1 + rng.IntN(40))}
			spec := exchange.OrderSpec{Team: team, Bundles: []exchange.Bundle{b, {pools[rng.IntN(len(pools))]: int64(1 + rng.IntN(20))}},
				Limit: money(float64(1 + rng.IntN(120)))}
			who := "owner@" + team
			if team == "ads" && i%2 == 0 { // offers, some of which sell
				spec = exchange.OrderSpec{Team: team, Bundles: []exchange.Bundle{{"us-east/cpu": -int64(1 + rng.IntN(5))}}, Limit: money(-float64(rng.IntN(10)))}
			}
			if team == "ml" && i%4 == 0 { // beyond ml's approval threshold: left waiting
				spec.Limit, who = money(float64(301+rng.IntN(100))), "member@ml"
			}
			o, err := mk.Order(who, spec)
			if code := clearhouse.ErrorCode(err); err != nil && code != clearhouse.EUNPROCESSABLE {
				t.Fatal(err)
			}
			if err == nil && o.Status == exchange.OrderAwaitingApproval {
				waiting[o.ID] = true
			}
		}
		var before []exchange.Order
		if err := db.Read.Order("id").Find(&before).Error; err != nil {
			t.Fatal(err)
		}
		mk.Clock.Advance(time.Hour)
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		lines := map[int64]int{}
		var ls []exchange.SettlementLine
		if err := db.Read.Where("auction_id = ?", mk.AuctionID).Find(&ls).Error; err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			lines[l.OrderID] = l.BundleIndex
		}
		var after []exchange.Order
		if err := db.Read.Order("id").Find(&after).Error; err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Fatalf("%d orders after the close, %d before", len(after), len(before))
		}
		now := mk.Clock.Now()
		count := map[exchange.OrderStatus]int{}
		for i, o := range after {
			want := before[i]
			switch idx, ok := lines[o.ID]; {
			case waiting[o.ID]:
				want.Status = exchange.OrderRejected
			case ok && idx >= 0:
				want.Status = exchange.OrderWon
			case ok:
				want.Status = exchange.OrderLost
			}
			if want.Status != before[i].Status {
				want.UpdatedAt = now
				count[want.Status]++
			}
			if !o.UpdatedAt.Equal(want.UpdatedAt) {
				t.Errorf("order %d: updated at %v, want %v", o.ID, o.UpdatedAt, want.UpdatedAt)
			}
			o.UpdatedAt, want.UpdatedAt = time.Time{}, time.Time{}
			o.CreatedAt, want.CreatedAt = o.CreatedAt.UTC(), want.CreatedAt.UTC()
			if !reflect.DeepEqual(o, want) {
				t.Errorf("order after the close:\n got  %+v\n want %+v", o, want)
			}
		}
		if count[exchange.OrderWon] < 5 || count[exchange.OrderLost] < 5 || count[exchange.OrderRejected] < 3 || len(lines) != count[exchange.OrderWon]+count[exchange.OrderLost] {
			t.Fatalf("the market should have winners, losers and rejected orders: %v of %d lines", count, len(lines))
		}
		var same int
		if err := db.Read.Raw("SELECT COUNT(*) FROM orders WHERE auction_id = ? AND updated_at = (SELECT settled_at FROM auctions WHERE id = ?)",
			mk.AuctionID, mk.AuctionID).Scan(&same).Error; err != nil {
			t.Fatal(err)
		}
		if same != count[exchange.OrderWon]+count[exchange.OrderLost]+count[exchange.OrderRejected] {
			t.Fatalf("%d orders stored the close's time as written for the auction's settled_at, want %v", same, count)
		}
	})
}

// The open orders a close reads by hand are exactly what gorm reads, every column,
// nullable ones set and unset: the close's check that it settles the instance it
// presolved compares two such reads.
func TestOpenOrdersReadEveryColumnAsGormDoes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		shared, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(30), Bundles: []exchange.Bundle{{"eu-west/cpu": 5}}})
		if err != nil {
			t.Fatal(err)
		}
		approved, err := mk.Order("member@ml", exchange.OrderSpec{Team: "ml", Limits: []ledger.Money{*money(400), *money(350)},
			Bundles: []exchange.Bundle{{"us-east/cpu": 20}, {"eu-west/cpu": 20}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := mk.M.DecideOrder(ctx, mk.Users["owner@ml"], approved.ID, true); err != nil {
			t.Fatal(err)
		}
		if _, err := mk.Order("member@ads", exchange.OrderSpec{Team: "ads", Limit: money(-5), Bundles: []exchange.Bundle{{"us-east/cpu": -3}}}); err != nil {
			t.Fatal(err)
		}
		if err := db.Write.Exec("UPDATE orders SET idem_key = 'k1', idem_digest = 'd1', note = 'a note' WHERE id = ?", shared.ID).Error; err != nil {
			t.Fatal(err)
		}
		var want []exchange.Order
		if err := db.Read.Where("auction_id = ? AND status = ?", mk.AuctionID, exchange.OrderOpen).Order("id").Find(&want).Error; err != nil {
			t.Fatal(err)
		}
		got, err := exchange.OpenOrders(db.Read, mk.AuctionID)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != 3 || want[0].IdemKey == nil || want[0].SharedLimit == nil || want[1].DecidedBy == nil || want[1].SharedLimit != nil || want[2].IdemKey != nil {
			t.Fatalf("the orders do not set and unset every nullable column: %+v", want)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("read by hand:\n %+v\nby gorm:\n %+v", got, want)
		}
	})
}
