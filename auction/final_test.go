package auction_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
	"pgregory.net/rapid"
)

// bruteForce is the greatest welfare of any feasible allocation of inst, found by
// trying every bundle (or none) for every bidder.
func bruteForce(inst auction.Instance) float64 {
	reserve := map[string]float64{}
	supply := map[string]float64{}
	for _, p := range inst.Pools {
		reserve[p.ID], supply[p.ID] = p.ReservePrice, p.Supply
	}
	best := 0.0
	net := map[string]float64{}
	var walk func(i int, w float64)
	walk = func(i int, w float64) {
		if i == len(inst.Bidders) {
			for id, q := range net {
				if q > supply[id] {
					return
				}
			}
			best = max(best, w)
			return
		}
		walk(i+1, w)
		b := inst.Bidders[i]
		for k, bundle := range b.Bundles {
			v := b.LimitOf(k)
			for id, q := range bundle {
				net[id] += q
				v -= q * reserve[id]
			}
			walk(i+1, w+v)
			for id, q := range bundle {
				net[id] -= q
			}
		}
	}
	walk(0, 0)
	return best
}

// The final round's allocation is feasible and its payments keep the invariants
// (Check), it is worth at least the clock's (whose welfare it reports), it is the
// exact optimum found by brute force and says so, and two runs agree.
func TestFinalRoundProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inst := genInstance(t)
		res, err := auction.Solve(inst, auction.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Converged {
			if res.FinalRound != nil {
				t.Fatal("a final round ran after a clock that did not converge")
			}
			return
		}
		f := res.FinalRound
		if f == nil {
			t.Fatal("no final round by default")
		}
		if err := auction.Check(inst, res); err != nil {
			t.Fatal(err)
		}
		off := inst
		off.Params.FinalRound = &auction.FinalParams{Off: true}
		clock, _ := auction.Solve(off, auction.Options{})
		if clock.FinalRound != nil {
			t.Fatal("final_round.off still ran the final round")
		}
		if cw := auction.Welfare(inst, clock); math.Abs(cw-f.ClockWelfare) > 1e-6*max(1, math.Abs(cw)) {
			t.Fatalf("clock_welfare %v, but the clock alone reaches %v", f.ClockWelfare, cw)
		}
		w := auction.Welfare(inst, res)
		if w < f.ClockWelfare-1e-6*max(1, math.Abs(w)) {
			t.Fatalf("final welfare %v below the clock's %v", w, f.ClockWelfare)
		}
		opt := bruteForce(inst)
		if math.Abs(w-opt) > 1e-6*max(1, opt) {
			t.Fatalf("final welfare %v, optimum %v", w, opt)
		}
		if !f.Optimal || math.Abs(f.Bound-w) > 1e-6*max(1, opt) {
			t.Fatalf("optimum not proved: optimal=%v bound=%v welfare=%v", f.Optimal, f.Bound, w)
		}
		again, _ := auction.Solve(inst, auction.Options{})
		if len(again.Winners) != len(res.Winners) {
			t.Fatal("two runs of one instance differ")
		}
		for i := range res.Winners {
			// The core step's separations run on every processor, and the order the
			// workers find blocking coalitions in can change a core payment's last
			// bits (seen: -25.199999999999996 and -25.200000000000003), never its
			// micro-dollars; everything else is the same to the bit.
			a, b := res.Winners[i], again.Winners[i]
			if math.Abs(a.Payment-b.Payment) > 1e-9*max(1, math.Abs(a.Payment)) {
				t.Fatalf("two runs' payments differ: %+v and %+v", a, b)
			}
			b.Payment = a.Payment
			if a != b {
				t.Fatalf("two runs differ: %+v and %+v", res.Winners[i], again.Winners[i])
			}
		}
	})
}

// Under the capped-price rule (Options.CappedPayments), where the final round keeps
// the clock's allocation and the clock's prices cover the operator's reserve, every
// payment is the bundle at the prices.
func TestCappedPaymentsKeepUniformPricesWhenTheClockIsOptimal(t *testing.T) {
	one := func(x float64) *float64 { return &x }
	inst := auction.Instance{
		Pools: []auction.Pool{{ID: "a", Supply: 2, ReservePrice: 1}, {ID: "b", Supply: 1, ReservePrice: 1}},
		Bidders: []auction.Bidder{
			{ID: "x", Limit: one(10), Bundles: []auction.Bundle{{"a": 1}}},
			{ID: "y", Limit: one(8), Bundles: []auction.Bundle{{"a": 1, "b": 1}}},
			{ID: "z", Limit: one(1.5), Bundles: []auction.Bundle{{"a": 1}}},
		},
	}
	res, err := auction.Solve(inst, auction.Options{CappedPayments: true})
	if err != nil || res.FinalRound == nil {
		t.Fatal(err, res.FinalRound)
	}
	if res.FinalRound.Payments != auction.PaymentsCappedPrices {
		t.Fatalf("payments %q, want %q", res.FinalRound.Payments, auction.PaymentsCappedPrices)
	}
	if !res.FinalRound.Optimal || res.FinalRound.Welfare != res.FinalRound.ClockWelfare {
		t.Fatalf("final round %+v", res.FinalRound)
	}
	for _, w := range res.Winners {
		if w.Payment != w.AtPrices {
			t.Errorf("%s pays %v, its bundle at prices is %v", w.ID, w.Payment, w.AtPrices)
		}
	}
}

