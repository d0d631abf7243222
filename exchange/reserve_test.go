package exchange_test

import (
	"context"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"pgregory.net/rapid"
)

// oldReserve is how the four places computed a reserve before Pool.ReservePrice:
// the unit cost, a bare int64 of micro-dollars, divided by 1e6 by hand.
func oldReserve(c auction.Curve, psi float64, unitCost int64) (float64, error) {
	return auction.ReservePrice(c, psi, float64(unitCost)/1e6)
}

// Pool.ReservePrice gives exactly the numbers the hand computation gave, for any
// unit cost and utilization, on the default curve and on parametric ones.
func TestPoolReservePriceIsTheOldComputation(t *testing.T) {
	def, err := auction.DefaultCurve.Build()
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(t *rapid.T) {
		c := def
		if rapid.Bool().Draw(t, "parametric") {
			spec := auction.CurveSpec{Kind: "parametric", K: rapid.Float64Range(1.01, 1000).Draw(t, "k"),
				Threshold: rapid.Float64Range(0.05, 0.95).Draw(t, "threshold"), Gamma: rapid.Float64Range(0.5, 3).Draw(t, "gamma")}
			b, err := spec.Build()
			if err != nil {
				t.Skip(err) // not every drawn spec has the five properties
			}
			c = b
		}
		cost := rapid.Int64Range(-10, 1_000_000*int64(ledger.Dollar)).Draw(t, "cost")
		psi := rapid.Float64Range(-0.1, 1.1).Draw(t, "psi")
		got, gotErr := exchange.Pool{UnitCost: ledger.Money(cost)}.ReservePrice(c, psi)
		want, wantErr := oldReserve(c, psi, cost)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("cost %d, psi %v: got %v, %v; the hand computation gave %v, %v", cost, psi, got, gotErr, want, wantErr)
		}
	})
}

// The market's reserves (ReservePrices, and those fixed when an auction opens) are
// the pools' ReservePrice, and the same numbers as before.
func TestMarketReservesAreThePoolsReservePrice(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := exchangetest.NewAuctionMarket(t, db)
		ctx := context.Background()
		rc, err := mk.M.Curve(ctx, "standard")
		if err != nil {
			t.Fatal(err)
		}
		spec, err := rc.CurveSpec()
		if err != nil {
			t.Fatal(err)
		}
		c, err := spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		pools, err := mk.M.Pools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		now, err := mk.M.ReservePrices(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fixed, err := mk.M.AuctionPools(ctx, mk.AuctionID)
		if err != nil {
			t.Fatal(err)
		}
		at := map[string]exchange.AuctionPool{}
		for _, ap := range fixed {
			at[ap.PoolID] = ap
		}
		if len(pools) != 3 || len(now) != 3 || len(at) != 3 {
			t.Fatalf("%d pools, %d reserves now, %d in the auction", len(pools), len(now), len(at))
		}
		for _, p := range pools {
			ap := at[p.ID]
			want, _ := oldReserve(c, ap.Utilization, int64(p.UnitCost))
			got, err := p.ReservePrice(c, ap.Utilization)
			if err != nil || got != want || ap.ReservePrice != want || want <= 0 {
				t.Errorf("%s at psi %v: ReservePrice %v (%v), auction's %v, hand computation %v", p.ID, ap.Utilization, got, err, ap.ReservePrice, want)
			}
			if now[p.ID] != want { // nothing moved utilization since the opening
				t.Errorf("%s: ReservePrices %v, want %v", p.ID, now[p.ID], want)
			}
		}
	})
}
