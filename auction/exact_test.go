package auction_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
	"pgregory.net/rapid"
)

// micros is a float amount of dollars in whole micro-dollars, and whether it was
// one already (the float nearest a whole number of micro-dollars).
func micros(d float64) (int64, bool) {
	m := math.Round(d * 1e6)
	return int64(m), float64(int64(m))/1e6 == d
}

// genExactInstance is genInstance with the exchange's money: limits in whole
// micro-dollars with sub-cent digits, and reserve prices with any digits (a curve
// computes them).
func genExactInstance(t *rapid.T) auction.Instance {
	inst := genInstance(t)
	for i := range inst.Pools {
		inst.Pools[i].ReservePrice = rapid.Float64Range(0, 4).Draw(t, "reserve")
	}
	// A limit is the float nearest its whole number of micro-dollars, as the
	// exchange's are: whole dollars plus micro-dollars, divided once (adding a float
	// fraction to the dollars could land a hair off the micro-dollar, and the engine
	// rightly rounds such a limit the safe way).
	withMicros := func(dollars float64) float64 {
		return float64(int64(dollars)*1_000_000+int64(rapid.IntRange(0, 999_999).Draw(t, "micros"))) / 1e6
	}
	for i := range inst.Bidders {
		b := &inst.Bidders[i]
		if b.Limit != nil {
			l := withMicros(*b.Limit)
			b.Limit = &l
		}
		for k := range b.Limits {
			b.Limits[k] = withMicros(b.Limits[k])
		}
	}
	return inst
}

// Every price the clock publishes is a whole number of micro-dollars per unit, at
// or above the reserve; every payment at unit prices is exactly quantity x price in
// micro-dollars; a winner's bundle costs at most its limit and each of a loser's
// bundles more than its limit, compared to the micro-dollar (issue 31).
func TestPricesAreWholeMicroDollarsAndPaymentsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inst := genExactInstance(t)
		final := rapid.Bool().Draw(t, "final")
		inst.Params.FinalRound = &auction.FinalParams{Off: !final}
		res, err := auction.Solve(inst, auction.Options{})
		if err != nil {
			t.Fatal(err)
		}
		price := map[string]int64{}
		for _, p := range inst.Pools {
			m, ok := micros(res.Prices[p.ID])
			if !ok {
				t.Fatalf("pool %s: price %v is not a whole micro-dollar", p.ID, res.Prices[p.ID])
			}
			if float64(m)/1e6 < p.ReservePrice {
				t.Fatalf("pool %s: price %v below reserve %v", p.ID, res.Prices[p.ID], p.ReservePrice)
			}
			price[p.ID] = m
		}
		if !res.Converged {
			return
		}
		cost := func(b auction.Bundle) int64 {
			c := int64(0)
			for id, q := range b {
				c += int64(q) * price[id]
			}
			return c
		}
		limit := func(b auction.Bidder, k int) int64 {
			l, _ := micros(b.LimitOf(k))
			return l
		}
		won := map[string]auction.Winner{}
		for _, w := range res.Winners {
			won[w.ID] = w
		}
		for _, b := range inst.Bidders {
			w, ok := won[b.ID]
			if !ok {
				if final {
					continue // the final round may drop a bidder the prices support
				}
				for k, bundle := range b.Bundles {
					if c := cost(bundle); c <= limit(b, k) {
						t.Fatalf("%s lost, but bundle %d costs %d micro-dollars, within its limit %d", b.ID, k, c, limit(b, k))
					}
				}
				continue
			}
			c := cost(b.Bundles[w.BundleIndex])
			at, _ := micros(w.AtPrices)
			if at != c {
				t.Fatalf("%s: at prices %v, but quantity x price is %d micro-dollars", b.ID, w.AtPrices, c)
			}
			pay, _ := micros(w.Payment)
			if !final && pay != c {
				t.Fatalf("%s pays %v, but quantity x price is %d micro-dollars", b.ID, w.Payment, c)
			}
			if pay > limit(b, w.BundleIndex) {
				t.Fatalf("%s pays %d micro-dollars, above its limit %d", b.ID, pay, limit(b, w.BundleIndex))
			}
		}
	})
}

// A bundle that costs exactly its limit at the final prices is bought; ties at a
// limit are decided to the micro-dollar, not by float noise.
func TestBundleAtExactlyItsLimitWins(t *testing.T) {
	for _, tc := range []struct{ q, limit float64 }{{3, 0.3}, {2000, 737.724}, {7, 0.7}, {10, 1.234567 * 10}} {
		t.Run(fmt.Sprint(tc.q, tc.limit), func(t *testing.T) {
			l := tc.limit
			inst := auction.Instance{Pools: []auction.Pool{{ID: "p", Supply: tc.q, ReservePrice: tc.limit / tc.q}},
				Bidders: []auction.Bidder{{ID: "b", Limit: &l, Bundles: []auction.Bundle{{"p": tc.q}}}}}
			res, err := auction.Solve(inst, auction.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Winners) != 1 {
				t.Fatalf("the bidder lost at price %v with limit %v for %v units", res.Prices["p"], l, tc.q)
			}
			if pay, _ := micros(res.Winners[0].Payment); pay > int64(math.Round(l*1e6)) {
				t.Fatalf("pays %v above its limit %v", res.Winners[0].Payment, l)
			}
		})
	}
}

// A trader that swaps one pool for another at any prices keeps demand from ever
// settling; the clock stops at its ceiling (2^50 micro-dollars per unit) instead of
// raising prices off the micro-dollar grid and at last to +Inf, and the result,
// not converged, still encodes.
func TestClockStopsAtItsCeiling(t *testing.T) {
	zero := 0.0
	inst := auction.Instance{
		Pools: []auction.Pool{{ID: "a", ReservePrice: 1}, {ID: "b", ReservePrice: 1}},
		Bidders: []auction.Bidder{{ID: "swap", Limit: &zero,
			Bundles: []auction.Bundle{{"a": 1, "b": -1}, {"a": -1, "b": 1}}}},
		Params: auction.Params{FinalRound: &auction.FinalParams{Off: true}},
	}
	res, err := auction.Solve(inst, auction.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Converged {
		t.Fatalf("converged at %v", res.Prices)
	}
	if res.Rounds >= auction.DefaultParams.MaxRounds {
		t.Errorf("ran all %d rounds; the ceiling should stop it sooner", res.Rounds)
	}
	for id, p := range res.Prices {
		if m, ok := micros(p); !ok || m > 1<<50 {
			t.Errorf("pool %s: price %v is off the micro-dollar grid or above the ceiling", id, p)
		}
	}
	var buf bytes.Buffer
	if err := res.Encode(&buf); err != nil {
		t.Fatalf("encoding the result: %v", err)
	}
}