// A market where the clock strands supply: two small buyers each want one unit of
// a and b respectively, and a big buyer wants both; the final round gives both
// units to the one that values them most, and its payment is capped at its limit.
func TestFinalRoundBeatsTheClockOnComplements(t *testing.T) {
	one := func(x float64) *float64 { return &x }
	inst := auction.Instance{
		Pools: []auction.Pool{{ID: "a", Supply: 1, ReservePrice: 1}, {ID: "b", Supply: 1, ReservePrice: 1}},
		Bidders: []auction.Bidder{
			{ID: "small-a", Limit: one(6), Bundles: []auction.Bundle{{"a": 1}}},
			{ID: "small-b", Limit: one(6), Bundles: []auction.Bundle{{"b": 1}}},
			{ID: "both", Limit: one(10), Bundles: []auction.Bundle{{"a": 1, "b": 1}}},
			{ID: "late-a", Limit: one(5), Bundles: []auction.Bundle{{"a": 1}}},
		},
	}
	// The clock: a's price rises past 5 (late-a drops), b's stays at 1, so "both"
	// pays about 7 and the small ones... whichever way it ends, the optimum is
	// small-a + small-b (12 - 2 = 10) against both (10 - 2 = 8).
	res, err := auction.Solve(inst, auction.Options{})
	if err != nil || !res.Converged {
		t.Fatal(err)
	}
	if err := auction.Check(inst, res); err != nil {
		t.Fatal(err)
	}
	if got := auction.Welfare(inst, res); math.Abs(got-10) > 1e-9 {
		t.Fatalf("welfare %v, want 10 (small-a and small-b); winners %+v", got, res.Winners)
	}
}

// zeroSeconds clears the timings of results, the only fields that differ between
// two runs of one instance.
func zeroSeconds(rs ...*auction.Result) {
	for _, r := range rs {
		r.Seconds = 0
		if r.FinalRound != nil {
			r.FinalRound.Seconds, r.FinalRound.PaymentSeconds = 0, 0
		}
	}
}

// forgetSearchOrder makes b's figures that depend on the order the core step's
// parallel separations find blocking coalitions in equal to a's: how many
// coalitions were found, and each core payment's last bits (within a billionth,
// far below a micro-dollar; a payment further apart stays different).
func forgetSearchOrder(a, b *auction.Result) {
	if a.FinalRound != nil && b.FinalRound != nil {
		b.FinalRound.Coalitions = a.FinalRound.Coalitions
	}
	if len(a.Winners) != len(b.Winners) {
		return
	}
	for i := range b.Winners {
		if p, q := a.Winners[i].Payment, b.Winners[i].Payment; math.Abs(p-q) <= 1e-9*max(1, math.Abs(p)) {
			b.Winners[i].Payment = p
		}
	}
}

// A seller whose sale is worth less than its reserve value on its own (negative
// welfare) can still be in the optimum, because its sale lets a buyer's bundle
// fit: here b0 sells the one unit of p1 that b1's bundle needs beyond supply.
// Greedy rounding never adds a column of negative welfare, so the optimum is only
// found by taking the LP's integral solution as it is (found by TestFinalRoundProperties).
func TestFinalRoundTakesASellerWhoseSaleLetsABuyerFit(t *testing.T) {
	var inst auction.Instance
	if err := json.Unmarshal([]byte(`{"pools":[{"id":"p0","supply":20,"reserve_price":0.3},
		{"id":"p1","supply":2,"reserve_price":4},{"id":"p2","supply":17,"reserve_price":0},
		{"id":"p3","supply":12,"reserve_price":0.3},{"id":"p4","supply":10,"reserve_price":3.2}],
		"bidders":[{"id":"b0","limit":-72,"bundles":[{"p1":-1,"p3":3,"p4":7}]},
		{"id":"b1","limits":[-4,-54,193],"bundles":[{"p0":-2,"p2":-3,"p4":3},{"p0":6,"p2":3,"p4":2},{"p0":1,"p1":3,"p4":2}]}]}`), &inst); err != nil {
		t.Fatal(err)
	}
	res, err := auction.Solve(inst, auction.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// b0: -72 - (-4 + 0.9 + 22.4) = -91.3; b1's third bundle: 193 - (0.3 + 12 + 6.4) = 174.3.
	if w := auction.Welfare(inst, res); math.Abs(w-83) > 1e-6 || !res.FinalRound.Optimal {
		t.Fatalf("welfare %v (optimal %v), want 83 proved optimal", w, res.FinalRound.Optimal)
	}
	if err := auction.Check(inst, res); err != nil {
		t.Fatal(err)
	}
}
