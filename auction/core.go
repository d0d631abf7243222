package auction

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Core-selecting payments (docs/final-round.md, "Payments"): for one part whose
// allocation is proved optimal, the point of the minimum-revenue core nearest to
// the VCG payments (Day and Raghavan 2007; Day and Cramton 2012), by constraint
// generation. Everything is measured above the reserve value: a winner j whose
// column is worth w_j (its limit less its bundle's reserve value) pays its
// bundle's reserve value plus pi_j, so it pays its limit less w_j - pi_j.

// maxCoalitions caps constraint generation per part; reaching it counts as a
// failure, and the part falls back to the capped-price rule.
const maxCoalitions = 5000

// coreTol is the blocking amount below which a coalition is taken not to block:
// twice the winner determination's own proof tolerance (pruneTol) at the part's
// welfare, since no separation is proved to any finer precision.
func coreTol(w float64) float64 { return 2 * pruneTol(w) }

// coreResult is a part's core-selecting payments, per local bidder (zero for
// losers), above the reserve value: pi the payments, vcg the VCG payments.
type coreResult struct {
	pi, vcg    []float64
	coalitions int // blocking coalitions (sub-markets) added as constraints
	// leastRevenue says pi is the LP's least-revenue core point, not the one
	// nearest VCG: the nearest-VCG step (ldp) failed on the last constraint set
	// (corePoint.nearest). pi is still in the core and of least revenue.
	leastRevenue bool
}

// variant returns a copy of p for a payment computation: without bidder drop's
// columns (drop < 0 keeps every column, with the same indices), each column
// worth adjust(bidder, w), and start (p's column indices) as the clock's choice,
// the first incumbent.
func (p *problem) variant(drop int32, start []int32, adjust func(lb int32, w float64) float64) *problem {
	q := &problem{supply: p.supply, owner: p.owner, lambda: p.lambda, proof: true,
		cols: make([]column, 0, len(p.cols)), first: make([]int32, 0, len(p.first)),
		clock: make([]int32, len(p.clock))}
	newIndex := make([]int32, len(p.cols))
	for lb := range p.bidders() {
		q.first = append(q.first, int32(len(q.cols)))
		for j := p.first[lb]; j < p.first[lb+1]; j++ {
			newIndex[j] = -1
			if int32(lb) == drop {
				continue
			}
			c := p.cols[j]
			if adjust != nil {
				c.w = adjust(int32(lb), c.w)
			}
			newIndex[j] = int32(len(q.cols))
			q.cols = append(q.cols, c)
		}
	}
	q.first = append(q.first, int32(len(q.cols)))
	for lb, j := range start {
		q.clock[lb] = -1
		if j >= 0 {
			q.clock[lb] = newIndex[j]
		}
	}
	return q
}

// warmRoot maps p's solved root LP root to the variant of p without local
// bidder drop (variant(drop, ...)): the same tableau (shared, read only) with
// free in the variant's column indices, -1 for drop's columns, and out the LP
// columns of drop's columns, which the variant's root LP fixes at 0.
func (p *problem) warmRoot(root relaxation, drop int32) (rel relaxation, out []int) {
	lo, hi := p.first[drop], p.first[drop+1]
	rel = relaxation{lp: root.lp, free: make([]int32, len(root.free))}
	for k, j := range root.free {
		switch {
		case j < lo:
			rel.free[k] = j
		case j < hi:
			rel.free[k] = -1
			out = append(out, k)
		default:
			rel.free[k] = j - (hi - lo)
		}
	}
	return rel, out
}

// original maps an allocation of q, a variant of p, to p's column indices.
func (q *problem) original(p *problem, choice []int32) []int32 {
	y := make([]int32, len(choice))
	for lb, j := range choice {
		y[lb] = -1
		if j >= 0 {
			y[lb] = j - q.first[lb] + p.first[lb]
		}
	}
	return y
}

