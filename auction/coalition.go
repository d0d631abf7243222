package auction

import (
	"cmp"
	"math"
	"slices"
	"strconv"
)

// Separation for core payments (core.go) finds blocking coalitions; this file
// turns every allocation a separation meets into the strongest core constraints
// it implies (Bünz, Seuken and Lubin 2015, "A faster core constraint generation
// algorithm for combinatorial auctions").
//
// An allocation y of the part is a coalition: the orders it gives a bundle to.
// Compared with the optimal allocation x, it changes some orders' columns:
// winners it drops, losers it adds, winners it moves to another bundle. Group the
// changed orders into sub-markets, joined when their columns (in x or in y) share
// a pool. Each sub-market K alone, x with K's orders changed as in y, is a
// feasible allocation: a pool K touches is touched by no other sub-market, so its
// net demand is y's there, and x's elsewhere. Its constraint,
//
//	sum over the winners K drops of pi_j >= sum over K's orders in y of (their
//	value in y, less their value in x for the winners among them),
//
// involves only K's winners, and the constraints of y's sub-markets add up to
// y's own: each is at least as strong, and y blocks by the sum of what they block
// by. So an allocation that does not block as a whole (its other sub-markets lose
// more than one gains) still yields a blocking coalition wherever one of its
// sub-markets blocks. Before splitting, every winner y drops whose bundle still
// fits is put back: it then joins the coalition, which takes its payment out of
// the constraint's left side (a stronger constraint wherever that payment is not
// negative, so only winners whose VCG payment is not negative are put back).

// coalitions collects the blocking coalitions one round of separation meets, at
// payments pi, as core constraints (coreCut), each once over the whole
// constraint generation.
type coalitions struct {
	p      *problem  // the part; every allocation offered uses its column indices
	choice []int32   // the optimal allocation
	w      []float64 // per local bidder: the winner's column value (0 for losers)
	pi     []float64 // per local bidder: the payments being separated (0 for losers)
	tol    float64   // the least amount a coalition must block by (coreTol)
	// restore is the winners that may be put back into a coalition (VCG payment
	// not negative), highest payment first (setPayments).
	restore []int32
	winners []int32         // every winner
	known   map[string]bool // every sub-market turned into a constraint so far
	cliques *cliqueCuts     // the separations' clique cuts, kept from one to the next (cutRoot)
	found   []coreCut       // the constraints found since the last take
	// cheapMissed says the last separation's swaps and heuristics found no
	// blocking coalition (separate then solves the next root LP alongside).
	cheapMissed bool
	// scratch, reused by offer
	root, touch []int32
	key         []byte
}

// newCoalitions starts collecting for the part p's optimal allocation choice
// (welfare W), with the winners' column values w and VCG payments vcg, at
// payments vcg.
func newCoalitions(p *problem, choice []int32, w, vcg []float64, W float64) *coalitions {
	n := p.bidders()
	cs := &coalitions{p: p, choice: choice, w: w, tol: coreTol(W), known: map[string]bool{},
		root: make([]int32, n), touch: make([]int32, len(p.supply))}
	for lb, j := range choice {
		if j >= 0 {
			cs.winners = append(cs.winners, int32(lb))
			if vcg[lb] >= 0 {
				cs.restore = append(cs.restore, int32(lb))
			}
		}
	}
	cs.setPayments(vcg)
	return cs
}

// setPayments sets the payments the next allocations are measured at.
func (cs *coalitions) setPayments(pi []float64) {
	cs.pi = pi
	slices.SortStableFunc(cs.restore, func(a, b int32) int { return cmp.Compare(pi[b], pi[a]) })
}

// take returns the constraints found since the last take.
func (cs *coalitions) take() []coreCut {
	found := cs.found
	cs.found = nil
	return found
}

// offer adds a constraint for each sub-market of the feasible allocation y (p's
// column indices; not modified) that blocks pi by more than tol and is new,
// each first shrunk (shrink).
func (cs *coalitions) offer(y []int32) {
	y = slices.Clone(y)
	cs.putBack(y, cs.p.residual(y))
	for _, k := range cs.subMarkets(y) {
		if cs.blocks(y, k) <= cs.tol {
			continue
		}
		z := slices.Clone(cs.choice)
		for _, lb := range k {
			z[lb] = y[lb]
		}
		cs.shrink(z)
		for _, k2 := range cs.subMarkets(z) {
			cs.emit(z, k2)
		}
	}
}

// putBack puts back into y every winner it drops that may be put back (restore)
// and still fits what y leaves (res, updated).
func (cs *coalitions) putBack(y []int32, res []float64) {
	for _, lb := range cs.restore {
		if j := cs.choice[lb]; y[lb] < 0 && fits(res, cs.p.cols[j].items) {
			y[lb] = j
			take(res, cs.p.cols[j].items)
		}
	}
}

// gain is what order lb's change in y adds to the amount y blocks by: its value
// in y, less its value in the optimal allocation if it keeps a bundle, or its
// payment if it is a winner y drops.
func (cs *coalitions) gain(y []int32, lb int32) float64 {
	v := 0.0
	if j := y[lb]; j >= 0 {
		v = cs.p.cols[j].w
	}
	if cs.choice[lb] >= 0 {
		if y[lb] >= 0 {
			v -= cs.w[lb]
		} else {
			v -= cs.pi[lb]
		}
	}
	return v
}

