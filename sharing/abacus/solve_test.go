package abacus

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse"
)

func twoByTwo(kind Utility) Instance {
	return Instance{Resources: []string{"cpu", "ram"}, Jobs: []Job{
		{ID: "a", Budget: 100, Utility: kind, Weights: []float64{2, 1}},
		{ID: "b", Budget: 100, Utility: kind, Weights: []float64{1, 2}},
	}}
}

// Closed forms of the symmetric two-job instance at alpha 0.5 (see the derivations):
// linear: b_a,cpu / b_a,ram = 2 at the fixed point, so s_a,cpu = sqrt2/(sqrt2+1) = 2-sqrt2;
// log: b_a,cpu / b_a,ram = 2(1-s)/s with t = sqrt of that ratio, t^3 = 2, s = t/(t+1).
func TestSolveMatchesClosedForms(t *testing.T) {
	cbrt2 := math.Cbrt(2)
	for _, c := range []struct {
		kind      Utility
		share     float64
		cpuBudget float64
	}{
		{Linear, 2 - math.Sqrt2, 200.0 / 3},
		{Log, cbrt2 / (cbrt2 + 1), 100 * cbrt2 * cbrt2 / (1 + cbrt2*cbrt2)},
	} {
		opt := DefaultOptions()
		opt.Epsilon = 1e-10
		res := mustSolve(t, twoByTwo(c.kind), opt)
		if res.Outcome != OutcomeConverged {
			t.Fatalf("%v: %v after %d rounds", c.kind, res.Outcome, res.Iterations)
		}
		if !near(res.Shares[0][0], c.share, 1e-9) || !near(res.Shares[1][1], c.share, 1e-9) {
			t.Errorf("%v: shares %v, want a's cpu and b's ram %v", c.kind, res.Shares, c.share)
		}
		if !near(res.SubBudgets[0][0], c.cpuBudget, 1e-8) || !near(res.SubBudgets[0][1], 100-c.cpuBudget, 1e-8) {
			t.Errorf("%v: a's sub-budgets %v, want %v and %v", c.kind, res.SubBudgets[0], c.cpuBudget, 100-c.cpuBudget)
		}
	}
}

// One resource: all of each budget goes to it, s = sqrt(100)/(sqrt(100)+sqrt(25)).
func TestSolveOneResource(t *testing.T) {
	inst := Instance{Resources: []string{"cpu"}, Jobs: []Job{
		{ID: "a", Budget: 100, Weights: []float64{1}},
		{ID: "b", Budget: 25, Utility: Log, Weights: []float64{3}},
	}}
	res := mustSolve(t, inst, DefaultOptions())
	if res.Iterations != 1 || res.Outcome != OutcomeConverged {
		t.Errorf("%d rounds, %v; want 1 round that moves nothing", res.Iterations, res.Outcome)
	}
	if !near(res.Shares[0][0], 2.0/3, 1e-12) || res.SubBudgets[1][0] != 25 {
		t.Errorf("shares %v, sub-budgets %v", res.Shares, res.SubBudgets)
	}
}