// corePayments computes the part's core-selecting payments for its optimal
// allocation choice (welfare W). ok is false when some winner determination it
// needs was not proved optimal by end (or within opt.MaxNodes nodes), or a step
// failed numerically: the caller then applies the capped-price rule.
//
//  1. VCG: for each winner j, W(N \ j) by winner determination without j's
//     columns, proved optimal; vcg_j = W(N \ j) - (W - w_j), at most w_j. These
//     solves run in parallel, one per processor, each warm-started: the optimal
//     allocation less j is the first incumbent, W the first bound, and branch
//     and bound works on the proof (problem.proof).
//  2. Start at pi = vcg; the allocations W(N \ j) found give the first
//     constraints. Separation (separate): the coalition that blocks pi most is
//     the optimum of winner determination with each winner's columns worth w
//     less its surplus w_j - pi_j (a winner in the coalition gives its surplus
//     up); it blocks by that optimum less sum(pi). Stop when it blocks by at
//     most coreTol (proved). Every allocation the swaps, the incumbents and
//     branch and bound try is split into its independent sub-markets
//     (coalition.go), each a constraint wherever it blocks, so a round adds
//     several; branch and bound stops sepExtra nodes after the first, and only
//     the last separation, which finds none, is proved.
//  3. Otherwise add the constraints, sum over winners outside the coalition C
//     of pi_j >= (value of the coalition's allocation) - sum over winners in C
//     of w_j, find the least revenue m* with vcg <= pi <= w and every
//     constraint (an LP), then the pi nearest vcg among those with revenue m*
//     (a least-distance problem, ldp; where ldp fails, the LP's own point, and
//     res.leastRevenue says so), both over a working set of the constraints
//     (corePoint), and repeat from 2.
func (p *problem) corePayments(choice []int32, W float64, end time.Time, opt Options) (res coreResult, ok bool) {
	maxNodes := opt.MaxNodes
	w, winners := p.winnerValues(choice)
	vcg, without, proved := p.vcgPayments(choice, W, end, maxNodes)
	res.vcg = vcg
	if !proved {
		return res, false
	}
	res.pi = slices.Clone(res.vcg)
	// The allocations W(N \ j) found are coalitions too: their blocking
	// sub-markets are the first constraints, before any separation.
	cs := newCoalitions(p, choice, w, res.vcg, W)
	for _, y := range without {
		cs.offer(y)
	}
	point := newCorePoint(winners, res.vcg, w, W)
	for first := true; ; first = false {
		if time.Now().After(end) || res.coalitions >= maxCoalitions {
			return res, false
		}
		if !first || len(cs.found) == 0 {
			if done, proved := p.separate(cs, choice, w, res.pi, W, end, maxNodes); done {
				return res, proved
			}
		}
		found := cs.take()
		res.coalitions += len(found)
		point.add(found)
		next, nearest, ok := point.nearest(end, opt.noNearest)
		if !ok {
			return res, false
		}
		// Only the last step's point is paid: an earlier fallback that a later
		// nearest-VCG step replaced leaves no trace in the payments.
		res.pi, res.leastRevenue = next, !nearest
	}
}

// vcgPayments is corePayments' first step: for each winner j of choice (welfare
// W), W(N \ j) by winner determination without j's columns, proved optimal;
// vcg_j = W(N \ j) - (W - w_j), at most w_j (per local bidder, 0 for losers), and
// without, per winner in local bidder order, W(N \ j)'s allocation in p's column
// indices. proved is false when some solve was not proved optimal by end (or
// within maxNodes nodes).
func (p *problem) vcgPayments(choice []int32, W float64, end time.Time, maxNodes int) (vcg []float64, without [][]int32, proved bool) {
	n := p.bidders()
	w, winners := p.winnerValues(choice)
	vcg = make([]float64, n)
	// Every solve's root LP is the part's less one bidder's columns: solve the
	// part's once, and each solve's from a copy of it (warmRoot).
	var root relaxation
	if p.fitsLP() {
		if rel, ok := p.nodeLP(&node{}, end); ok && rel.lp != nil {
			root = rel
		}
	}
	// The VCG solves are independent: run them on every processor. Each solves
	// its own copy of the part (variant), which shares only what no solve writes.
	done := make([]bool, len(winners))
	without = make([][]int32, len(winners)) // W(N \ j)'s allocation, in p's column indices
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(winners)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if time.Now().After(end) {
					continue // out of budget: done[i] stays false, the part pays capped prices
				}
				lb := winners[i]
				start := slices.Clone(choice)
				start[lb] = -1
				// Warm start: the optimal allocation less the winner is the
				// first incumbent (variant's start), and W (to its proof's tolerance) bounds W(N \ j) from
				// above, so an incumbent worth W is proved at once.
				q := p.variant(lb, start, nil)
				if root.lp != nil {
					q.root, q.rootOut = p.warmRoot(root, lb)
				}
				s := q.heuristics(end)
				s.bound = min(s.bound, W+pruneTol(W))
				q.prove(&s, end, maxNodes)
				done[i] = s.optimal
				without[i] = q.original(p, s.choice)
				vcg[lb] = min(w[lb], s.value-(W-w[lb]))
			}
		}()
	}
	for i := range winners {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, ok := range done {
		if !ok {
			return vcg, without, false
		}
	}
	return vcg, without, true
}

