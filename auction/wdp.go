package auction

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// column is one bundle the final round may award: bidder and bundle index, its
// welfare w (limit less the bundle's reserve value) and its items.
type column struct {
	bidder int32 // local bidder index in its problem
	bundle int32
	w      float64
	size   float64 // positive quantities as shares of what each pool can hold
	items  []item  // local pool indices, sorted
}

// problem is one independent part of winner determination: bidders whose bundles
// share no pool with any other part's (CABOB's decomposition).
type problem struct {
	supply []float64 // per local pool
	cols   []column  // grouped by bidder
	first  []int32   // per local bidder: its first column; first[nb] = len(cols)
	owner  []int32   // local bidder -> bidder index in the instance
	clock  []int32   // per local bidder: the clock's column, or -1
	lambda []float64 // per local pool: the clock's price less the reserve
	// proof marks a payment computation's copy (variant): its incumbent is
	// usually optimal already, so branch and bound spends itself on the proof
	// (reduced-cost fixing, most-fractional branching). The final round's own
	// search keeps its diving rule, which finds good allocations early.
	proof bool
	// enough, when set, stops branch and bound after a node whose incumbents
	// satisfy it (left unproved): separation needs blocking coalitions, not
	// the one that blocks most.
	enough func(value float64) bool
	// seen, when set, is shown every feasible allocation the search tries
	// (solution.better): separation takes a constraint from each one's blocking
	// sub-markets, whether or not it beats the incumbent.
	seen func(choice []int32)
	// workers, when above 1, is how many goroutines branch and bound runs on
	// (branchAndBoundParallel, without a node cap): separation's, whose
	// searches run one after another. enough and seen are then called under
	// the search's lock, never at once.
	workers int
	// root, when set, is the solved root LP of a problem this one restricts
	// (a VCG variant: the part less one bidder), with free mapped to this
	// problem's columns (-1 for those it does not have), and rootOut those
	// LP columns: branch and bound's root re-solves from it (rootLP).
	root    relaxation
	rootOut []int
	// cuts, when set, are cliques of pairwise conflicting columns (clique.go):
	// each node's LP holds sum over each of x <= 1 (less its fixed-in columns).
	cuts [][]int32
	// byUnit caches perUnit's order (heuristics sets it, before any search).
	byUnit []int32
}

// perUnit returns the columns with positive welfare by welfare per unit of
// size, largest first (orderBy), computed once per problem: rounding uses it at
// every branch-and-bound node.
func (p *problem) perUnit() []int32 {
	if p.byUnit == nil {
		p.byUnit = p.orderBy(func(c *column) float64 { return c.w / max(c.size, 1e-9) })
	}
	return p.byUnit
}

func (p *problem) bidders() int { return len(p.owner) }

// value is the welfare of a choice of columns (one or none per bidder).
func (p *problem) value(choice []int32) float64 {
	v := 0.0
	for _, j := range choice {
		if j >= 0 {
			v += p.cols[j].w
		}
	}
	return v
}

// residual returns supply less the net demand of the chosen columns.
func (p *problem) residual(choice []int32) []float64 {
	res := slices.Clone(p.supply)
	for _, j := range choice {
		if j >= 0 {
			for _, it := range p.cols[j].items {
				res[it.pool] -= it.q
			}
		}
	}
	return res
}

// feasibleTol is the slack allowed on supply: quantities are whole numbers, so any
// excess is at least 1 and a small tolerance only absorbs float addition.
const feasibleTol = 1e-6

func (p *problem) feasible(choice []int32) bool {
	for _, r := range p.residual(choice) {
		if r < -feasibleTol {
			return false
		}
	}
	return true
}

func fits(res []float64, items []item) bool {
	for _, it := range items {
		if it.q > 0 && res[it.pool]-it.q < -feasibleTol {
			return false
		}
	}
	return true
}

func take(res []float64, items []item) {
	for _, it := range items {
		res[it.pool] -= it.q
	}
}

// greedy completes start (not modified) by trying columns in order, adding each
// with positive welfare whose bidder is free and that fits what is left.
func (p *problem) greedy(start []int32, order []int32) []int32 {
	choice := slices.Clone(start)
	res := p.residual(choice)
	for _, j := range order {
		c := &p.cols[j]
		if choice[c.bidder] >= 0 || c.w <= 0 || !fits(res, c.items) {
			continue
		}
		choice[c.bidder] = j
		take(res, c.items)
	}
	return choice
}

// orderBy returns the columns with positive welfare sorted by key, largest first
// (ties by column index, so the order is deterministic).
func (p *problem) orderBy(key func(c *column) float64) []int32 {
	type kv struct {
		j int32
		k float64
	}
	var kvs []kv
	for j := range p.cols {
		if p.cols[j].w > 0 {
			kvs = append(kvs, kv{int32(j), key(&p.cols[j])})
		}
	}
	slices.SortStableFunc(kvs, func(a, b kv) int { return cmp.Compare(b.k, a.k) })
	out := make([]int32, len(kvs))
	for i, e := range kvs {
		out[i] = e.j
	}
	return out
}

// solution is the best allocation found for a problem and what is proved about it.
type solution struct {
	choice  []int32
	value   float64
	bound   float64
	optimal bool
	nodes   int
}