func TestSolveEdgeCases(t *testing.T) {
	t.Run("single job", func(t *testing.T) {
		inst := Instance{Resources: []string{"cpu", "ram", "gpu"}, Jobs: []Job{{ID: "a", Budget: 90, Weights: []float64{1, 2, 0}}}}
		res := mustSolve(t, inst, DefaultOptions())
		want := [][]float64{{1, 1, 0}}
		if !equalRows(res.Shares, want) || !equalRows(res.SubBudgets, [][]float64{{45, 45, 0}}) || res.Iterations != 1 {
			t.Errorf("shares %v sub-budgets %v in %d rounds; want %v, an even split, 1 round", res.Shares, res.SubBudgets, res.Iterations, want)
		}
	})
	t.Run("resource only one job uses", func(t *testing.T) {
		inst := Instance{Resources: []string{"cpu", "ram"}, Jobs: []Job{
			{ID: "a", Budget: 100, Weights: []float64{1, 5}},
			{ID: "b", Budget: 25, Weights: []float64{1, 0}},
		}}
		res := mustSolve(t, inst, DefaultOptions())
		if res.Shares[0][1] != 1 || res.SubBudgets[0][1] != 0 || res.SubBudgets[0][0] != 100 {
			t.Errorf("a: shares %v sub-budgets %v; want all of ram for nothing and the budget on cpu", res.Shares[0], res.SubBudgets[0])
		}
		if !near(res.Shares[1][0], 5.0/15, 1e-12) {
			t.Errorf("b's cpu share %v, want 1/3", res.Shares[1][0])
		}
	})
	t.Run("zero budget", func(t *testing.T) {
		inst := Instance{Resources: []string{"cpu", "ram"}, Jobs: []Job{
			{ID: "broke", Budget: 0, Utility: Log, Weights: []float64{1, 1}},
			{ID: "b", Budget: 50, Weights: []float64{1, 0}},
		}}
		res := mustSolve(t, inst, DefaultOptions())
		// cpu: b is the only bidder; ram: only the zero-budget job uses it.
		if !equalRows(res.Shares, [][]float64{{0, 1}, {1, 0}}) || !equalRows(res.SubBudgets, [][]float64{{0, 0}, {50, 0}}) {
			t.Errorf("shares %v sub-budgets %v", res.Shares, res.SubBudgets)
		}
		if u := inst.Jobs[0].Value(res.Shares[0]); !math.IsInf(u, -1) {
			t.Errorf("log utility with a zero share: %v, want -Inf", u)
		}
	})
	t.Run("nobody bids", func(t *testing.T) {
		inst := Instance{Resources: []string{"cpu"}, Jobs: []Job{
			{ID: "a", Weights: []float64{1}}, {ID: "b", Weights: []float64{2}}, {ID: "c", Weights: []float64{3}},
		}}
		res := mustSolve(t, inst, DefaultOptions())
		if !equalRows(res.Shares, [][]float64{{1.0 / 3}, {1.0 / 3}, {1.0 / 3}}) {
			t.Errorf("shares %v, want a third each", res.Shares)
		}
	})
	t.Run("zero weight", func(t *testing.T) {
		res := mustSolve(t, Instance{Resources: []string{"cpu", "ram"}, Jobs: []Job{
			{ID: "a", Budget: 10, Weights: []float64{1, 0}}, {ID: "b", Budget: 10, Weights: []float64{1, 1}},
		}}, DefaultOptions())
		if res.Shares[0][1] != 0 || res.SubBudgets[0][1] != 0 || res.Shares[1][1] != 1 {
			t.Errorf("shares %v sub-budgets %v", res.Shares, res.SubBudgets)
		}
	})
	t.Run("alpha 0", func(t *testing.T) {
		opt := DefaultOptions()
		opt.Alpha = 0
		inst := twoByTwo(Linear)
		inst.Jobs[1].Budget = 1
		res := mustSolve(t, inst, opt)
		if !equalRows(res.Shares, [][]float64{{0.5, 0.5}, {0.5, 0.5}}) || !equalRows(res.SubBudgets, [][]float64{{50, 50}, {0.5, 0.5}}) {
			t.Errorf("shares %v sub-budgets %v; want equal shares, even splits", res.Shares, res.SubBudgets)
		}
	})
	t.Run("no jobs", func(t *testing.T) {
		res := mustSolve(t, Instance{Resources: []string{"cpu"}}, DefaultOptions())
		if len(res.Shares) != 0 || res.Outcome != OutcomeConverged {
			t.Errorf("%+v", res)
		}
	})
}

func equalRows(got, want [][]float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		for r := range got[i] {
			if !near(got[i][r], want[i][r], 1e-12) {
				return false
			}
		}
	}
	return true
}

// Above alpha 0.5 the rounds may not settle: Solve stops at the bound and says so.
func TestSolveStopsAtTheIterationLimit(t *testing.T) {
	inst := Generate(rand.New(rand.NewPCG(1, 1)), 32, 4, Linear)
	opt := DefaultOptions()
	opt.Alpha, opt.MaxIterations = 1, 20
	res := mustSolve(t, inst, opt)
	if res.Outcome != OutcomeIterationLimit || res.Iterations != 20 || !(res.LastMove > opt.Epsilon) {
		t.Fatalf("outcome %v after %d rounds, last move %v; want the limit of 20", res.Outcome, res.Iterations, res.LastMove)
	}
	for r := range inst.Resources {
		sum := 0.0
		for i := range inst.Jobs {
			sum += res.Shares[i][r]
		}
		if !near(sum, 1, 1e-12) {
			t.Errorf("resource %d: shares sum to %v", r, sum)
		}
	}
}

