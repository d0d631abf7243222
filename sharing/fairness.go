package sharing

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/clearhouse/clearhouse"
)

// Experiment is one sample of CloudShare's evaluation: organizations, their jobs, the
// policies to compare, and the simulator's settings (see SimConfig).
type Experiment struct {
	Orgs       []Org
	Jobs       []SimJob
	Policies   []Policy
	MinRuntime float64
	Exposure   float64
	Horizon    float64
	Seed       uint64
	// ExactUpTo: exact Shapley values for at most this many organizations (0: 12),
	// a sampled estimate beyond.
	ExactUpTo int
	// Permutations: how many the sampled estimate averages over (0: 200).
	Permutations int
	// Workers: simulations run at once (0: GOMAXPROCS). Results do not depend on it.
	Workers int
	// SharedValues measures every policy against one set of Shapley values, from the
	// coalition values v(C) = the smallest total wait any policy gives C. False (the
	// default) is CloudShare's method (section 5.1): "for each tested algorithm we
	// run 2^N - 1 simulations", the sum of each simulation's waits is that
	// algorithm's v(C), and each algorithm is measured against its own Shapley values.
	SharedValues bool
}

// Evaluation is what Evaluate finds for one sample.
type Evaluation struct {
	// CoalitionValue is v(all organizations): the grand coalition's total wait.
	CoalitionValue float64
	// Shapley is each organization's Shapley value of the wait game: its fair share
	// of the grand coalition's total wait, in task-hours (negative for an
	// organization whose processors save the others more wait than its tasks add).
	Shapley []float64
	// Wait is each policy's wait per organization in the grand coalition ([policy][org]).
	Wait [][]float64
	// PolicyCoalitionValue and PolicyShapley are, per policy, the grand coalition's
	// total wait and the Shapley values of the game whose v(C) is that policy's own
	// total wait on coalition C (CloudShare's method).
	PolicyCoalitionValue []float64
	PolicyShapley        [][]float64
	// Unfairness is each policy's distance between its waits and its reference:
	// PolicyShapley[p] by default, Shapley when the experiment's SharedValues is set.
	Unfairness []float64
	Exact      bool // Shapley values computed exactly (else sampled)
	Coalitions int  // coalitions simulated
}

// Evaluate simulates every policy on every coalition (exact: all 2^n - 1; sampled: the
// prefixes of the seeded permutations) and computes the Shapley values of the wait
// game for each policy, whose value v_p(C) is the total wait policy p gives coalition C
// on its own processors (CloudShare section 5.1), and of the shared game whose v(C)
// is the smallest total wait any policy gives C (with unit-size tasks and no
// preemption every work-conserving policy gives the same total, so the two agree
// but for background load); and each policy's unfairness: the Euclidean distance
// sqrt(sum over organizations (wait - Shapley)^2), in task-hours, against its own
// Shapley values (or the shared ones, Experiment.SharedValues). The same experiment
// gives the same evaluation, whatever the number of workers. EINVALID for no
// organization, more than 64, no policy, or a simulation Simulate refuses.
func Evaluate(e Experiment) (Evaluation, error) {
	n := len(e.Orgs)
	if n < 1 || n > 64 {
		return Evaluation{}, clearhouse.Errorf(clearhouse.EINVALID, "orgs: between 1 and 64")
	}
	if len(e.Policies) == 0 {
		return Evaluation{}, clearhouse.Errorf(clearhouse.EINVALID, "policies: at least one")
	}
	exactUpTo, perms := e.ExactUpTo, e.Permutations
	if exactUpTo == 0 {
		exactUpTo = 12
	}
	if perms == 0 {
		perms = 200
	}
	all := Coalition(1)<<n - 1
	if n == 64 {
		all = ^Coalition(0)
	}
	var coalitions []Coalition
	var order [][]int
	exact := n <= min(exactUpTo, MaxExactPlayers)
	if exact {
		for c := Coalition(1); c <= all && c != 0; c++ {
			coalitions = append(coalitions, c)
		}
	} else {
		order = Permutations(n, perms, rand.New(rand.NewPCG(e.Seed, e.Seed^0x5ba91e)))
		coalitions = PrefixCoalitions(order)
	}
	results, err := e.simulateAll(coalitions)
	if err != nil {
		return Evaluation{}, err
	}
	np := len(e.Policies)
	value := map[Coalition]float64{}
	own := make([]map[Coalition]float64, np)
	for p := range own {
		own[p] = map[Coalition]float64{}
	}
	var grand []SimResult
	for i, c := range coalitions {
		v := math.Inf(1)
		for p, r := range results[i] {
			v = min(v, r.TotalWait())
			own[p][c] = r.TotalWait()
		}
		value[c] = v
		if c == all {
			grand = results[i]
		}
	}
	shapley := func(value map[Coalition]float64) ([]float64, error) {
		if exact {
			values := make([]float64, 1<<n)
			for c, v := range value {
				values[c] = v
			}
			return ShapleyExact(n, values)
		}
		return ShapleySampled(n, order, func(c Coalition) float64 { return value[c] })
	}
	ev := Evaluation{CoalitionValue: value[all], Exact: exact, Coalitions: len(coalitions)}
	if ev.Shapley, err = shapley(value); err != nil {
		return Evaluation{}, err
	}
	for p, r := range grand {
		s, err := shapley(own[p])
		if err != nil {
			return Evaluation{}, err
		}
		ev.PolicyCoalitionValue = append(ev.PolicyCoalitionValue, own[p][all])
		ev.PolicyShapley = append(ev.PolicyShapley, s)
		ev.Wait = append(ev.Wait, r.Wait)
		ref := s
		if e.SharedValues {
			ref = ev.Shapley
		}
		ev.Unfairness = append(ev.Unfairness, Unfairness(r.Wait, ref))
	}
	return ev, nil
}

