package auction_test

import (
	"math"
	"slices"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
	"pgregory.net/rapid"
)

// violationAt is how far prices fail to support bidder b holding bundle k (-1:
// losing), computed from the instance alone: for a winner, the most by which its
// bundle costs more than its limit or another bundle leaves more surplus; for a
// loser, the most by which a bundle costs less than its limit.
func violationAt(b auction.Bidder, k int, prices map[string]float64) float64 {
	surplus := func(m int) float64 {
		s := b.LimitOf(m)
		for id, q := range b.Bundles[m] {
			s -= q * prices[id]
		}
		return s
	}
	best := 0.0
	for m := range b.Bundles {
		best = max(best, surplus(m))
	}
	if k < 0 {
		return best
	}
	return best - surplus(k)
}

// checkSupport checks a result's supporting prices against the instance alone: at
// or above reserve, and final_round.unsupported lists exactly the orders they fail
// to support. It reports whether the result had supporting prices.
func checkSupport(t interface{ Fatalf(string, ...any) }, inst auction.Instance, res auction.Result) bool {
	f := res.FinalRound
	if f == nil || f.Prices == nil {
		return false
	}
	won := map[string]int{}
	for _, w := range res.Winners {
		won[w.ID] = w.BundleIndex
	}
	for _, p := range inst.Pools {
		if f.Prices[p.ID] < p.ReservePrice-1e-9 {
			t.Fatalf("pool %s: supporting price %v below reserve %v", p.ID, f.Prices[p.ID], p.ReservePrice)
		}
	}
	for _, b := range inst.Bidders {
		k, ok := won[b.ID]
		if !ok {
			k = -1
		}
		v := violationAt(b, k, f.Prices)
		listed := slices.Contains(f.Unsupported, b.ID)
		// More than a micro-dollar per dollar of the limit, in whole micro-dollars (the
		// prices are whole micro-dollars): a violation at the tolerance is supported.
		unsupported := math.Round(v*1e6) > max(1, math.Abs(b.LimitOf(max(k, 0))))
		if listed != unsupported {
			t.Fatalf("bidder %s (bundle %d): violation %v at %v, listed unsupported %v", b.ID, k, v, f.Prices, listed)
		}
	}
	return true
}

// Where the final round changes the clock's allocation, final_round.prices are at
// or above reserve, and final_round.unsupported lists exactly the orders they fail
// to support (checked from the instance alone): on random small markets and on
// small CATS-like ones (complements, where the final round changes the allocation
// most).
func TestSupportingPricesListTheUnsupported(t *testing.T) {
	withPrices := 0
	rapid.Check(t, func(t *rapid.T) {
		inst := genInstance(t)
		res, err := auction.Solve(inst, auction.Options{})
		if err == nil && res.Converged && checkSupport(t, inst, res) {
			withPrices++
		}
	})
	for _, dist := range auction.CATSDistributions {
		for seed := range uint64(8) {
			inst, err := auction.GenerateCATS(dist, 8, 12, seed+1)
			if err != nil {
				t.Fatal(err)
			}
			res, err := auction.Solve(inst, auction.Options{MaxNodes: 2000})
			if err == nil && res.Converged && checkSupport(t, inst, res) {
				withPrices++
			}
		}
	}
	if withPrices < 15 {
		t.Fatalf("only %d markets where the final round changed the allocation", withPrices)
	}
}

// Exchange's final-round market: the final round gives search (100 cores and 400
// GiB for $900) what the clock gave ml (300 GiB for $290) and no one (ads, 60 cores
// for $400). No linear prices support it (the LP relaxation is fractional): ml
// needs the GiB at no less than 290/300, search then leaves the cores at most
// (900 - 400 x 290/300) / 100 = $5.1333, where ads's 60 cost $308, $92 under its
// limit. That is the least total violation: raising the cores' price by d helps ads
// by 60d but costs search 100d, or ml 75d through the GiB. So ads alone is
// unsupported.
func TestSupportingPricesExample(t *testing.T) {
	res := solveJSON(t, `{"pools":[{"id":"cpu","supply":100,"reserve_price":1},{"id":"ram","supply":400,"reserve_price":0.1}],
	"bidders":[{"id":"search","limit":900,"bundles":[{"cpu":100,"ram":400}]},{"id":"ads","limit":400,"bundles":[{"cpu":60}]},
	{"id":"ml","limit":290,"bundles":[{"ram":300}]}]}`)
	f := res.FinalRound
	// Exactly, in whole micro-dollars: the prices are the LP's vertex without the
	// perturbation that breaks its ties, rounded as settlement stores them.
	if f.Prices["ram"] != 0.966667 || f.Prices["cpu"] != 5.133333 {
		t.Errorf("supporting prices %v, want ram 0.966667 and cpu 5.133333", f.Prices)
	}
	if !slices.Equal(f.Unsupported, []string{"ads"}) {
		t.Errorf("unsupported %v, want [ads]", f.Unsupported)
	}
}
