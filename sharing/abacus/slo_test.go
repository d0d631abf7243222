package abacus

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func ptr(f float64) *float64 { return &f }

// One resource, linear weight 1, so a job's utility is its share. Greedy by budget:
// a alone meets 0.6; a with b gives a 10/(10+sqrt 80) = 0.528 < 0.6, so b is left
// out; a with c gives a 10/(10+sqrt 20) = 0.691, so c is served. b then has what a and
// c leave, alone.
func TestSolveSLOPicksTheMostProfitableSetThatFits(t *testing.T) {
	inst := Instance{Resources: []string{"cpu"}, Jobs: []Job{
		{ID: "a", Budget: 100, Weights: []float64{1}, MinUtility: ptr(0.6)},
		{ID: "b", Budget: 80, Weights: []float64{1}, MinUtility: ptr(0.5)},
		{ID: "c", Budget: 20, Weights: []float64{1}},
	}}
	out, err := SolveSLO(inst, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Served, []bool{true, false, true}) || !slices.Equal(out.Met, []bool{true, false, false}) || out.Revenue != 120 {
		t.Fatalf("served %v met %v revenue %v; want a and c served, a's SLO met, 120", out.Served, out.Met, out.Revenue)
	}
	if !near(out.First.Shares[0][0], 10/(10+math.Sqrt(20)), 1e-12) || out.First.Shares[1][0] != 0 || out.Rest.Shares[1][0] != 1 {
		t.Errorf("first %v rest %v", out.First.Shares, out.Rest.Shares)
	}
	if !near(out.Utility[1], 1, 1e-12) {
		t.Errorf("b's utility on what is left: %v, want 1 (alone)", out.Utility[1])
	}
}

// Every served job with an SLO meets it at First's shares; revenue is the served
// budgets; First's shares divide every resource its jobs use; with no SLO at all
// every job is served and First is the plain auction.
func TestPropertySolveSLO(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inst := genInstance(t, 1)
		withSLO := rapid.Bool().Draw(t, "slos")
		if withSLO {
			for i := range inst.Jobs {
				if rapid.Bool().Draw(t, "has slo") {
					inst.Jobs[i].MinUtility = ptr(rapid.Float64Range(-5, 5).Draw(t, "min utility"))
				}
			}
		}
		opt := DefaultOptions()
		out, err := SolveSLO(inst, opt)
		if err != nil {
			t.Fatal(err)
		}
		revenue := 0.0
		for i, job := range inst.Jobs {
			if !out.Served[i] {
				if out.Met[i] || slices.ContainsFunc(out.First.Shares[i], func(s float64) bool { return s != 0 }) {
					t.Fatalf("job %d not served but met %v or has first-tier shares %v", i, out.Met[i], out.First.Shares[i])
				}
				continue
			}
			revenue += job.Budget
			if job.MinUtility != nil && (!out.Met[i] || job.Value(out.First.Shares[i]) < *job.MinUtility-1e-9*math.Abs(*job.MinUtility)) {
				t.Fatalf("job %d served with utility %v below its SLO %v", i, job.Value(out.First.Shares[i]), *job.MinUtility)
			}
		}
		if revenue != out.Revenue {
			t.Fatalf("revenue %v, served budgets sum to %v", out.Revenue, revenue)
		}
		if !withSLO {
			plain := mustSolve(t, inst, opt)
			if slices.Contains(out.Served, false) || !equalRows(out.First.Shares, plain.Shares) {
				t.Fatalf("no SLOs: served %v, shares %v, plain auction %v", out.Served, out.First.Shares, plain.Shares)
			}
		}
	})
}
