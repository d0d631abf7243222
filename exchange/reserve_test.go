package exchange_test

import (
	"context"
	"math"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// Pool.ReservePrice is phi(psi) times the pool's unit cost in dollars: on the
// default curve (phi(0.8) = 1, phi(1) = 4 phi(0)) a $2.50 pool's reserve is $2.50
// at 80% and four times its idle reserve when full; the cost's micro-dollars
// become dollars (1 micro-dollar is $0.000001), the reserve is rounded up to the
// micro-dollar, scales with the cost (to the micro-dollar) and rises with
// utilization; a utilization outside [0, 1] or a negative cost is
// EINVALID.
func TestPoolReservePrice(t *testing.T) {
	c, err := auction.DefaultCurve.Build()
	if err != nil {
		t.Fatal(err)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }
	reserve := func(cost ledger.Money, psi float64) float64 {
		t.Helper()
		r, err := exchange.Pool{UnitCost: cost}.ReservePrice(c, psi)
		if err != nil {
			t.Fatalf("cost %v at %v: %v", cost, psi, err)
		}
		return r
	}
	cost := 2*ledger.Dollar + ledger.Dollar/2
	if got := reserve(cost, 0.8); !near(got, 2.5) {
		t.Errorf("a $2.50 pool at 80%%: %v, want 2.5", got)
	}
	if idle, full := reserve(cost, 0), reserve(cost, 1); idle <= 0 || math.Abs(full-4*idle) > 4e-6 {
		t.Errorf("a $2.50 pool: %v idle, %v full; want full four times idle", idle, full)
	}
	if got := reserve(1, 0.8); !near(got, 1e-6) {
		t.Errorf("a 1 micro-dollar pool at 80%%: %v, want 1e-06", got)
	}
	if got := reserve(0, 0.9); got != 0 {
		t.Errorf("a free pool: %v, want 0", got)
	}
	last := 0.0
	for i := range 101 {
		psi := float64(i) / 100
		r := reserve(cost, psi)
		if r <= last {
			t.Errorf("at %v the reserve is %v, not above %v at the step before", psi, r, last)
		}
		// Reserves are rounded up to the micro-dollar, the clock's grid (issue 31): a
		// whole number of micro-dollars, at most one above phi x cost.
		exact := c.Phi(psi) * cost.Dollars()
		if m := math.Round(r * 1e6); m/1e6 != r || r < exact || r-exact >= 1e-6 {
			t.Errorf("at %v the reserve %v is not phi x cost %v rounded up to the micro-dollar", psi, r, exact)
		}
		if twice := reserve(2*cost, psi); math.Abs(twice-2*r) > 1e-6+1e-12 {
			t.Errorf("at %v twice the cost gives %v, want %v to the micro-dollar", psi, twice, 2*r)
		}
		last = r
	}
	for _, bad := range []struct {
		cost ledger.Money
		psi  float64
	}{{cost, -0.01}, {cost, 1.01}, {cost, math.NaN()}, {-1, 0.5}} {
		r, err := exchange.Pool{UnitCost: bad.cost}.ReservePrice(c, bad.psi)
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID || r != 0 {
			t.Errorf("cost %v at %v: %v, %v; want 0 and EINVALID", bad.cost, bad.psi, r, err)
		}
	}
}

// The market's reserves (ReservePrices, and those fixed when an auction opens) are
// the pools' ReservePrice: phi(utilization) times the unit cost in dollars.
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
			want := c.Phi(ap.Utilization) * p.UnitCost.Dollars() // the rule, computed apart
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