// sepExtra is how many more branch-and-bound nodes a separation searches after
// the first blocking coalition, for more of them: on CATS matching 96x450, 30
// reach in 50 rounds the revenue that stopping at the first reaches in 90 to 100.
const sepExtra = 30

// separate looks for coalitions that block the payments pi, into cs: first the
// swaps around the optimal allocation and the round's heuristics, then, when
// they find none, branch and bound on the part with each winner's columns worth
// w less its surplus w_j - pi_j, which stops sepExtra nodes after the first
// blocking coalition. Every allocation either tries is offered to cs (q.seen).
// Branch and bound runs on one worker per processor (branchAndBoundParallel),
// and the root LP is solved while the swaps and heuristics run.
// done says no coalition blocks by more than coreTol; proved that the search
// that says so finished (not cut by end or maxNodes): the payments are then
// final. done is also true, with proved false, when an allocation blocks but
// only by sub-markets already cut (numerically stuck).
func (p *problem) separate(cs *coalitions, choice []int32, w, pi []float64, W float64, end time.Time, maxNodes int) (done, proved bool) {
	cs.setPayments(pi)
	q := p.variant(-1, choice, func(lb int32, v float64) float64 {
		if choice[lb] >= 0 {
			return v - (w[lb] - pi[lb])
		}
		return v
	})
	q.seen = cs.offer
	q.workers = runtime.GOMAXPROCS(0)
	// The cheap search first (swaps, the heuristics), then branch and bound
	// from the root LP with the clique cuts. Where the last cheap search found
	// nothing (on CATS matching 96x450, 63 of 65 separations go on to branch
	// and bound), the root LP is solved meanwhile on a processor to spare:
	// cutRoot writes only q.root, q.cuts and the cut pool, which neither reads.
	var rooted sync.WaitGroup
	if q.workers > 1 && cs.cheapMissed {
		rooted.Add(1)
		go func() {
			defer rooted.Done()
			q.cutRoot(&cs.cliques, end)
		}()
	}
	cs.swaps(q, q.perUnit())
	s := q.heuristics(end)
	rooted.Wait()
	overlapped := q.workers > 1 && cs.cheapMissed
	cs.cheapMissed = len(cs.found) == 0
	if len(cs.found) > 0 {
		return false, false
	}
	if !overlapped {
		q.cutRoot(&cs.cliques, end)
	}
	after := 0
	q.enough = func(float64) bool {
		if len(cs.found) == 0 {
			return false
		}
		after++
		return after > sepExtra
	}
	q.prove(&s, end, maxNodes)
	if len(cs.found) > 0 {
		return false, false
	}
	revenue := 0.0
	for lb, j := range choice {
		if j >= 0 {
			revenue += pi[lb]
		}
	}
	if s.value-revenue <= coreTol(W) {
		return true, s.optimal
	}
	return true, false
}

// coreCut is one blocking coalition's constraint: the winners outside it (out)
// pay, above the reserve value, at least rhs in all.
type coreCut struct {
	out []bool
	rhs float64
}

