package abacus

import (
	"math"
)

// Options are the auction's parameters.
type Options struct {
	// Alpha is the exponent of the share function, in [0, 1]. 0 shares every
	// contested resource equally whatever the budgets; 1 shares it in proportion to
	// sub-budgets. Convergence of Algorithm 1 is guaranteed up to 0.5.
	Alpha float64
	// Epsilon is the convergence threshold in dollars: Solve stops after the first
	// round in which no sub-budget moved by more than Epsilon and after which one more
	// application of Algorithm 2 would move none by more than Epsilon either. Positive, and at least
	// 1e-12 of the largest budget (below that, rounding alone moves sub-budgets).
	Epsilon float64
	// MaxIterations bounds the rounds of Algorithm 1, from 1 to MaxIterationsCap.
	MaxIterations int
	// OneStep makes each job's turn in a round one application of Algorithm 2, as
	// Algorithm 2 is printed. By default (false) a turn applies Algorithm 2 until the
	// job's own sub-budgets move by at most Epsilon/10 (at most 10,000 steps): the job's
	// best response against the others' current sub-budgets (Lemma 2), Algorithm 1's
	// "Run Algorithm 2 to find out the best sub-budget combination for job J_i", and
	// what the paper's worked example (Fig. 4) shows: J1's first turn moves it from
	// $50/$50 to about $62/$38, where one step gives exactly $60/$40 and the best
	// response $62.84/$37.16. Both end at the same equilibrium; a round's move is the
	// net change of the sub-budgets over the round.
	OneStep bool
	// ShareEpsilon, when positive, replaces the stopping rule on sub-budgets by one on
	// shares: Solve stops after the first round in which no share s_ij moved by more
	// than ShareEpsilon (a fraction of the resource, in (0, 1)). This is the measure
	// the paper's own explanation of its round counts speaks of ("every user possesses
	// a small fraction of resources in the system, which is not dramatically affected
	// by the iterations"); the reproduction of its section 7.1.1 uses it. Zero (the
	// default) keeps the rule on sub-budgets in dollars (Epsilon).
	ShareEpsilon float64
}

// DefaultOptions returns the operator's defaults: alpha 0.5, epsilon 1e-4 dollars,
// at most 1,000 rounds.
func DefaultOptions() Options {
	return Options{Alpha: 0.5, Epsilon: 1e-4, MaxIterations: 1000}
}

// MaxIterationsCap is the largest MaxIterations Solve accepts.
const MaxIterationsCap = 1_000_000

// Validate returns EINVALID naming the option at fault.
func (o Options) Validate() error {
	switch {
	case !finite(o.Alpha) || o.Alpha < 0 || o.Alpha > 1:
		return invalid("alpha: must be in [0, 1], got %v", o.Alpha)
	case !finite(o.Epsilon) || o.Epsilon <= 0:
		return invalid("epsilon: must be a positive number, got %v", o.Epsilon)
	case !finite(o.ShareEpsilon) || o.ShareEpsilon < 0 || o.ShareEpsilon >= 1:
		return invalid("share_epsilon: must be from 0 (off) to below 1, got %v", o.ShareEpsilon)
	case o.MaxIterations < 1 || o.MaxIterations > MaxIterationsCap:
		return invalid("max_iterations: must be from 1 to %d, got %d", MaxIterationsCap, o.MaxIterations)
	}
	return nil
}

// Outcome says how Algorithm 1 ended.
type Outcome uint8

const (
	// OutcomeConverged: the last round moved no sub-budget by more than Epsilon, and
	// at the result every job's sub-budgets are within Epsilon of what Algorithm 2
	// would set them to (Lemma 2's fixed point).
	OutcomeConverged Outcome = iota
	// OutcomeIterationLimit: MaxIterations rounds ran and the last one still moved a
	// sub-budget by more than Epsilon (possible for alpha above 0.5). The result holds
	// the last round's sub-budgets and the shares they give, which are still a valid
	// division of every resource.
	OutcomeIterationLimit
)

// String returns "converged" or "iteration-limit".
func (o Outcome) String() string {
	if o == OutcomeConverged {
		return "converged"
	}
	return "iteration-limit"
}

// Result is the auction's outcome. Shares and SubBudgets have one row per job of the
// instance and one column per resource, in the instance's order; entries for
// resources a job does not use are 0.
type Result struct {
	Outcome    Outcome
	Iterations int     // rounds of Algorithm 1 run, the last included
	LastMove   float64 // the largest sub-budget move of the last round, in dollars
	// LastShareMove is the largest change of a share over the last round, measured
	// only when Options.ShareEpsilon is positive (else 0).
	LastShareMove float64
	Shares        [][]float64
	SubBudgets    [][]float64
}

