package auction

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// dayCramton is Day and Cramton's (2012) market (TestCorePaymentsDayCramtonExample):
// winners b1 and b2, VCG payments 14 and 12, blocked by b3's 32; the least-revenue
// core is p1 + p2 = 32 with 14 <= p1 <= 28 and 12 <= p2 <= 20, and its point
// nearest VCG is 17 and 15.
const dayCramton = `{"pools":[{"id":"A","supply":1,"reserve_price":0},{"id":"B","supply":1,"reserve_price":0}],
	"bidders":[{"id":"b1","limit":28,"bundles":[{"A":1}]},{"id":"b2","limit":20,"bundles":[{"B":1}]},
	{"id":"b3","limit":32,"bundles":[{"A":1,"B":1}]},{"id":"b4","limit":14,"bundles":[{"A":1}]},
	{"id":"b5","limit":12,"bundles":[{"B":1}]}]}`

// solveCore solves doc with opt and checks the result, its payments core, and
// least_revenue_parts in the JSON exactly when the count is not 0.
func solveCore(t *testing.T, doc string, opt Options) Result {
	t.Helper()
	inst, err := DecodeInstance(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Solve(inst, opt)
	if err != nil || !res.Converged {
		t.Fatal(err, res.Converged)
	}
	if err := Check(inst, res); err != nil {
		t.Fatal(err)
	}
	f := res.FinalRound
	if f.Payments != PaymentsCore || f.CoreParts != 1 {
		t.Fatalf("payments %q in %d core parts, want core in 1", f.Payments, f.CoreParts)
	}
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), `"least_revenue_parts"`) != (f.LeastRevenueParts != 0) {
		t.Errorf("final_round %s, with least_revenue_parts %d", out, f.LeastRevenueParts)
	}
	return res
}

// A part whose nearest-VCG step fails (forced here with noNearest; nnls cycles on
// some degenerate systems) pays the LP's least-revenue core point and is counted in
// final_round.least_revenue_parts: on Day and Cramton's market the payments still
// total the least revenue, 32, each at least its VCG payment, but at a vertex of
// that segment (the simplex's), not its midpoint 17 and 15. The same market paid
// normally counts 0, and so does a market where VCG is in the core (no coalition
// blocks, so the step never runs) even with the step failing.
func TestCorePaymentsLeastRevenueFallbackIsCounted(t *testing.T) {
	res := solveCore(t, dayCramton, Options{})
	if n := res.FinalRound.LeastRevenueParts; n != 0 {
		t.Errorf("least_revenue_parts %d on the nearest-VCG point, want 0", n)
	}
	pay := map[string]float64{}
	for _, w := range res.Winners {
		pay[w.ID] = w.Payment
	}
	if math.Abs(pay["b1"]-17) > 1e-9 || math.Abs(pay["b2"]-15) > 1e-9 {
		t.Fatalf("payments %v, want b1 17 and b2 15", pay)
	}

	res = solveCore(t, dayCramton, Options{noNearest: true})
	if n := res.FinalRound.LeastRevenueParts; n != 1 {
		t.Errorf("least_revenue_parts %d with the nearest-VCG step failing, want 1", n)
	}
	if res.FinalRound.Coalitions != 1 {
		t.Errorf("%d blocking coalitions, want 1 (b3's)", res.FinalRound.Coalitions)
	}
	vcg := map[string]float64{"b1": 14, "b2": 12}
	total := 0.0
	for _, w := range res.Winners {
		v, ok := vcg[w.ID]
		if !ok || !w.Core || math.Abs(w.VCG-v) > 1e-9 || w.Payment < v-1e-9 {
			t.Errorf("winner %+v, want b1 or b2 paying at least its VCG payment %v", w, v)
		}
		total += w.Payment
	}
	if math.Abs(total-32) > 1e-6 {
		t.Errorf("payments total %v, want the least core revenue 32", total)
	}
	if math.Abs(res.Winners[0].Payment-17) < 1e-6 {
		t.Errorf("payments %+v: the nearest-VCG point, so the fallback did not run", res.Winners)
	}

	// b1 wins A for 10 against b2's 8: VCG (8) is in the core, nothing blocks.
	res = solveCore(t, `{"pools":[{"id":"A","supply":1,"reserve_price":0}],
	"bidders":[{"id":"b1","limit":10,"bundles":[{"A":1}]},{"id":"b2","limit":8,"bundles":[{"A":1}]}]}`, Options{noNearest: true})
	if f := res.FinalRound; f.LeastRevenueParts != 0 || f.Coalitions != 0 {
		t.Errorf("least_revenue_parts %d after %d coalitions where VCG is in the core, want 0 after 0", f.LeastRevenueParts, f.Coalitions)
	}
}

