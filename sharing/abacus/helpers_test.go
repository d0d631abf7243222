package abacus

import (
	"fmt"
	"math"

	"pgregory.net/rapid"
)

// genInstance draws a small instance with every edge case the package names: zero
// budgets, zero weights, resources only one job uses, a single job.
func genInstance(t *rapid.T, minBudget float64) Instance {
	n := rapid.IntRange(1, 7).Draw(t, "jobs")
	m := rapid.IntRange(1, 4).Draw(t, "resources")
	inst := Instance{Resources: make([]string, m)}
	for r := range m {
		inst.Resources[r] = fmt.Sprintf("r%d", r)
	}
	for i := range n {
		w := make([]float64, m)
		for r := range w {
			if rapid.IntRange(0, 4).Draw(t, "unused") > 0 {
				w[r] = rapid.Float64Range(0.1, 10).Draw(t, "weight")
			}
		}
		if !slicesAnyPositive(w) {
			w[rapid.IntRange(0, m-1).Draw(t, "used")] = 1
		}
		budget := 0.0
		if minBudget > 0 || rapid.IntRange(0, 5).Draw(t, "broke") > 0 {
			budget = rapid.Float64Range(math.Max(minBudget, 1), 1000).Draw(t, "budget")
		}
		kind := Linear
		if rapid.Bool().Draw(t, "log") {
			kind = Log
		}
		inst.Jobs = append(inst.Jobs, Job{ID: fmt.Sprintf("j%d", i), Budget: budget, Utility: kind, Weights: w})
	}
	return inst
}

func slicesAnyPositive(w []float64) bool {
	for _, v := range w {
		if v > 0 {
			return true
		}
	}
	return false
}

// fataler is what mustSolve needs of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func mustSolve(t fataler, inst Instance, opt Options) Result {
	t.Helper()
	res, err := Solve(inst, opt)
	if err != nil {
		t.Fatalf("Solve: %v", err)
	}
	return res
}

// sharesAgainst returns job i's shares when it splits its budget as subs while every
// other job keeps its sub-budgets of res: s = b^alpha / (b^alpha + others), with the
// package's rule that a job alone among bidders gets the whole resource.
func sharesAgainst(inst Instance, res Result, i int, subs []float64, alpha float64) []float64 {
	st := &state{alpha: alpha}
	out := make([]float64, len(inst.Resources))
	for r := range inst.Resources {
		if !inst.Jobs[i].Uses(r) {
			continue
		}
		others, bidders := 0.0, 0
		for l, job := range inst.Jobs {
			if l != i && job.Uses(r) && job.Budget > 0 {
				others += st.pow(res.SubBudgets[l][r])
				bidders++
			}
		}
		mine := st.pow(subs[r])
		switch {
		case bidders == 0:
			out[r] = 1
		case mine+others == 0:
			out[r] = 0
		default:
			out[r] = mine / (mine + others)
		}
	}
	return out
}

// bestResponse runs Algorithm 2 for job i alone, with the given (possibly misreported)
// budget and weights, against the other jobs' sub-budgets of res, until its split
// moves by less than 1e-12 of the budget; it returns the split.
func bestResponse(inst Instance, res Result, i int, budget float64, weights []float64, alpha float64) []float64 {
	lie := Instance{Resources: inst.Resources, Jobs: append([]Job(nil), inst.Jobs...)}
	lie.Jobs[i].Budget, lie.Jobs[i].Weights = budget, weights
	st := newState(lie, alpha)
	for l := range lie.Jobs {
		if l == i {
			continue
		}
		bids := st.bids(l)
		for k := range bids {
			bids[k].b = res.SubBudgets[l][bids[k].res]
			bids[k].p = st.pow(bids[k].b)
		}
	}
	st.resum()
	for range 100_000 {
		if st.resplit(i) <= 1e-12*math.Max(budget, 1) {
			break
		}
	}
	subs := make([]float64, len(inst.Resources))
	for _, bid := range st.bids(i) {
		subs[bid.res] = bid.b
	}
	return subs
}

// close reports whether a and b agree to within tol, absolutely or relatively.
func near(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}