// Solve runs Algorithm 1 on a valid instance. It returns EINVALID for a bad instance
// or bad options. On success every job's sub-budgets sum to its budget, every share
// is in [0, 1], the shares of every resource some job uses sum to 1 (up to rounding),
// and Iterations <= MaxIterations. Solve never fails to return: when alpha > 0.5 keeps
// it from converging, Outcome says so. Time and memory are linear in the number of
// (job, used resource) pairs per round.
func Solve(inst Instance, opt Options) (Result, error) {
	if err := inst.Validate(); err != nil {
		return Result{}, err
	}
	if err := opt.Validate(); err != nil {
		return Result{}, err
	}
	st := newState(inst, opt.Alpha)
	if opt.Epsilon < 1e-12*st.maxBudget {
		return Result{}, invalid("epsilon: must be at least 1e-12 of the largest budget (%g), got %v", st.maxBudget, opt.Epsilon)
	}
	res := Result{Outcome: OutcomeIterationLimit}
	if !opt.OneStep {
		st.inner = opt.Epsilon / 10
	}
	for res.Iterations < opt.MaxIterations {
		res.Iterations++
		if opt.ShareEpsilon > 0 {
			before := st.shareSnapshot(nil)
			res.LastMove = st.round()
			res.LastShareMove = st.shareMove(before)
			if res.LastShareMove <= opt.ShareEpsilon {
				res.Outcome = OutcomeConverged
				break
			}
			continue
		}
		res.LastMove = st.round()
		if res.LastMove <= opt.Epsilon && st.residual() <= opt.Epsilon {
			res.Outcome = OutcomeConverged
			break
		}
	}
	res.Shares, res.SubBudgets = st.matrices()
	return res, nil
}

// state is Algorithm 1's working set, flat for speed: the (job, used resource) pairs
// of job i are pairs[start[i]:start[i+1]], interleaved so that a round reads one
// stream.
type state struct {
	alpha     float64
	nres      int
	budget    []float64 // per job
	kind      []Utility // per job
	start     []int32   // per job, plus one
	pairs     []pair
	sum       []float64 // per resource: sum of p over its users
	users     []int32   // per resource: jobs with a positive weight
	bidders   []int32   // per resource: of those, jobs with a positive budget
	g         []float64 // scratch, one per resource
	rounds    int       // rounds run so far
	sqrt      bool      // alpha is 0.5: pow is math.Sqrt
	maxBudget float64
	inner     float64   // best response: a turn repeats Algorithm 2 until it moves at most this (0: one step)
	was       []float64 // scratch: a job's sub-budgets at the start of its turn
	next      []float64 // scratch: extrapolated sub-budgets
}

// pair is one job's bid on one resource it uses.
type pair struct {
	w, b, p   float64 // weight, sub-budget, b^alpha
	res       int32   // the resource
	contested bool    // two or more jobs with positive budgets use the resource
}

func newState(inst Instance, alpha float64) *state {
	n, m := len(inst.Jobs), len(inst.Resources)
	pairs := 0
	for _, job := range inst.Jobs {
		for _, w := range job.Weights {
			if w > 0 {
				pairs++
			}
		}
	}
	st := &state{
		alpha: alpha, nres: m, sqrt: alpha == 0.5,
		budget: make([]float64, n), kind: make([]Utility, n), start: make([]int32, n+1),
		pairs: make([]pair, 0, pairs),
		sum:   make([]float64, m), users: make([]int32, m), bidders: make([]int32, m), g: make([]float64, m),
	}
	for i, job := range inst.Jobs {
		st.budget[i], st.kind[i] = job.Budget, job.Utility
		st.maxBudget = math.Max(st.maxBudget, job.Budget)
		for r, w := range job.Weights {
			if w > 0 {
				st.pairs = append(st.pairs, pair{w: w, res: int32(r)})
				st.users[r]++
				if job.Budget > 0 {
					st.bidders[r]++
				}
			}
		}
		st.start[i+1] = int32(len(st.pairs))
	}
	for i := range n {
		bids := st.bids(i)
		even := st.budget[i] / float64(len(bids))
		for k := range bids {
			bids[k].b, bids[k].p = even, st.pow(even)
			bids[k].contested = st.budget[i] > 0 && st.bidders[bids[k].res] >= 2
		}
	}
	return st
}

// bids returns job i's pairs.
func (st *state) bids(i int) []pair { return st.pairs[st.start[i]:st.start[i+1]] }

