package abacus

import (
	"cmp"
	"math"
	"slices"
)

// SLOResult is the outcome of SolveSLO. Slices have one entry per job of the
// instance; First and Rest have one row per job, zero for the jobs not in them.
type SLOResult struct {
	// Served marks the jobs of the most profitable set found whose SLOs all fit: they
	// share every resource by the auction among themselves (First), are served
	// first, and pay their budgets. A job without an SLO is served when adding it
	// breaks no served job's SLO.
	Served []bool
	// Met marks the jobs that stated an SLO and were served (their utility at First's
	// shares reaches MinUtility). A job pays only if it was served; of the jobs with
	// an SLO, exactly those whose SLO was met.
	Met []bool
	// Utility is each job's utility at the shares of its tier (First or Rest).
	Utility []float64
	// Revenue is the sum of the served jobs' budgets: what the pool earns.
	Revenue float64
	// First is the auction among the served jobs; Rest the auction among the others,
	// over what the served jobs leave (units no served job can take now).
	First, Rest Result
}

// sloSlack is the relative tolerance of an SLO check, so that rounding in the
// auction does not decide whether an SLO was met.
const sloSlack = 1e-9

// SolveSLO is the SLO variant (paper section 6, as issue 14 states it): jobs may state
// a minimum utility (Job.MinUtility); a greedy step picks the most profitable set of
// jobs whose SLOs fit; those share by the auction, and the others share, by the
// auction among themselves, what the first leave.
//
// The greedy step (its details are this package's reading, the paper's text was not
// available): jobs in order of budget, largest first (ties: smallest id); each is
// added to the set when the auction (Solve with opt) on the set with it meets every
// SLO of the set; otherwise it is left out and never reconsidered. Profit is the
// budget, since a job pays its budget only if served. Adding a job only lowers the
// others' shares, so the check covers every job of the set, not only the new one.
// That takes up to one auction per job, each on the set so far: time quadratic in the
// number of jobs, for pools of tens to a few thousand best-effort jobs.
//
// It returns EINVALID for a bad instance or options. A job's SLO is met when its
// utility is at least MinUtility less a relative 1e-9.
func SolveSLO(inst Instance, opt Options) (SLOResult, error) {
	if err := inst.Validate(); err != nil {
		return SLOResult{}, err
	}
	if err := opt.Validate(); err != nil {
		return SLOResult{}, err
	}
	n := len(inst.Jobs)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(inst.Jobs[b].Budget, inst.Jobs[a].Budget); c != 0 {
			return c
		}
		return cmp.Compare(inst.Jobs[a].ID, inst.Jobs[b].ID)
	})
	out := SLOResult{Served: make([]bool, n), Met: make([]bool, n), Utility: make([]float64, n)}
	var set []int
	for _, i := range order {
		trial := append(slices.Clone(set), i)
		slices.Sort(trial) // the instance's order, so that the rounds go as Solve's would
		res, err := solveSubset(inst, trial, opt)
		if err != nil {
			return SLOResult{}, err
		}
		if sloFits(inst, trial, res) {
			set, out.First = trial, res
		}
	}
	var rest []int
	for i := range n {
		if !slices.Contains(set, i) {
			rest = append(rest, i)
		}
	}
	var err error
	if len(set) == 0 {
		out.First = emptyResult(inst)
	}
	if out.Rest, err = solveSubset(inst, rest, opt); err != nil {
		return SLOResult{}, err
	}
	for _, i := range set {
		out.Served[i] = true
		out.Met[i] = inst.Jobs[i].MinUtility != nil
		out.Revenue += inst.Jobs[i].Budget
		out.Utility[i] = inst.Jobs[i].Value(out.First.Shares[i])
	}
	for _, i := range rest {
		out.Utility[i] = inst.Jobs[i].Value(out.Rest.Shares[i])
	}
	return out, nil
}

// sloFits reports whether every job of set with an SLO reaches it at res's shares.
func sloFits(inst Instance, set []int, res Result) bool {
	for _, i := range set {
		min := inst.Jobs[i].MinUtility
		if min == nil {
			continue
		}
		if inst.Jobs[i].Value(res.Shares[i]) < *min-sloSlack*math.Abs(*min) {
			return false
		}
	}
	return true
}

// solveSubset runs the auction on the jobs of subset (indices into inst.Jobs) and
// returns a result with one row per job of inst, zero outside subset.
func solveSubset(inst Instance, subset []int, opt Options) (Result, error) {
	full := emptyResult(inst)
	if len(subset) == 0 {
		return full, nil
	}
	sub := Instance{Resources: inst.Resources, Jobs: make([]Job, len(subset))}
	for k, i := range subset {
		sub.Jobs[k] = inst.Jobs[i]
	}
	res, err := Solve(sub, opt)
	if err != nil {
		return Result{}, err
	}
	full.Outcome, full.Iterations, full.LastMove = res.Outcome, res.Iterations, res.LastMove
	for k, i := range subset {
		copy(full.Shares[i], res.Shares[k])
		copy(full.SubBudgets[i], res.SubBudgets[k])
	}
	return full, nil
}

// emptyResult is a converged result with every entry zero.
func emptyResult(inst Instance) Result {
	n, m := len(inst.Jobs), len(inst.Resources)
	res := Result{Shares: make([][]float64, n), SubBudgets: make([][]float64, n)}
	sflat, bflat := make([]float64, n*m), make([]float64, n*m)
	for i := range n {
		res.Shares[i], res.SubBudgets[i] = sflat[i*m:(i+1)*m], bflat[i*m:(i+1)*m]
	}
	return res
}
