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
const maxCoalitions = 500

// coreTol is the blocking amount below which a coalition is taken not to block:
// twice the winner determination's own proof tolerance (pruneTol) at the part's
// welfare, since no separation is proved to any finer precision.
func coreTol(w float64) float64 { return 2 * pruneTol(w) }

// coreResult is a part's core-selecting payments, per local bidder (zero for
// losers), above the reserve value: pi the payments, vcg the VCG payments.
type coreResult struct {
	pi, vcg    []float64
	coalitions int // blocking coalitions generated
	// leastRevenue says pi is the LP's least-revenue core point, not the one
	// nearest VCG: the nearest-VCG step (ldp) failed on the last constraint set
	// (nearestMinimumRevenue). pi is still in the core and of least revenue.
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
//  2. Start at pi = vcg. Separation: the coalition that blocks pi most is the
//     optimum of winner determination with each winner's columns worth w less
//     its surplus w_j - pi_j (a winner in the coalition gives its surplus up);
//     it blocks by that optimum less sum(pi). Stop when it blocks by at most
//     coreTol (proved). A blocking coalition the incumbents or branch and
//     bound find is used at once, without proving it is the one that blocks
//     most: each separation then costs a few dozen nodes instead of a proof,
//     and only the last one, which finds none, is proved. Each starts from the
//     last coalition as an incumbent.
//  3. Otherwise add its constraint, sum over winners outside the coalition C of
//     pi_j >= (value of the coalition's allocation) - sum over winners in C of
//     w_j, find the least revenue m* with vcg <= pi <= w and every constraint
//     (an LP), then the pi nearest vcg among those with revenue m* (a
//     least-distance problem, ldp; where ldp fails, the LP's own point, and
//     res.leastRevenue says so), and repeat from 2.
func (p *problem) corePayments(choice []int32, W float64, end time.Time, opt Options) (res coreResult, ok bool) {
	maxNodes := opt.MaxNodes
	n := p.bidders()
	w := make([]float64, n)
	var winners []int32
	for lb, j := range choice {
		if j >= 0 {
			w[lb] = p.cols[j].w
			winners = append(winners, int32(lb))
		}
	}
	res.vcg = make([]float64, n)
	// The VCG solves are independent: run them on every processor. Each solves
	// its own copy of the part (variant), which shares only what no solve writes.
	proved := make([]bool, len(winners))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(winners)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if time.Now().After(end) {
					continue // out of budget: proved[i] stays false, the part pays capped prices
				}
				lb := winners[i]
				start := slices.Clone(choice)
				start[lb] = -1
				// Warm start: the optimal allocation less the winner is the
				// first incumbent (variant's start), and W (to its proof's tolerance) bounds W(N \ j) from
				// above, so an incumbent worth W is proved at once.
				q := p.variant(lb, start, nil)
				s := q.heuristics(end)
				s.bound = min(s.bound, W+pruneTol(W))
				q.prove(&s, end, maxNodes)
				proved[i] = s.optimal
				res.vcg[lb] = min(w[lb], s.value-(W-w[lb]))
			}
		}()
	}
	for i := range winners {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, ok := range proved {
		if !ok {
			return res, false
		}
	}
	res.pi = slices.Clone(res.vcg)
	var cuts []coreCut
	var prev []int32
	for {
		if time.Now().After(end) || len(cuts) >= maxCoalitions {
			return res, false
		}
		pi := res.pi
		q := p.variant(-1, choice, func(lb int32, v float64) float64 {
			if choice[lb] >= 0 {
				return v - (w[lb] - pi[lb])
			}
			return v
		})
		revenue := 0.0
		for _, lb := range winners {
			revenue += pi[lb]
		}
		// Any blocking coalition gives a valid constraint: when the incumbents
		// already block, take theirs without proving it blocks most, and branch
		// and bound stops at the first that blocks (enough); the search is
		// proved only when nothing found blocks.
		s := q.heuristics(end)
		// Warm start: the last coalition is an allocation of q too (variant keeps
		// the column indices); at the new payments it may still block.
		if prev != nil {
			s.better(q, prev)
		}
		if s.value-revenue <= coreTol(W) {
			q.enough = func(v float64) bool { return v-revenue > coreTol(W) }
			q.prove(&s, end, maxNodes)
			if s.value-revenue <= coreTol(W) {
				return res, s.optimal
			}
		}
		cut := coreCut{out: make([]bool, n)}
		for lb, j := range s.choice {
			if j >= 0 {
				cut.rhs += p.cols[j].w
				if choice[lb] >= 0 {
					cut.rhs -= w[lb]
				}
			}
		}
		for _, lb := range winners {
			cut.out[lb] = s.choice[lb] < 0
		}
		cuts = append(cuts, cut)
		prev = s.choice
		res.coalitions = len(cuts)
		next, nearest, ok := nearestMinimumRevenue(winners, res.vcg, w, cuts, W, end, opt.noNearest)
		if !ok {
			return res, false
		}
		// Only the last step's point is paid: an earlier fallback that a later
		// nearest-VCG step replaced leaves no trace in the payments.
		res.pi, res.leastRevenue = next, !nearest
	}
}

