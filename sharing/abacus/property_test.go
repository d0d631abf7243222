package abacus

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// Shares of every resource some job uses sum to 1, every share is in [0, 1], every
// job's sub-budgets are non-negative and sum to its budget, and a resource no job uses
// has no shares: for every alpha in [0, 1], converged or not.
func TestPropertySharesDivideEveryResource(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inst := genInstance(t, 0)
		opt := DefaultOptions()
		opt.Alpha = rapid.Float64Range(0, 1).Draw(t, "alpha")
		opt.MaxIterations = 200
		res := mustSolve(t, inst, opt)
		for r := range inst.Resources {
			sum, users := 0.0, 0
			for i, job := range inst.Jobs {
				s := res.Shares[i][r]
				if s < 0 || s > 1 || !job.Uses(r) && (s != 0 || res.SubBudgets[i][r] != 0) {
					t.Fatalf("job %d resource %d: share %v sub-budget %v", i, r, s, res.SubBudgets[i][r])
				}
				sum += s
				if job.Uses(r) {
					users++
				}
			}
			if users > 0 && !near(sum, 1, 1e-12) || users == 0 && sum != 0 {
				t.Fatalf("resource %d (%d users): shares sum to %v", r, users, sum)
			}
		}
		for i, job := range inst.Jobs {
			sum := 0.0
			for _, b := range res.SubBudgets[i] {
				if b < 0 {
					t.Fatalf("job %d: negative sub-budget %v", i, b)
				}
				sum += b
			}
			if !near(sum, job.Budget, 1e-12) {
				t.Fatalf("job %d: sub-budgets sum to %v, budget %v", i, sum, job.Budget)
			}
		}
	})
}

// For alpha <= 0.5 Algorithm 1 converges within 200 rounds (a fifth of the default
// bound) on instances of up to 7 jobs and 4 resources, budgets from 0 to 1,000
// dollars, weights from 0.1 to 10, epsilon 1e-4; 20,000 draws needed at most 30.
func TestPropertyConvergesUpToAlphaHalf(t *testing.T) {
	worst := 0
	rapid.Check(t, func(t *rapid.T) {
		inst := genInstance(t, 0)
		opt := DefaultOptions()
		opt.Alpha = rapid.Float64Range(0, 0.5).Draw(t, "alpha")
		opt.MaxIterations = 200
		res := mustSolve(t, inst, opt)
		if res.Outcome != OutcomeConverged {
			t.Fatalf("alpha %v: %v after %d rounds (last move %v)", opt.Alpha, res.Outcome, res.Iterations, res.LastMove)
		}
		worst = max(worst, res.Iterations)
	})
	t.Logf("most rounds needed: %d", worst)
}

// Lemma 2: at convergence every job's sub-budgets are Algorithm 2's fixed point: one
// more application moves none of them by more than epsilon.
func TestPropertyConvergedSplitIsAlgorithm2sFixedPoint(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inst := genInstance(t, 0)
		opt := DefaultOptions()
		opt.Alpha = rapid.Float64Range(0.01, 0.5).Draw(t, "alpha")
		opt.Epsilon = rapid.SampledFrom([]float64{1e-2, 1e-4, 1e-6}).Draw(t, "epsilon")
		res := mustSolve(t, inst, opt)
		if res.Outcome != OutcomeConverged {
			t.Fatalf("not converged")
		}
		for i := range inst.Jobs {
			for r, want := range fixedPoint(inst, res, i, opt.Alpha) {
				if d := math.Abs(res.SubBudgets[i][r] - want); d > opt.Epsilon {
					t.Fatalf("job %d resource %d: sub-budget %v, Algorithm 2 gives %v (off by %v > epsilon %v)", i, r, res.SubBudgets[i][r], want, d, opt.Epsilon)
				}
			}
		}
	})
}

// fixedPoint applies Algorithm 2 once to job i at res, from the formula: b_i g_ij /
// sum g with g = f'(s) s (1 - s) on contested resources; the split unchanged when
// every g is 0.
func fixedPoint(inst Instance, res Result, i int, alpha float64) []float64 {
	job := inst.Jobs[i]
	g, total := make([]float64, len(inst.Resources)), 0.0
	for r := range inst.Resources {
		s := res.Shares[i][r]
		if !job.Uses(r) || s <= 0 || s >= 1 {
			continue
		}
		d := job.Weights[r]
		if job.Utility == Log {
			d /= s
		}
		g[r] = alpha * d * s * (1 - s)
		total += g[r]
	}
	if total == 0 {
		return res.SubBudgets[i]
	}
	for r := range g {
		g[r] *= job.Budget / total
	}
	return g
}

