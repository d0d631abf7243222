package auction

import (
	"fmt"
	"math"

	"github.com/clearhouse/clearhouse"
)

// Tolerance is the relative tolerance of Check, as the format document states.
const Tolerance = 1e-6

func near(a, b, scale float64) bool {
	return math.Abs(a-b) <= Tolerance*max(1, math.Abs(scale))
}

// Check verifies that res is a correct outcome of inst: every winner gets one of its
// own bundles, the one with the largest surplus at the prices, for a payment equal
// to bundle . prices and within its limit; every bundle of every loser costs more
// than its limit; winners' net demand in each pool is at most its supply; no price
// is below its reserve. It returns EINVALID describing the first violation.
//
// A result with a final round is checked against the final round's conditions
// instead (see checkFinal): its allocation need not be supported by the prices.
func Check(inst Instance, res Result) error {
	if res.FinalRound != nil {
		return checkFinal(inst, res)
	}
	bad := func(format string, args ...any) error {
		return clearhouse.Errorf(clearhouse.EINVALID, format, args...)
	}
	for _, p := range inst.Pools {
		price, ok := res.Prices[p.ID]
		if !ok {
			return bad("pool %q has no price", p.ID)
		}
		if price < p.ReservePrice && !near(price, p.ReservePrice, p.ReservePrice) {
			return bad("pool %q: price %v is below its reserve %v", p.ID, price, p.ReservePrice)
		}
	}
	cost := func(b Bundle) (c, scale float64) {
		for id, q := range b {
			c += q * res.Prices[id]
			scale += math.Abs(q * res.Prices[id])
		}
		return c, scale
	}
	won := map[string]Winner{}
	for _, w := range res.Winners {
		if _, dup := won[w.ID]; dup {
			return bad("bidder %q wins twice", w.ID)
		}
		won[w.ID] = w
	}
	net := map[string]float64{}
	seen := 0
	for _, b := range inst.Bidders {
		w, isWinner := won[b.ID]
		if !isWinner {
			for k, bundle := range b.Bundles {
				c, scale := cost(bundle)
				if !(b.LimitOf(k) < c) && !near(b.LimitOf(k), c, scale) {
					return bad("bidder %q lost but could afford bundle %d (cost %v, limit %v)", b.ID, k, c, b.LimitOf(k))
				}
			}
			continue
		}
		seen++
		if w.BundleIndex < 0 || w.BundleIndex >= len(b.Bundles) {
			return bad("bidder %q wins bundle %d, which it does not have", b.ID, w.BundleIndex)
		}
		c, scale := cost(b.Bundles[w.BundleIndex])
		if !near(w.Payment, c, scale) || !near(w.AtPrices, c, scale) {
			return bad("bidder %q pays %v (at prices %v), but its bundle costs %v", b.ID, w.Payment, w.AtPrices, c)
		}
		surplus := b.LimitOf(w.BundleIndex) - c
		if surplus < 0 && !near(b.LimitOf(w.BundleIndex), c, scale) {
			return bad("bidder %q pays %v, beyond its limit %v", b.ID, c, b.LimitOf(w.BundleIndex))
		}
		for k, bundle := range b.Bundles {
			ck, sk := cost(bundle)
			if s := b.LimitOf(k) - ck; s > surplus && !near(s, surplus, max(scale, sk)) {
				return bad("bidder %q gets bundle %d but bundle %d leaves it more surplus (%v > %v)", b.ID, w.BundleIndex, k, s, surplus)
			}
		}
		for id, q := range b.Bundles[w.BundleIndex] {
			net[id] += q
		}
	}
	if seen != len(won) {
		return bad("a winner is not among the bidders")
	}
	for _, p := range inst.Pools {
		if net[p.ID] > p.Supply+Tolerance*max(1, p.Supply) {
			return bad("pool %q: winners' net demand %v exceeds supply %v", p.ID, net[p.ID], p.Supply)
		}
	}
	return nil
}

// Welfare is the value an outcome creates: the winners' limits for the bundles they
// get, minus the reserve value of the units they take from the operator (reserve
// times net units, pool by pool). It is the measure the CATS yardsticks use.
func Welfare(inst Instance, res Result) float64 {
	reserve := map[string]float64{}
	for _, p := range inst.Pools {
		reserve[p.ID] = p.ReservePrice
	}
	byID := map[string]Bidder{}
	for _, b := range inst.Bidders {
		byID[b.ID] = b
	}
	w := 0.0
	for _, win := range res.Winners {
		b := byID[win.ID]
		w += b.LimitOf(win.BundleIndex)
		for id, q := range b.Bundles[win.BundleIndex] {
			w -= q * reserve[id]
		}
	}
	return w
}

// String summarises a result in one line.
func (r Result) String() string {
	return fmt.Sprintf("converged=%v rounds=%d winners=%d", r.Converged, r.Rounds, len(r.Winners))
}

