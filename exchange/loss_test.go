package exchange_test

import (
	"context"
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

// LossReason names a pool nothing was offered in, a bundle over its limit with its
// prices, or a bundle within its limit that others outbid on the units.
func TestLossReason(t *testing.T) {
	limit := 10 * ledger.Dollar
	spec := exchange.OrderSpec{Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": 4}, {"eu-west/gpu": 1}}}
	units := map[string]string{"us-east/cpu": "core", "eu-west/gpu": "GPU"}
	for _, c := range []struct {
		name  string
		facts exchange.LossFacts
		want  string
	}{
		{"over its limit", exchange.LossFacts{Prices: map[string]float64{"us-east/cpu": 3, "eu-west/gpu": 40}, Units: units, Final: true},
			"at the final prices its nearest bundle (1) costs $12.00 (4 cores of us-east/cpu at $3.0000 per core), above its limit of $10.00"},
		{"nothing offered", exchange.LossFacts{Prices: map[string]float64{"us-east/cpu": 1, "eu-west/gpu": 40}, Units: units, Offered: map[string]bool{"eu-west/gpu": true}, Final: true},
			"nothing was offered in us-east/cpu, which bundle 1 buys"},
		{"outbid on units", exchange.LossFacts{Prices: map[string]float64{"us-east/cpu": 1, "eu-west/gpu": 40}, Units: units, Offered: map[string]bool{"us-east/cpu": true}},
			"bundle 1 is within its limit at the current prices, but the pools' units went to other orders at those prices"},
	} {
		if got := exchange.LossReason(spec, c.facts); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