// Lemma 3: against the others' sub-budgets at the outcome, no split of a job's budget
// chosen by hand gives it more utility than the mechanism's split.
func TestPropertyNoHandSplitBeatsTheMechanism(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inst := genInstance(t, 1)
		opt := DefaultOptions()
		opt.Alpha = rapid.Float64Range(0.05, 0.5).Draw(t, "alpha")
		opt.Epsilon = 1e-8
		res := mustSolve(t, inst, opt)
		i := rapid.IntRange(0, len(inst.Jobs)-1).Draw(t, "job")
		job := inst.Jobs[i]
		mine := job.Value(sharesAgainst(inst, res, i, res.SubBudgets[i], opt.Alpha))
		hand := make([]float64, len(inst.Resources))
		sum := 0.0
		for r := range hand {
			if job.Uses(r) {
				hand[r] = rapid.Float64Range(0, 1).Draw(t, "part")
				sum += hand[r]
			}
		}
		if sum == 0 {
			return
		}
		for r := range hand {
			hand[r] *= job.Budget / sum
		}
		theirs := job.Value(sharesAgainst(inst, res, i, hand, opt.Alpha))
		if theirs > mine+1e-7*math.Max(1, math.Abs(mine)) {
			t.Fatalf("job %d: hand split %v gives %v, the mechanism's %v gives %v", i, hand, theirs, res.SubBudgets[i], mine)
		}
	})
}

// Theorem 2, in the form that holds exactly: with one job per user and the other
// jobs' sub-budgets at the truthful outcome, the split the mechanism computes for a
// misreport (other weights, a lower budget) gives the job no more true utility than
// the split it computes for the truth. (When the others re-converge after the
// misreport, a job can gain a little by misreporting its weights: see
// TestWeightMisreportCanGainWhenOthersReact.)
func TestPropertyMisreportingNeverPaysAgainstTheOthersBids(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inst := genInstance(t, 1)
		opt := DefaultOptions()
		opt.Alpha = rapid.Float64Range(0.05, 0.5).Draw(t, "alpha")
		opt.Epsilon = 1e-8
		res := mustSolve(t, inst, opt)
		i := rapid.IntRange(0, len(inst.Jobs)-1).Draw(t, "job")
		job := inst.Jobs[i]
		truth := job.Value(sharesAgainst(inst, res, i, bestResponse(inst, res, i, job.Budget, job.Weights, opt.Alpha), opt.Alpha))
		weights := make([]float64, len(job.Weights))
		for r := range weights {
			if job.Uses(r) {
				weights[r] = rapid.Float64Range(0.01, 100).Draw(t, "reported weight")
			}
		}
		budget := job.Budget * rapid.Float64Range(0, 1).Draw(t, "reported budget share")
		lie := job.Value(sharesAgainst(inst, res, i, bestResponse(inst, res, i, budget, weights, opt.Alpha), opt.Alpha))
		if lie > truth+1e-7*math.Max(1, math.Abs(truth)) {
			t.Fatalf("job %d: reporting budget %v and weights %v gives %v, the truth %v", i, budget, weights, lie, truth)
		}
	})
}

// Lemma 4 (monotone in budget), after the others re-converge: raising a job's budget
// never lowers its utility, so no job gains by reporting a lower budget either.
func TestPropertyMoreBudgetNeverHurts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inst := genInstance(t, 1)
		opt := DefaultOptions()
		opt.Alpha = rapid.Float64Range(0.05, 0.5).Draw(t, "alpha")
		opt.Epsilon = 1e-8
		i := rapid.IntRange(0, len(inst.Jobs)-1).Draw(t, "job")
		before := inst.Jobs[i].Value(mustSolve(t, inst, opt).Shares[i])
		richer := Instance{Resources: inst.Resources, Jobs: append([]Job(nil), inst.Jobs...)}
		richer.Jobs[i].Budget *= rapid.Float64Range(1, 10).Draw(t, "raise")
		after := inst.Jobs[i].Value(mustSolve(t, richer, opt).Shares[i])
		if after < before-1e-7*math.Max(1, math.Abs(before)) {
			t.Fatalf("job %d: budget %v -> %v lowered its utility %v -> %v", i, inst.Jobs[i].Budget, richer.Jobs[i].Budget, before, after)
		}
	})
}

// What Theorem 2 does not give: when every other job re-converges after a misreport,
// a job can gain a little by reporting other weights (it moves the equilibrium in its
// favour). On this two-job instance, found by a random search, the gain is 0.08%; over
// 4,000 such searches it stayed under 0.4% with 2 to 4 jobs and under 0.01% with 32.
func TestWeightMisreportCanGainWhenOthersReact(t *testing.T) {
	inst := Instance{Resources: []string{"r1", "r2"}, Jobs: []Job{
		{ID: "u1", Budget: 56.05869990565389, Weights: []float64{0.986797115004117, 1.8494099194602662}},
		{ID: "u2", Budget: 136.53584292408107, Weights: []float64{1.4653441845665656, 0.8956068038891322}},
	}}
	opt := DefaultOptions()
	opt.Epsilon = 1e-9
	truth := inst.Jobs[0].Value(mustSolve(t, inst, opt).Shares[0])
	lie := Instance{Resources: inst.Resources, Jobs: append([]Job(nil), inst.Jobs...)}
	lie.Jobs[0].Weights = []float64{0.479632978907995, 0.7856099189774407}
	gain := inst.Jobs[0].Value(mustSolve(t, lie, opt).Shares[0])/truth - 1
	if !(gain > 1e-4 && gain < 1e-2) {
		t.Fatalf("relative gain %v, want between 1e-4 and 1e-2", gain)
	}
}
