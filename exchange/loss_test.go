package exchange_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// A lost order's notification says why it got nothing, from what the auction
// knows: its nearest bundle's cost at the final prices with each pool's price,
// above its limit.
func TestLostOrderNotificationSaysWhy(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := exchangetest.NewAuctionMarket(t, db)
		ctx := context.Background()
		o, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: exchangetest.Money(0.01), Bundles: []exchange.Bundle{{"us-east/cpu": 10}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		ns := notices(t, mk, "member@search")
		if len(ns) != 1 {
			t.Fatalf("notices %+v", ns)
		}
		body := ns[0].Body
		for _, want := range []string{"Order #", "got nothing: at the final prices its nearest bundle (1) costs $", "(10 cores of us-east/cpu at $", "per core), above its limit of $0.01. Its holds were released."} {
			if !strings.Contains(body, want) {
				t.Errorf("the notice of lost order %d does not say %q:\n%s", o.ID, want, body)
			}
		}
	})
}

// Where ads holds 60 of us-east's 100 cores, an order for 50 cores there is told,
// on both databases, that the auction had at most 40 for sale, not that its limit
// was too low.
func TestLostOrderNotificationSaysShortSupply(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := exchangetest.NewAuctionMarket(t, db)
		ctx := context.Background()
		o, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: exchangetest.Money(900), Bundles: []exchange.Bundle{{"us-east/cpu": 50}}})
		if err != nil {
			t.Fatal(err)
		}
		won, err := mk.Order("member@ads", exchange.OrderSpec{Team: "ads", Limit: exchangetest.Money(400), Bundles: []exchange.Bundle{{"eu-west/cpu": 10}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		// What the orders page explains losses from: the same supply, and who won.
		f, ran, err := mk.M.LossFactsOf(ctx, mk.AuctionID)
		if err != nil || !ran {
			t.Fatalf("LossFactsOf: ran %v, %v", ran, err)
		}
		if f.ForSale["us-east/cpu"] != 40 || f.ForSale["eu-west/cpu"] != 100 {
			t.Errorf("for sale %v, want 40 us-east/cpu and 100 eu-west/cpu", f.ForSale)
		}
		if got := f.Taken["eu-west/cpu"]; len(got) != 1 || got[0] != (exchange.Taker{OrderID: won.ID, Team: "ads", Units: 10}) || len(f.Taken["us-east/cpu"]) != 0 {
			t.Errorf("taken %+v, want only ads's order %d, 10 eu-west cores", f.Taken, won.ID)
		}
		ns := notices(t, mk, "member@search")
		if len(ns) != 1 {
			t.Fatalf("notices %+v", ns)
		}
		want := fmt.Sprintf("Order #%d got nothing: bundle 1 needs 50 cores of us-east/cpu; the auction had at most 40 cores for sale: no limit could have won it. Its holds were released.", o.ID)
		if !strings.Contains(ns[0].Body, want) {
			t.Errorf("the notice does not say %q:\n%s", want, ns[0].Body)
		}
	})
}

// LossReason says what happened: a bundle needing more than the auction had for
// sale (no limit could have won), nothing offered, a limit below the cost of the
// nearest feasible bundle only, a sold-out pool, the team's own order taking the
// units, or (when who took what is unknown) units gone to other orders.
func TestLossReason(t *testing.T) {
	limit := 10 * ledger.Dollar
	spec := exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": 4}, {"eu-west/gpu": 1}}}
	units := map[string]string{"us-east/cpu": "core", "eu-west/gpu": "GPU"}
	cheap := map[string]float64{"us-east/cpu": 1, "eu-west/gpu": 40}
	dear := map[string]float64{"us-east/cpu": 3, "eu-west/gpu": 40}
	for _, c := range []struct {
		name  string
		facts exchange.LossFacts
		want  string
	}{
		{"over its limit", exchange.LossFacts{Prices: dear, Units: units, Final: true},
			"at the final prices its nearest bundle (1) costs $12.00 (4 cores of us-east/cpu at $3.00 per core), above its limit of $10.00"},
		{"short supply in both bundles", exchange.LossFacts{Prices: dear, Units: units, ForSale: map[string]int64{"us-east/cpu": 3}, Final: true},
			"no bundle could be filled (bundle 1 needs 4 cores of us-east/cpu; the auction had at most 3 cores for sale; bundle 2 needs 1 GPU of eu-west/gpu; nothing was offered there): no limit could have won it"},
		{"over its limit in the feasible bundle only", exchange.LossFacts{Prices: cheap, Units: units, ForSale: map[string]int64{"eu-west/gpu": 5}, Final: true},
			"at the final prices its nearest bundle (2) costs $40.00 (1 GPU of eu-west/gpu at $40.00 per GPU), above its limit of $10.00"},
		{"sold out to others", exchange.LossFacts{Prices: cheap, Units: units, ForSale: map[string]int64{"us-east/cpu": 10},
			Taken: map[string][]exchange.Taker{"us-east/cpu": {{OrderID: 7, Team: "ads", Units: 8}}}, Final: true},
			"us-east/cpu sold out: bundle 1 was within its limit at the final prices, but other orders took 8 cores of the 10 cores for sale, leaving 2 cores of the 4 cores it needs"},
		{"same-team conflict", exchange.LossFacts{Prices: cheap, Units: units, ForSale: map[string]int64{"us-east/cpu": 10},
			Taken: map[string][]exchange.Taker{"us-east/cpu": {{OrderID: 7, Team: "search", Units: 8}}}, Final: true},
			"bundle 1 was within its limit at the final prices, but your team's own order #7 took 8 cores of the 10 cores of us-east/cpu for sale, leaving 2 cores of the 4 cores it needs: your team's orders competed for the same units"},
		{"outbid on units", exchange.LossFacts{Prices: cheap, Units: units, ForSale: map[string]int64{"us-east/cpu": 10}},
			"bundle 1 is within its limit at the current prices, but the pools' units went to other orders at those prices"},
	} {
		if got := exchange.LossReason(spec, c.facts); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	one := exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": 300}}}
	if got, want := exchange.LossReason(one, exchange.LossFacts{Prices: cheap, Units: units, ForSale: map[string]int64{"us-east/cpu": 200}, Final: true}),
		"bundle 1 needs 300 cores of us-east/cpu; the auction had at most 200 cores for sale: no limit could have won it"; got != want {
		t.Errorf("short supply:\n got %q\nwant %q", got, want)
	}
}