// blocks is the amount the orders k's changes in y block by.
func (cs *coalitions) blocks(y []int32, k []int32) float64 {
	v := 0.0
	for _, lb := range k {
		v += cs.gain(y, lb)
	}
	return v
}

// subMarkets returns y's changed orders grouped into sub-markets: joined when
// their columns (in the optimal allocation or in y) share a pool.
func (cs *coalitions) subMarkets(y []int32) [][]int32 {
	p := cs.p
	for lb := range cs.root {
		cs.root[lb] = int32(lb)
	}
	for r := range cs.touch {
		cs.touch[r] = -1
	}
	find := func(a int32) int32 {
		for cs.root[a] != a {
			cs.root[a] = cs.root[cs.root[a]]
			a = cs.root[a]
		}
		return a
	}
	for lb := range y {
		if y[lb] == cs.choice[lb] {
			continue
		}
		for _, j := range [2]int32{cs.choice[lb], y[lb]} {
			if j < 0 {
				continue
			}
			for _, it := range p.cols[j].items {
				if o := cs.touch[it.pool]; o < 0 {
					cs.touch[it.pool] = int32(lb)
				} else if a, b := find(int32(lb)), find(o); a != b {
					cs.root[max(a, b)] = min(a, b)
				}
			}
		}
	}
	var out [][]int32
	index := map[int32]int{}
	for lb := range y {
		if y[lb] == cs.choice[lb] {
			continue
		}
		r := find(int32(lb))
		i, ok := index[r]
		if !ok {
			i = len(out)
			index[r] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], int32(lb))
	}
	return out
}

// shrink undoes, one order at a time, the changes of the allocation z that do not
// help it block: an order z adds or moves goes back to its column in the optimal
// allocation (when that fits), the winners that fit again are put back, and the
// change is kept when z then blocks by no less. z stays feasible.
func (cs *coalitions) shrink(z []int32) {
	p := cs.p
	all := make([]int32, len(z))
	for lb := range all {
		all[lb] = int32(lb)
	}
	cur := cs.blocks(z, all)
	for again := true; again; {
		again = false
		for lb := range z {
			if z[lb] == cs.choice[lb] || z[lb] < 0 {
				continue
			}
			t := slices.Clone(z)
			t[lb] = cs.choice[lb]
			res := p.residual(t)
			if slices.ContainsFunc(res, func(r float64) bool { return r < -feasibleTol }) {
				continue // its old column does not fit, or it sold what others use
			}
			cs.putBack(t, res)
			if v := cs.blocks(t, all); v >= cur-1e-12*max(1, math.Abs(cur)) {
				copy(z, t)
				cur, again = v, true
			}
		}
	}
}

// emit adds the constraint of the sub-market k of y when it blocks by more than
// tol and is new.
func (cs *coalitions) emit(y []int32, k []int32) {
	if cs.blocks(y, k) <= cs.tol {
		return
	}
	cs.key = cs.key[:0]
	for _, lb := range k {
		cs.key = strconv.AppendInt(cs.key, int64(lb), 36)
		cs.key = append(cs.key, ':')
		cs.key = strconv.AppendInt(cs.key, int64(y[lb]), 36)
		cs.key = append(cs.key, ',')
	}
	if cs.known[string(cs.key)] {
		return
	}
	cs.known[string(cs.key)] = true
	cut := coreCut{out: make([]bool, len(y))}
	for _, lb := range k {
		if j := y[lb]; j >= 0 {
			cut.rhs += cs.p.cols[j].w
		}
		if cs.choice[lb] >= 0 {
			if y[lb] >= 0 {
				cut.rhs -= cs.w[lb]
			} else {
				cut.out[lb] = true
			}
		}
	}
	cs.found = append(cs.found, cut)
}

// swaps offers, for each column outside the optimal allocation, the allocation
// that forces it in: the optimal one with the column's order moved to it, the
// winners in each pool it overdraws dropped (the least paid first) until it fits,
// those that fit again put back, and the rest filled greedily in order (q's
// columns, the part's worth what separation's copy q makes them). These are the
// cheap local variants of the coalitions branch and bound would find.
func (cs *coalitions) swaps(q *problem, order []int32) {
	p := cs.p
	byPay := slices.Clone(cs.winners)
	slices.SortStableFunc(byPay, func(a, b int32) int { return cmp.Compare(cs.pi[a], cs.pi[b]) }) // least paid first
	for j := range p.cols {
		c := &p.cols[j]
		if cs.choice[c.bidder] == int32(j) || c.w <= 0 {
			continue
		}
		y := slices.Clone(cs.choice)
		y[c.bidder] = int32(j)
		res := p.residual(y)
		for _, it := range c.items {
			for _, lb := range byPay {
				if res[it.pool] >= -feasibleTol {
					break
				}
				k := y[lb]
				if lb == c.bidder || k < 0 || k != cs.choice[lb] || !uses(p.cols[k].items, it.pool) {
					continue
				}
				for _, x := range p.cols[k].items {
					res[x.pool] += x.q
				}
				y[lb] = -1
			}
		}
		for _, lb := range cs.restore {
			if k := cs.choice[lb]; y[lb] < 0 && fits(res, p.cols[k].items) {
				y[lb] = k
				take(res, p.cols[k].items)
			}
		}
		y = q.greedy(y, order)
		if p.feasible(y) {
			cs.offer(y)
		}
	}
}