// corePoint finds, as constraints are added, the payments of least revenue with
// vcg <= pi <= w for the winners and every constraint, and among those the ones
// nearest vcg (nearest). It works in d = pi - vcg, one entry per winner.
//
// Only a working set of the constraints enters the LP and the least-distance
// program: the ones active at the last point, and the new ones. A point that
// satisfies the working set's constraints is checked against all of them, the
// violated ones join the working set, and the step is solved again; a point
// optimal for some of the constraints and feasible for all is optimal for all.
// With hundreds of constraints over a few dozen winners, most never bind.
type corePoint struct {
	winners []int32
	vcg, w  []float64 // per local bidder
	W       float64
	rows    []coreRow // every constraint, in d
	work    []int     // the working set: indices into rows
	in      []bool    // per row: in the working set
	// rungs are the allowances above the least revenue (1e-9 of the welfare
	// times 10^rung) the last two least-distance steps succeeded with
	// (nearestTo).
	rungs [2]int
}

// coreRow is a constraint in d: the entries out sum to at least h.
type coreRow struct {
	out []int
	h   float64
}

func newCorePoint(winners []int32, vcg, w []float64, W float64) *corePoint {
	return &corePoint{winners: winners, vcg: vcg, w: w, W: W}
}

// add adds constraints to the working set.
func (cp *corePoint) add(cuts []coreCut) {
	for _, c := range cuts {
		r := coreRow{h: c.rhs}
		for k, lb := range cp.winners {
			if c.out[lb] {
				r.out = append(r.out, k)
				r.h -= cp.vcg[lb]
			}
		}
		cp.work = append(cp.work, len(cp.rows))
		cp.rows = append(cp.rows, r)
		cp.in = append(cp.in, true)
	}
}

// slack is how far d satisfies row r (negative: violated), and the scale a
// violation is measured against.
func (r coreRow) slack(d []float64) (slack, scale float64) {
	v := 0.0
	for _, k := range r.out {
		v += d[k]
		scale += math.Abs(d[k])
	}
	return v - r.h, max(1, scale, math.Abs(r.h))
}

// admit adds to the working set every row outside it that d violates by more
// than 1e-9 of its scale, and reports whether there was one.
func (cp *corePoint) admit(d []float64) bool {
	added := false
	for i, r := range cp.rows {
		if cp.in[i] {
			continue
		}
		if sl, scale := r.slack(d); sl < -1e-9*scale {
			cp.work, cp.in[i], added = append(cp.work, i), true, true
		}
	}
	return added
}

// prune keeps in the working set only the rows active (to 1e-6 of their scale)
// at one of the points given.
func (cp *corePoint) prune(points ...[]float64) {
	kept := cp.work[:0]
	for _, i := range cp.work {
		active := false
		for _, d := range points {
			if d == nil {
				continue
			}
			if sl, scale := cp.rows[i].slack(d); sl <= 1e-6*scale {
				active = true
			}
		}
		cp.in[i] = active
		if active {
			kept = append(kept, i)
		}
	}
	cp.work = kept
}

// nearest returns, per local bidder, the payments pi (above the reserve value)
// of least revenue with vcg <= pi <= w for the winners and every constraint, and
// among those the one nearest vcg: an LP (lpMax) for the least revenue m*, then
// ldp for the shortest d with revenue at most m* + eps, each over the working
// set. lpMax raises right-hand sides by tiny amounts against degeneracy, so its
// m* may fall short of the true least revenue by about 1e-7 of the welfare; eps
// starts at 1e-9 of the welfare and grows until ldp finds the constraints
// feasible, so the revenue exceeds the least by at most eps. nearest is false
// when ldp failed at every eps and pi is the LP's own point (below); skipLDP
// takes that path at once (tests: Options.noNearest). ok is false when the LP
// failed.
func (cp *corePoint) nearest(end time.Time, skipLDP bool) (pi []float64, nearest, ok bool) {
	var x []float64
	var least float64
	for {
		var st lpStatus
		x, least, st = cp.leastRevenue(end)
		if st != lpOptimal {
			return nil, false, false
		}
		if !cp.admit(x) {
			break
		}
	}
	var d []float64
	if !skipLDP {
		for {
			if d = cp.nearestTo(least); d == nil || !cp.admit(d) {
				break
			}
		}
	}
	cp.prune(x, d)
	nearest = d != nil
	if !nearest {
		// ldp failed at every eps: nnls cycles on some degenerate systems (seen
		// on CATS matching 96x450, with 13 cuts over 48 winners). The LP's own
		// point is then the answer: least revenue, every cut met to within the
		// LP's perturbation (1e-7 of a right-hand side, below coreTol), but a
		// vertex, not necessarily the point nearest VCG; the caller counts the
		// part in final_round.least_revenue_parts.
		d = x
	}
	pi = make([]float64, len(cp.vcg))
	for k, lb := range cp.winners {
		pi[lb] = min(cp.w[lb], cp.vcg[lb]+max(d[k], 0))
	}
	return pi, nearest, true
}