// better replaces s's allocation with choice when it is feasible and worth more.
func (s *solution) better(p *problem, choice []int32) {
	if p.seen != nil && p.feasible(choice) {
		p.seen(choice)
	}
	if v := p.value(choice); v > s.value+1e-9*max(1, math.Abs(s.value)) && p.feasible(choice) {
		s.choice, s.value = slices.Clone(choice), v
	}
}

// heuristics seeds the incumbent: the clock's allocation (never beaten by less),
// the empty one, the clock's allocation filled up greedily, and greedy allocations
// by value per unit (Lehmann, O'Callaghan and Shoham's w/size and w/sqrt(size)).
func (p *problem) heuristics(deadline time.Time) solution {
	empty := make([]int32, p.bidders())
	for i := range empty {
		empty[i] = -1
	}
	s := solution{choice: empty, value: 0, bound: math.Inf(1)}
	if p.feasible(p.clock) {
		s.choice, s.value = slices.Clone(p.clock), p.value(p.clock)
	}
	perUnit := p.perUnit()
	perRoot := p.orderBy(func(c *column) float64 { return c.w / math.Sqrt(max(c.size, 1e-9)) })
	for _, order := range [][]int32{perUnit, perRoot} {
		s.better(p, p.greedy(p.clock, order))
		s.better(p, p.greedy(empty, order))
	}
	p.improve(&s, perRoot, deadline)
	return s
}

// lagrangian improves s.bound with the Lagrangian dual of the supply constraints,
// min over lambda >= 0 of lambda.supply + sum over bidders of max(0, max_k w_k -
// q_k.lambda), by subgradient steps from the clock's prices (less reserves), and
// tries a greedy allocation by reduced value every few steps. Every lambda gives a
// valid upper bound, so stopping early only weakens the bound.
func (p *problem) lagrangian(s *solution, iters int, deadline time.Time) {
	lam := slices.Clone(p.lambda)
	usage := make([]float64, len(p.supply))
	theta, stall := 1.0, 0
	for it := 0; it < iters; it++ {
		if it&7 == 7 && time.Now().After(deadline) {
			return
		}
		L := 0.0
		for r, l := range lam {
			L += l * p.supply[r]
			usage[r] = 0
		}
		for b := range p.bidders() {
			best, bj := 0.0, int32(-1)
			for j := p.first[b]; j < p.first[b+1]; j++ {
				c := &p.cols[j]
				v := c.w
				for _, itm := range c.items {
					v -= itm.q * lam[itm.pool]
				}
				if v > best {
					best, bj = v, j
				}
			}
			if bj >= 0 {
				L += best
				for _, itm := range p.cols[bj].items {
					usage[itm.pool] += itm.q
				}
			}
		}
		if L < s.bound {
			s.bound, stall = L, 0
		} else if stall++; stall >= 10 {
			theta, stall = theta/2, 0
		}
		if it%10 == 9 {
			reduced := p.orderBy(func(c *column) float64 {
				v := c.w
				for _, itm := range c.items {
					v -= itm.q * lam[itm.pool]
				}
				return v / max(c.size, 1e-9)
			})
			s.better(p, p.greedy(s.choice, reduced))
		}
		norm := 0.0
		for r := range usage {
			g := p.supply[r] - usage[r]
			if lam[r] > 0 || g < 0 {
				norm += g * g
			}
		}
		gap := s.bound - s.value
		if norm == 0 || gap <= 1e-9*max(1, math.Abs(s.value)) || theta < 1e-6 {
			return
		}
		step := theta * max(L-s.value, 1e-9) / norm
		for r := range lam {
			lam[r] = max(0, lam[r]-step*(p.supply[r]-usage[r]))
		}
	}
}

// maxLocalSearch is the most columns local search tries per pass: each try costs a
// greedy pass over all columns.
const maxLocalSearch = 5000

// improve is a local search from s's allocation: force one column in (dropping
// its bidder's current one and, while some pool is over-demanded, the winner there
// with the least welfare per unit), refill greedily, and keep the result when it
// is worth more. It repeats while a pass improves, until the deadline.
func (p *problem) improve(s *solution, order []int32, deadline time.Time) {
	if len(p.cols) > maxLocalSearch {
		return
	}
	for pass := 0; pass < 20; pass++ {
		improved := false
		for j := range p.cols {
			if time.Now().After(deadline) {
				return
			}
			c := &p.cols[j]
			if c.w <= 0 || s.choice[c.bidder] == int32(j) {
				continue
			}
			choice := slices.Clone(s.choice)
			choice[c.bidder] = int32(j)
			res := p.residual(choice)
			for _, it := range c.items {
				for res[it.pool] < -feasibleTol {
					worst, wv := int32(-1), math.Inf(1)
					for b, k := range choice {
						if k < 0 || int32(b) == c.bidder || !uses(p.cols[k].items, it.pool) {
							continue
						}
						if v := p.cols[k].w / max(p.cols[k].size, 1e-9); v < wv {
							worst, wv = int32(b), v
						}
					}
					if worst < 0 {
						break
					}
					for _, x := range p.cols[choice[worst]].items {
						res[x.pool] += x.q
					}
					choice[worst] = -1
				}
			}
			choice = p.greedy(choice, order)
			before := s.value
			s.better(p, choice)
			improved = improved || s.value > before
		}
		if !improved {
			return
		}
	}
}

// uses reports whether items buy in pool r.
func uses(items []item, r int32) bool {
	for _, it := range items {
		if it.pool == r {
			return it.q > 0
		}
	}
	return false
}