// checkFinal verifies a result with a final round: every winner gets one of its own
// bundles and pays at most that bundle's limit (a seller receives at least its
// minimum); at_prices is the bundle at the published prices; winners' net demand
// in each pool is at most its supply; no price is below its reserve; the winners'
// payments (the operator's receipts) cover the reserve value of what the operator
// sells net of what it buys; the reported welfare is the allocation's and lies
// between the clock's and the bound; a winner marked least_revenue pays a core
// payment, in a result that counts least-revenue parts.
func checkFinal(inst Instance, res Result) error {
	bad := func(format string, args ...any) error {
		return clearhouse.Errorf(clearhouse.EINVALID, format, args...)
	}
	reserve := map[string]float64{}
	for _, p := range inst.Pools {
		price, ok := res.Prices[p.ID]
		if !ok {
			return bad("pool %q has no price", p.ID)
		}
		if price < p.ReservePrice && !near(price, p.ReservePrice, p.ReservePrice) {
			return bad("pool %q: price %v is below its reserve %v", p.ID, price, p.ReservePrice)
		}
		reserve[p.ID] = p.ReservePrice
	}
	byID := make(map[string]*Bidder, len(inst.Bidders))
	for i := range inst.Bidders {
		byID[inst.Bidders[i].ID] = &inst.Bidders[i]
	}
	won := map[string]bool{}
	net := map[string]float64{}
	paid, reserveValue, scale := 0.0, 0.0, 0.0
	leastRevenue := 0 // winners marked least_revenue
	for _, w := range res.Winners {
		b, ok := byID[w.ID]
		if !ok {
			return bad("winner %q is not among the bidders", w.ID)
		}
		if won[w.ID] {
			return bad("bidder %q wins twice", w.ID)
		}
		won[w.ID] = true
		if w.BundleIndex < 0 || w.BundleIndex >= len(b.Bundles) {
			return bad("bidder %q wins bundle %d, which it does not have", b.ID, w.BundleIndex)
		}
		c, cs := 0.0, 0.0
		for id, q := range b.Bundles[w.BundleIndex] {
			c += q * res.Prices[id]
			cs += math.Abs(q * res.Prices[id])
			reserveValue += q * reserve[id]
			scale += math.Abs(q * reserve[id])
			net[id] += q
		}
		if !near(w.AtPrices, c, cs) {
			return bad("bidder %q: at_prices %v, but its bundle costs %v at the prices", b.ID, w.AtPrices, c)
		}
		if l := b.LimitOf(w.BundleIndex); w.Payment > l && !near(w.Payment, l, l) {
			return bad("bidder %q pays %v, beyond its limit %v", b.ID, w.Payment, l)
		}
		if w.Core && w.Payment < w.VCG && !near(w.Payment, w.VCG, math.Abs(w.VCG)+cs) {
			return bad("bidder %q pays %v, below its VCG payment %v", b.ID, w.Payment, w.VCG)
		}
		if w.LeastRevenue && !w.Core {
			return bad("bidder %q: least_revenue without core", b.ID)
		}
		if w.LeastRevenue {
			leastRevenue++
		}
		paid += w.Payment
		scale += math.Abs(w.Payment)
	}
	for _, p := range inst.Pools {
		if net[p.ID] > p.Supply+Tolerance*max(1, p.Supply) {
			return bad("pool %q: winners' net demand %v exceeds supply %v", p.ID, net[p.ID], p.Supply)
		}
	}
	if paid < reserveValue && !near(paid, reserveValue, scale) {
		return bad("the operator receives %v, less than the reserve value %v of what it sells", paid, reserveValue)
	}
	f := res.FinalRound
	w := Welfare(inst, res)
	switch {
	case !near(f.Welfare, w, scale+math.Abs(w)):
		return bad("final_round.welfare %v, but the allocation's welfare is %v", f.Welfare, w)
	case f.Welfare < f.ClockWelfare && !near(f.Welfare, f.ClockWelfare, f.ClockWelfare):
		return bad("the final round's welfare %v is below the clock's %v", f.Welfare, f.ClockWelfare)
	case f.Bound < f.Welfare && !near(f.Bound, f.Welfare, f.Welfare):
		return bad("final_round.bound %v is below its welfare %v", f.Bound, f.Welfare)
	case f.LeastRevenueParts < 0 || f.LeastRevenueParts > f.CoreParts:
		return bad("final_round.least_revenue_parts %d: must be from 0 to core_parts (%d)", f.LeastRevenueParts, f.CoreParts)
	case leastRevenue > 0 && f.LeastRevenueParts == 0:
		return bad("%d winners marked least_revenue, but final_round.least_revenue_parts is 0", leastRevenue)
	}
	return nil
}