// leastRevenue solves the LP over the working set: min sum d subject to 0 <= d
// <= w - vcg and each row, as max -sum d subject to -G d <= -h, by the dual
// simplex from d = 0 (lpMaxDual: every cost is negative).
func (cp *corePoint) leastRevenue(end time.Time) (x []float64, least float64, st lpStatus) {
	n := len(cp.winners)
	A := make([][]float64, 0, n+len(cp.work))
	b := make([]float64, 0, n+len(cp.work))
	for k, lb := range cp.winners {
		row := make([]float64, n)
		row[k] = 1
		A, b = append(A, row), append(b, cp.w[lb]-cp.vcg[lb])
	}
	for _, i := range cp.work {
		row := make([]float64, n)
		for _, k := range cp.rows[i].out {
			row[k] = -1
		}
		A, b = append(A, row), append(b, -cp.rows[i].h)
	}
	cost := make([]float64, n)
	for k := range cost {
		cost[k] = -1
	}
	x, val, st := lpMaxDual(A, b, cost, end)
	return x, -val, st
}

// nearestTo solves the least-distance program over the working set: the
// shortest d with 0 <= d <= w - vcg, each row, and sum d <= least + eps, for
// the least eps on its ladder that ldp finds feasible; nil when none is. The
// ladder starts at 1e-9 of the welfare, or, when the last two steps succeeded
// at the same eps, there (but at most at 1e-7 of the welfare): the LP's
// perturbation, which decides the least eps that works, is of the same size
// from one step to the next (on CATS matching 96x450, 1e-7 of the welfare at
// almost every step, 1e-9 and 1e-8 failing: two of every three least-distance
// programs were wasted, and a failing one costs more than one that succeeds),
// and a step that needed more (up to 1e-4, seen there) does not raise the
// later ones' revenue.
func (cp *corePoint) nearestTo(least float64) []float64 {
	n := len(cp.winners)
	var G [][]float64
	var h []float64
	for k, lb := range cp.winners {
		row := make([]float64, n)
		row[k] = 1
		G, h = append(G, row), append(h, 0)
		row = make([]float64, n)
		row[k] = -1
		G, h = append(G, row), append(h, -(cp.w[lb]-cp.vcg[lb]))
	}
	for _, i := range cp.work {
		row := make([]float64, n)
		for _, k := range cp.rows[i].out {
			row[k] = 1
		}
		G, h = append(G, row), append(h, cp.rows[i].h)
	}
	sumRow := make([]float64, n)
	for k := range sumRow {
		sumRow[k] = -1
	}
	G = append(G, sumRow)
	h = append(h, 0)
	scale := max(1, math.Abs(cp.W))
	start := 0
	if cp.rungs[0] == cp.rungs[1] {
		start = min(cp.rungs[0], 2)
	}
	for rung := start; rung <= 5; rung++ {
		eps := math.Pow10(rung-9) * scale // 1e-9 to 1e-4 of the welfare
		h[len(h)-1] = -(least + eps)
		if d, ok := ldp(G, h, n); ok {
			cp.rungs = [2]int{rung, cp.rungs[0]}
			return d
		}
	}
	return nil
}

// winnerValues returns, per local bidder, the value of its bundle in choice (0
// for a loser), and the winners in local bidder order.
func (p *problem) winnerValues(choice []int32) (w []float64, winners []int32) {
	w = make([]float64, p.bidders())
	for lb, j := range choice {
		if j >= 0 {
			w[lb] = p.cols[j].w
			winners = append(winners, int32(lb))
		}
	}
	return w, winners
}