// pow returns x^alpha, with 0^alpha = 0 for every alpha (a job that bids nothing on a
// resource gets none of it), and exact fast paths for the common exponents.
func (st *state) pow(x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case st.alpha == 0.5:
		return math.Sqrt(x)
	case st.alpha == 1:
		return x
	case st.alpha == 0:
		return 1
	}
	return math.Exp(st.alpha * math.Log(x)) // twice as fast as math.Pow here, within a few ulps
}

// resumEvery is how many rounds run on incrementally updated resource sums before
// they are recomputed from scratch. Each update rounds by at most half an ulp, so 16
// rounds of n jobs drift a sum by at most 16n ulps (2e-11 relative for 10,000 jobs),
// far below any epsilon Solve accepts; and residual and matrices recompute the sums
// before anything is decided or returned. Recomputing every round cost a sixth of
// the time at 10,000 jobs.
const resumEvery = 16

// round is one round of Algorithm 1: every job in turn applies Algorithm 2 against
// the others' current sub-budgets. It returns the largest sub-budget move.
func (st *state) round() float64 {
	if st.rounds%resumEvery == 0 {
		st.resum()
	}
	st.rounds++
	move := 0.0
	for i := range st.budget {
		if m := st.turn(i); m > move {
			move = m
		}
	}
	return move
}

// maxTurnSteps bounds the applications of Algorithm 2 in one best-response turn.
const maxTurnSteps = 10_000

// turn is job i's turn in a round: one application of Algorithm 2, or (best
// response) applications until one moves at most st.inner. It returns the net
// largest move of the job's sub-budgets.
func (st *state) turn(i int) float64 {
	if st.inner <= 0 {
		return st.resplit(i)
	}
	bids := st.bids(i)
	st.was = st.was[:0]
	for _, b := range bids {
		st.was = append(st.was, b.b)
	}
	for range maxTurnSteps {
		if st.resplit(i) <= st.inner {
			break
		}
		if st.kind[i] == Linear && st.alpha < 1 {
			st.extrapolate(i)
		}
	}
	move := 0.0
	for k, b := range bids {
		move = max(move, math.Abs(b.b-st.was[k]))
	}
	return move
}

// extrapolate is a Newton step on job i's fixed point of Algorithm 2, taken after
// a plain step within a best-response turn of a linear-utility job with alpha below 1
// (at 1 the best response may leave a pool altogether, and a stretched step would
// reach exactly 0 where plain steps only approach it): in logarithms a
// step moves b_ij towards its fixed point only by 1 - D_ij of the distance, where
// D_ij = d log T / d log b is alpha (1 - 2 s_ij) for linear utilities (-alpha s_ij
// for log ones, whose plain step is already nearly exact, so they do without), so
// the step is stretched by 1 / (1 - D_ij) (at most 10 times, and to within a factor
// 10 of the plain step's value) and the split renormalised to the budget. It moves nothing at a fixed point, so the turn still
// ends at the job's best response, which the plain step checks.
func (st *state) extrapolate(i int) {
	total := st.gains(i)
	if !(total > 0) || total > math.MaxFloat64 {
		return
	}
	scale := st.budget[i] / total
	bids := st.bids(i)
	g, sum := st.g[:len(bids)], st.sum
	log := st.kind[i] == Log
	st.next = st.next[:0]
	newTotal := 0.0
	for k := range bids {
		bid := &bids[k]
		t, nb := scale*g[k], scale*g[k]
		if t > 0 && bid.b > 0 && bid.contested && sum[bid.res] > 0 {
			s := bid.p / sum[bid.res]
			d := st.alpha * (1 - 2*s)
			if log {
				d = -st.alpha * s
			}
			if x := bid.b * math.Exp(math.Log(t/bid.b)*min(1/max(1-d, 1e-9), 10)); finite(x) {
				nb = min(max(x, t/10), t*10) // never to 0: a contested pool keeps a positive bid
			}
		}
		st.next = append(st.next, nb)
		newTotal += nb
	}
	if !(newTotal > 0) || newTotal > math.MaxFloat64 {
		return
	}
	for k := range bids {
		bid := &bids[k]
		nb := st.next[k] * st.budget[i] / newTotal
		np := st.pow(nb)
		sum[bid.res] += np - bid.p
		bid.b, bid.p = nb, np
	}
}