// coreCut is one blocking coalition's constraint: the winners outside it (out)
// pay, above the reserve value, at least rhs in all.
type coreCut struct {
	out []bool
	rhs float64
}

// nearestMinimumRevenue returns, per local bidder, the payments pi (above the
// reserve value) of least revenue with vcg <= pi <= w for the winners and every
// cut, and among those the one nearest vcg. It solves for d = pi - vcg: an LP
// (lpMax) for the least revenue m*, then ldp for the shortest d with revenue at
// most m* + eps. lpMax raises right-hand sides by tiny amounts against
// degeneracy, so its m* may fall short of the true least revenue by about 1e-7
// of the welfare; eps starts at 1e-9 of the welfare and grows until ldp finds
// the constraints feasible, so the revenue exceeds the least by at most eps.
// nearest is false when ldp failed at every eps and pi is the LP's own point
// (below); skipLDP takes that path at once (tests: Options.noNearest). ok is
// false when the LP failed.
func nearestMinimumRevenue(winners []int32, vcg, w []float64, cuts []coreCut, W float64, end time.Time, skipLDP bool) (pi []float64, nearest, ok bool) {
	n := len(winners)
	// Rows G d >= h: d >= 0, d <= w - vcg, and each cut.
	var G [][]float64
	var h []float64
	for k, lb := range winners {
		row := make([]float64, n)
		row[k] = 1
		G, h = append(G, row), append(h, 0)
		row = make([]float64, n)
		row[k] = -1
		G, h = append(G, row), append(h, -(w[lb]-vcg[lb]))
	}
	for _, c := range cuts {
		row := make([]float64, n)
		rhs := c.rhs
		for k, lb := range winners {
			if c.out[lb] {
				row[k] = 1
				rhs -= vcg[lb]
			}
		}
		G, h = append(G, row), append(h, rhs)
	}
	// The LP: max -sum d subject to -G d <= -h.
	A := make([][]float64, len(G))
	b := make([]float64, len(G))
	cost := make([]float64, n)
	for i := range G {
		A[i] = make([]float64, n)
		for k, v := range G[i] {
			A[i][k] = -v
		}
		b[i] = -h[i]
	}
	for k := range cost {
		cost[k] = -1
	}
	x, val, _, st := lpMax(A, b, cost, end)
	if st != lpOptimal {
		return nil, false, false
	}
	least := -val
	sumRow := make([]float64, n)
	for k := range sumRow {
		sumRow[k] = -1
	}
	G = append(G, sumRow)
	h = append(h, 0)
	for eps := 1e-9 * max(1, math.Abs(W)); eps <= 1e-4*max(1, math.Abs(W)) && !skipLDP; eps *= 10 {
		h[len(h)-1] = -(least + eps)
		d, ok := ldp(G, h, n)
		if !ok {
			continue
		}
		pi = make([]float64, len(vcg))
		for k, lb := range winners {
			pi[lb] = min(w[lb], vcg[lb]+max(d[k], 0))
		}
		return pi, true, true
	}
	// ldp failed at every eps: nnls cycles on some degenerate systems (seen on
	// CATS matching 96x450, with 13 cuts over 48 winners). The LP's own point is
	// then the answer: least revenue, every cut met to within the LP's
	// perturbation (1e-7 of a right-hand side, below coreTol), but a vertex, not
	// necessarily the point nearest VCG; the caller counts the part in
	// final_round.least_revenue_parts.
	pi = make([]float64, len(vcg))
	for k, lb := range winners {
		pi[lb] = min(w[lb], vcg[lb]+max(x[k], 0))
	}
	return pi, false, true
}