func TestSolveRefusesBadInput(t *testing.T) {
	ok := twoByTwo(Linear)
	for _, c := range []struct {
		name string
		edit func(*Instance, *Options)
		want string
	}{
		{"negative budget", func(i *Instance, _ *Options) { i.Jobs[1].Budget = -1 }, `job "b": budget`},
		{"NaN weight", func(i *Instance, _ *Options) { i.Jobs[0].Weights[1] = math.NaN() }, `job "a": weights["ram"]`},
		{"no positive weight", func(i *Instance, _ *Options) { i.Jobs[0].Weights = []float64{0, 0} }, `job "a": weights: at least one`},
		{"short weights", func(i *Instance, _ *Options) { i.Jobs[0].Weights = []float64{1} }, `job "a": weights: must have one entry per resource`},
		{"duplicate id", func(i *Instance, _ *Options) { i.Jobs[1].ID = "a" }, `job "a": id: listed twice`},
		{"missing id", func(i *Instance, _ *Options) { i.Jobs[1].ID = "" }, `jobs[1]: id: required`},
		{"duplicate resource", func(i *Instance, _ *Options) { i.Resources[1] = "cpu" }, `resources: "cpu" is listed twice`},
		{"no resources", func(i *Instance, _ *Options) { i.Resources = nil }, `resources: at least one`},
		{"unknown utility", func(i *Instance, _ *Options) { i.Jobs[0].Utility = 7 }, `job "a": utility`},
		{"alpha above 1", func(_ *Instance, o *Options) { o.Alpha = 1.5 }, `alpha: must be in [0, 1]`},
		{"negative alpha", func(_ *Instance, o *Options) { o.Alpha = -0.1 }, `alpha: must be in [0, 1]`},
		{"zero epsilon", func(_ *Instance, o *Options) { o.Epsilon = 0 }, `epsilon: must be a positive number`},
		{"epsilon below rounding", func(i *Instance, o *Options) { i.Jobs[0].Budget, o.Epsilon = 1e9, 1e-6 }, `epsilon: must be at least 1e-12`},
		{"no rounds", func(_ *Instance, o *Options) { o.MaxIterations = 0 }, `max_iterations`},
	} {
		t.Run(c.name, func(t *testing.T) {
			inst := Instance{Resources: append([]string(nil), ok.Resources...)}
			for _, j := range ok.Jobs {
				j.Weights = append([]float64(nil), j.Weights...)
				inst.Jobs = append(inst.Jobs, j)
			}
			opt := DefaultOptions()
			c.edit(&inst, &opt)
			_, err := Solve(inst, opt)
			if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(clearhouse.ErrorMessage(err), c.want) {
				t.Errorf("error %v, want EINVALID containing %q", err, c.want)
			}
		})
	}
}

// By default each turn runs Algorithm 2 to the job's own fixed point: the auction
// ends at the same equilibrium (Lemma 2) as one step a turn (OneStep), in fewer
// rounds for linear utilities.
func TestBestResponseReachesTheSameEquilibriumInFewerRounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for range 20 {
		inst := Generate(rng, 32, 4, Linear)
		opt := DefaultOptions()
		opt.OneStep = true
		step, err := Solve(inst, opt)
		if err != nil || step.Outcome != OutcomeConverged {
			t.Fatal(err, step.Outcome)
		}
		best, err := Solve(inst, DefaultOptions())
		if err != nil || best.Outcome != OutcomeConverged {
			t.Fatal(err, best.Outcome)
		}
		if best.Iterations >= step.Iterations {
			t.Fatalf("best response took %d rounds, one step %d", best.Iterations, step.Iterations)
		}
		for i := range inst.Jobs {
			for r := range inst.Resources {
				if d := math.Abs(best.Shares[i][r] - step.Shares[i][r]); d > 1e-5 {
					t.Fatalf("job %d resource %d: shares %v and %v", i, r, best.Shares[i][r], step.Shares[i][r])
				}
			}
		}
	}
}