// gains fills st.g with Algorithm 2's g_ij for job i: alpha f'(s_ij) s_ij (1 - s_ij)
// on contested resources and 0 on the others (computed without the common factor
// alpha, and as w (1 - s) for log, where f'(s) s = w), and returns their sum. It is 0
// when alpha = 0.
func (st *state) gains(i int) float64 {
	if st.alpha == 0 {
		return 0
	}
	bids := st.bids(i)
	g := st.g[:len(bids)]
	log := st.kind[i] == Log
	total := 0.0
	for k := range bids {
		v := 0.0
		if bid := &bids[k]; bid.contested {
			s := st.contestedShare(*bid)
			if log {
				v = bid.w * (1 - s)
			} else {
				v = bid.w * s * (1 - s)
			}
		}
		g[k] = v
		total += v
	}
	return total
}

// resplit is Algorithm 2 for job i: b_ij = b_i g_ij / sum_l g_il. When every g_ij is
// 0 (no contested resource, or alpha = 0) the split is kept: every split is then a
// best response. It returns the largest move of the job's sub-budgets.
func (st *state) resplit(i int) float64 {
	total := st.gains(i)
	if !(total > 0) || total > math.MaxFloat64 {
		return 0
	}
	scale := st.budget[i] / total
	bids := st.bids(i)
	g, sum := st.g[:len(bids)], st.sum
	move := 0.0
	for k := range bids {
		bid := &bids[k]
		nb := scale * g[k]
		move = max(move, math.Abs(nb-bid.b)) // branch-free: the sign of a move is a coin toss
		var np float64
		if st.sqrt {
			np = math.Sqrt(nb)
		} else {
			np = st.pow(nb)
		}
		sum[bid.res] += np - bid.p
		bid.b, bid.p = nb, np
	}
	return move
}

// shareSnapshot appends every (job, used resource) pair's current share to dst, in
// pair order, with the resource sums recomputed first.
func (st *state) shareSnapshot(dst []float64) []float64 {
	st.resum()
	for i := range st.budget {
		for _, bid := range st.bids(i) {
			dst = append(dst, st.share(i, bid))
		}
	}
	return dst
}

// shareMove returns the largest change of a share since the snapshot before.
func (st *state) shareMove(before []float64) float64 {
	st.resum()
	worst, k := 0.0, 0
	for i := range st.budget {
		for _, bid := range st.bids(i) {
			worst = max(worst, math.Abs(st.share(i, bid)-before[k]))
			k++
		}
	}
	return worst
}

// residual returns the largest distance, over all jobs, between a sub-budget and what
// Algorithm 2 would set it to now, without moving anything: 0 exactly at a fixed
// point of every job (Lemma 2).
func (st *state) residual() float64 {
	st.resum()
	worst := 0.0
	for i := range st.budget {
		total := st.gains(i)
		if !(total > 0) || total > math.MaxFloat64 {
			continue
		}
		scale := st.budget[i] / total
		for k, bid := range st.bids(i) {
			if d := math.Abs(scale*st.g[k] - bid.b); d > worst {
				worst = d
			}
		}
	}
	return worst
}

// resum recomputes every resource's sum of b^alpha from scratch, so that rounding in
// the incremental updates does not accumulate across rounds.
func (st *state) resum() {
	clear(st.sum)
	for _, bid := range st.pairs {
		st.sum[bid.res] += bid.p
	}
}

// share returns job i's share of bid's resource, with the edge cases of the package
// comment: equal among users when nobody bids, 0 for a zero budget, 1 when
// uncontested, the proportional rule otherwise.
func (st *state) share(i int, bid pair) float64 {
	r := bid.res
	switch {
	case st.bidders[r] == 0:
		return 1 / float64(st.users[r])
	case st.budget[i] == 0:
		return 0
	case !bid.contested:
		return 1
	}
	return st.contestedShare(bid)
}

// contestedShare is bid's share of a contested resource, b^alpha over the sum; when
// every bidder's sub-budget there has fallen to 0 (possible at alpha 1, where a best
// response may leave a pool), the bidders share it equally rather than 0/0.
func (st *state) contestedShare(bid pair) float64 {
	if sum := st.sum[bid.res]; sum > 0 {
		return bid.p / sum
	}
	return 1 / float64(st.bidders[bid.res])
}

// matrices returns the shares and sub-budgets as dense job x resource matrices
// (two backing arrays), with the resource sums recomputed exactly first.
func (st *state) matrices() (shares, subs [][]float64) {
	st.resum()
	n := len(st.budget)
	shares, subs = make([][]float64, n), make([][]float64, n)
	sflat, bflat := make([]float64, n*st.nres), make([]float64, n*st.nres)
	for i := range n {
		shares[i], subs[i] = sflat[i*st.nres:(i+1)*st.nres], bflat[i*st.nres:(i+1)*st.nres]
		for _, bid := range st.bids(i) {
			shares[i][bid.res] = st.share(i, bid)
			subs[i][bid.res] = bid.b
		}
	}
	return shares, subs
}