// Unfairness is the Euclidean distance between organizations' waits and their Shapley
// values, in task-hours: 0 for a perfectly fair schedule.
func Unfairness(wait, shapley []float64) float64 {
	s := 0.0
	for i := range wait {
		d := wait[i] - shapley[i]
		s += d * d
	}
	return math.Sqrt(s)
}

// simulateAll runs every policy on every coalition, in parallel; results[i][p] is
// coalition i under policy p.
func (e Experiment) simulateAll(coalitions []Coalition) ([][]SimResult, error) {
	np := len(e.Policies)
	results := make([][]SimResult, len(coalitions))
	for i := range results {
		results[i] = make([]SimResult, np)
	}
	workers := e.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= len(coalitions)*np || errs[w] != nil {
					return
				}
				c, p := coalitions[k/np], k%np
				results[k/np][p], errs[w] = Simulate(SimConfig{Orgs: members(e.Orgs, c), Jobs: e.Jobs, Policy: e.Policies[p],
					MinRuntime: e.MinRuntime, Exposure: e.Exposure, Horizon: e.Horizon,
					Seed: e.Seed ^ uint64(c)*0x9e3779b97f4a7c15 ^ uint64(p+1)*0xbf58476d1ce4e5b9})
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

// members lists the organizations in coalition c, in order.
func members(orgs []Org, c Coalition) []Org {
	out := make([]Org, 0, popcount(uint64(c)))
	for i, o := range orgs {
		if c&(1<<i) != 0 {
			out = append(out, o)
		}
	}
	return out
}

// Scores compares policies pairwise over samples, as CloudShare's Table 1 does: "the
// score is incremented every time an algorithm is more fair than another
// algorithm" (with unfairness 60, 80 and 60, A and C get one point each, a tie
// scores nothing). pairwise[a][b] is the points policy a earned against policy b
// over the samples (smaller unfairness: fairer); score[a] is the sum over b. With
// tiesHalf a tie gives each policy half a point (the scores then sum to
// samples x n(n-1)/2). unfairness is [sample][policy].
func Scores(unfairness [][]float64, tiesHalf bool) (score []float64, pairwise [][]float64) {
	np := 0
	if len(unfairness) > 0 {
		np = len(unfairness[0])
	}
	pairwise = make([][]float64, np)
	score = make([]float64, np)
	for a := range np {
		pairwise[a] = make([]float64, np)
		for b := range np {
			if a == b {
				continue
			}
			for _, u := range unfairness {
				tol := 1e-9 * max(1, math.Abs(u[a]), math.Abs(u[b]))
				switch {
				case u[a] < u[b]-tol:
					pairwise[a][b]++
				case tiesHalf && math.Abs(u[a]-u[b]) <= tol:
					pairwise[a][b] += 0.5
				}
			}
			score[a] += pairwise[a][b]
		}
	}
	return score, pairwise
}
