package exchange_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// A team cannot buy a pool its live orders in the auction sell, nor sell one they
// buy, through any client: the refusal names the pool and the other order, and
// nothing is saved. Other pools, and the same pool once the other order is
// withdrawn, are fine.
func TestPlaceOrderRefusesBuyingAndSellingOnePool(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := newAuctionMarket(t, db)
		offer, err := mk.Order("member@ads", exchange.OrderSpec{Team: "ads", Limit: money(-0.5), Bundles: []exchange.Bundle{{"us-east/cpu": -10}}})
		if err != nil {
			t.Fatal(err)
		}
		before := mk.Balance("ads")
		_, err = mk.Order("owner@ads", exchange.OrderSpec{Team: "ads", Limit: money(50), Bundles: []exchange.Bundle{{"eu-west/cpu": 5}, {"us-east/cpu": 5, "us-east/ram": 10}}})
		if clearhouse.ErrorCode(err) != clearhouse.EUNPROCESSABLE {
			t.Fatalf("a bid on a pool the team sells: %v, want EUNPROCESSABLE", err)
		}
		msg := clearhouse.ErrorMessage(err)
		for _, want := range []string{"us-east/cpu", "#" + strconv.FormatInt(offer.ID, 10), "already sells"} {
			if !strings.Contains(msg, want) {
				t.Errorf("refusal %q does not say %q", msg, want)
			}
		}
		if after := mk.Balance("ads"); after != before {
			t.Errorf("a refused bid changed the budget: %+v -> %+v", before, after)
		}
		// A trade that sells what the team sells and buys elsewhere is fine.
		move, err := mk.Order("member@ads", exchange.OrderSpec{Team: "ads", Limit: money(1), Bundles: []exchange.Bundle{{"us-east/cpu": -5, "eu-west/cpu": 5}}})
		if err != nil {
			t.Fatalf("a trade on the same side: %v", err)
		}
		// Selling eu-west/cpu, which the trade buys, is not.
		_, err = mk.Order("member@ads", exchange.OrderSpec{Team: "ads", Limit: money(-1), Bundles: []exchange.Bundle{{"eu-west/cpu": -1}}})
		if clearhouse.ErrorCode(err) != clearhouse.EUNPROCESSABLE || !strings.Contains(clearhouse.ErrorMessage(err), "already buys eu-west/cpu") {
			t.Errorf("selling what the team buys: %v", err)
		}
		// Another team is not concerned.
		if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(20), Bundles: []exchange.Bundle{{"us-east/cpu": 5}}}); err != nil {
			t.Errorf("another team's bid: %v", err)
		}
		for _, id := range []int64{offer.ID, move.ID} {
			if err := mk.M.WithdrawOrder(context.Background(), mk.Users["member@ads"], id); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := mk.Order("owner@ads", exchange.OrderSpec{Team: "ads", Limit: money(20), Bundles: []exchange.Bundle{{"us-east/cpu": 5}}}); err != nil {
			t.Errorf("a bid once the offer is withdrawn: %v", err)
		}
		mk.Verify()
	})
}

// Many concurrent bids and offers of one team on one pool, from two servers on
// one database, never leave the team with live orders on both sides: the team's
// row serialises the check with the placing.
func TestConcurrentBuyAndSellOfOnePoolNeverBothPass(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		other := storetest.Another(t, db)
		second := exchange.NewMarket(other, ledger.New(other, mk.Clock.Now), mk.Clock.Now)
		var wg sync.WaitGroup
		var mu sync.Mutex
		placed := map[string]int{}
		for i := range 16 {
			m := mk.M
			if i%2 == 1 {
				m = second
			}
			spec := exchange.OrderSpec{Team: "ads", Limit: money(2), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}}
			side := "bid"
			if i%4 < 2 {
				spec = exchange.OrderSpec{Team: "ads", Limit: money(-0.5), Bundles: []exchange.Bundle{{"us-east/cpu": -1}}}
				side = "offer"
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					_, err := m.PlaceOrder(ctx, mk.Users["member@ads"], spec)
					switch clearhouse.ErrorCode(err) {
					case "":
						mu.Lock()
						placed[side]++
						mu.Unlock()
					case clearhouse.EUNPROCESSABLE:
						if !strings.Contains(clearhouse.ErrorMessage(err), "us-east/cpu") {
							t.Errorf("refusal does not name the pool: %v", err)
						}
					default:
						t.Errorf("place %s: %v", side, err)
					}
				}
			}()
		}
		wg.Wait()
		if placed["bid"]+placed["offer"] == 0 {
			t.Fatal("no order was placed")
		}
		if placed["bid"] > 0 && placed["offer"] > 0 {
			t.Errorf("both sides were placed: %v", placed)
		}
		vs, err := mk.M.Orders(ctx, exchange.OrderFilter{Team: "ads", AuctionID: mk.AuctionID, Statuses: []exchange.OrderStatus{exchange.OrderOpen, exchange.OrderAwaitingApproval}})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, v := range vs {
			kinds[v.Spec.Kind()]++
		}
		if len(kinds) != 1 || kinds["bid"]+kinds["offer"] != placed["bid"]+placed["offer"] {
			t.Errorf("live orders %v, placed %v", kinds, placed)
		}
		mk.Verify()
	})
}