// The winners of a part that paid the least-revenue point are marked
// (winners[].least_revenue), and only they: on a market of two independent parts,
// Day and Cramton's (pools A and B, where b3 blocks VCG) and one where VCG is in
// the core (pool C), with the nearest-VCG step failing, the first part falls back
// and the second does not. The count and the marks agree: least_revenue_parts is
// the number of parts with a marked winner (each part's winners named by pool
// here), and every marked winner pays a core payment. Check refuses a mark
// without core, and marks in a result that counts no least-revenue part.
func TestLeastRevenueWinnersAreMarked(t *testing.T) {
	twoParts := `{"pools":[{"id":"A","supply":1,"reserve_price":0},{"id":"B","supply":1,"reserve_price":0},{"id":"C","supply":1,"reserve_price":0}],
	"bidders":[{"id":"b1","limit":28,"bundles":[{"A":1}]},{"id":"b2","limit":20,"bundles":[{"B":1}]},
	{"id":"b3","limit":32,"bundles":[{"A":1,"B":1}]},{"id":"b4","limit":14,"bundles":[{"A":1}]},
	{"id":"b5","limit":12,"bundles":[{"B":1}]},
	{"id":"c1","limit":10,"bundles":[{"C":1}]},{"id":"c2","limit":8,"bundles":[{"C":1}]}]}`
	part := map[string]string{"b1": "AB", "b2": "AB", "c1": "C"}
	for _, c := range []struct {
		opt    Options
		marked []string
	}{{Options{}, nil}, {Options{noNearest: true}, []string{"b1", "b2"}}} {
		inst, err := DecodeInstance(strings.NewReader(twoParts))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Solve(inst, c.opt)
		if err != nil || !res.Converged {
			t.Fatal(err, res.Converged)
		}
		if err := Check(inst, res); err != nil {
			t.Fatal(err)
		}
		f := res.FinalRound
		if f.Parts != 2 || f.CoreParts != 2 {
			t.Fatalf("%d parts, %d core, want 2 and 2", f.Parts, f.CoreParts)
		}
		var marked []string
		parts := map[string]bool{}
		for _, w := range res.Winners {
			if _, ok := part[w.ID]; !ok || !w.Core {
				t.Fatalf("winner %+v, want b1, b2 or c1 paying core", w)
			}
			if w.LeastRevenue {
				marked = append(marked, w.ID)
				parts[part[w.ID]] = true
			}
		}
		slices.Sort(marked)
		if !slices.Equal(marked, c.marked) || f.LeastRevenueParts != len(parts) {
			t.Errorf("noNearest %v: marked %v in %d parts, least_revenue_parts %d; want %v", c.opt.noNearest, marked, len(parts), f.LeastRevenueParts, c.marked)
		}
		out, err := json.Marshal(res.Winners)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(out), `"least_revenue":true`); n != len(c.marked) || strings.Contains(string(out), `"least_revenue":false`) {
			t.Errorf("winners %s: %d marked, want %d and no false", out, n, len(c.marked))
		}
	}

	inst, err := DecodeInstance(strings.NewReader(twoParts))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Solve(inst, Options{noNearest: true})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Winners, func(w Winner) bool { return w.LeastRevenue })
	if i < 0 {
		t.Fatalf("no winner marked: %+v", res.Winners)
	}
	res.Winners[i].Core = false
	if err := Check(inst, res); err == nil || !strings.Contains(err.Error(), "least_revenue without core") {
		t.Errorf("Check of a least_revenue winner without core: %v", err)
	}
	res.Winners[i].Core = true
	res.FinalRound.LeastRevenueParts = 0
	if err := Check(inst, res); err == nil || !strings.Contains(err.Error(), "least_revenue_parts is 0") {
		t.Errorf("Check of marks with least_revenue_parts 0: %v", err)
	}
}
