package auction

import (
	"container/heap"
	"math"
	"slices"
	"time"
)

// maxTableau is the largest LP tableau (rows x columns) branch and bound builds;
// larger problems get the Lagrangian bound and the heuristics only.
const maxTableau = 4_000_000

// node is one subproblem of branch and bound: columns fixed in (ones) and out
// (zeros), and the LP bound of its parent.
type node struct {
	bound float64
	ones  []int32
	zeros []int32
	seq   int
	from  relaxation // the parent's LP, to re-solve from (when the memory budget allowed)
}

// warmBudget is how many bytes of parents' tableaux queued nodes may keep, so that
// most nodes re-solve from their parent's tableau in a few dual pivots.
const warmBudget = 256 << 20

type nodeHeap []*node

func (h nodeHeap) Len() int { return len(h) }
func (h nodeHeap) Less(i, j int) bool {
	if h[i].bound != h[j].bound {
		return h[i].bound > h[j].bound
	}
	return h[i].seq > h[j].seq // newest first: dive
}
func (h nodeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *nodeHeap) Push(x any)   { *h = append(*h, x.(*node)) }
func (h *nodeHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	*h = old[:len(old)-1]
	return n
}

// fitsLP reports whether the problem's root LP fits in maxTableau.
func (p *problem) fitsLP() bool {
	rows := len(p.supply) + p.bidders()
	return rows*(len(p.cols)+2*rows) <= maxTableau
}

// branchAndBound searches over LP relaxations: at each node the LP with the node's
// fixings gives a bound (the node is pruned when it cannot beat the incumbent), its
// solution rounded greedily gives an allocation, and the fractional column with
// the largest value splits the node in two. The search dives (the child with the
// column in is solved next, the other queued) until a dive ends, then resumes at
// the queued node with the best bound. It stops at the
// deadline or when maxNodes nodes were solved (0: no limit); s.bound is then the
// best bound of the nodes left, and s.optimal says whether none were.
func (p *problem) branchAndBound(s *solution, deadline time.Time, maxNodes int) {
	if p.workers > 1 && maxNodes == 0 {
		p.branchAndBoundParallel(s, deadline, maxNodes, p.workers)
		return
	}
	t := p.newTree(s)
	for {
		top, diving := t.next(s, deadline, maxNodes)
		if top == nil {
			break
		}
		s.nodes++
		rel, ok := t.solve(p, top, diving, deadline)
		t.parent = relaxation{}
		if !ok {
			t.lost = max(t.lost, top.bound)
			continue
		}
		if rel.x == nil || rel.bound <= s.value+pruneTol(s.value) {
			rel.lp.recycle() // its only holder: t.parent was cleared
			continue         // infeasible, or cannot beat the incumbent
		}
		t.parent = rel
		p.round(s, top.ones, rel.x, deadline)
		if p.enough != nil && p.enough(s.value) {
			break // the caller needs no better allocation than this one
		}
		br := branchColumn(rel.x)
		if p.proof {
			rel.fixByReducedCost(s.value + pruneTol(s.value))
			br = mostFractional(rel.x)
		}
		if br < 0 {
			continue // integral: round's whole allocation is exactly this one
		}
		t.branch(top, br, min(rel.bound, top.bound), rel)
	}
	t.close(s)
}

// bnbTree is branch and bound's state between nodes: the queue of open nodes, the
// dive under way, and the memory that queued nodes' tableaux hold.
type bnbTree struct {
	queue  nodeHeap
	seq    int        // the last node's sequence number
	lost   float64    // the best bound of nodes whose LP gave up
	dive   *node      // the child to solve next: a dive from the node just solved
	parent relaxation // the LP of the node just solved, which the dive starts from
	shared bool       // whether a queued node keeps parent's tableau too
	kept   int        // bytes of tableaux queued nodes keep
	// depthFirst lets the search go depth first once the warm-start budget is
	// spent, instead of queuing nodes without a tableau (p.proof; see next);
	// full says it does (a separation's from its start: newTree).
	depthFirst, full bool
}

// newTree is a search's tree at its start: the root, at s's bound. A payment
// solve (p.proof) goes depth first once the warm-start budget is spent, and a
// separation (p.enough set) from its start: it stops sepExtra nodes after its
// first blocking coalition, and best first leaves a queue of nodes behind,
// each holding a copy of its parent's tableau that is never solved (CATS
// matching 96x450: 3,209 of the 6,577 copies made in 55 separations; depth
// first, 349 of 4,864). Every node is still pruned only against an incumbent,
// so a search that ends is a proof either way.
func (p *problem) newTree(s *solution) bnbTree {
	return bnbTree{queue: nodeHeap{{bound: s.bound}}, lost: math.Inf(-1),
		depthFirst: p.proof, full: p.proof && p.enough != nil}
}

// release returns the memory of a node's parent tableau, when it kept one, to the
// warm-start budget.
func (t *bnbTree) release(n *node) {
	if n.from.lp != nil {
		t.kept -= 8 * len(n.from.lp.t)
	}
}

// next takes the node to solve next: the dive's child while a dive goes on, else
// the queued node with the best bound, dropping queued nodes that cannot beat the
// incumbent. It returns nil when no node is left, or when the deadline has passed
// or maxNodes nodes were solved; a dive's pending child is then queued, so that
// its bound stays open. diving says whether the node is the dive's child.
//
// Once the warm-start budget is spent (t.full, with t.depthFirst), the queued
// node taken is the newest instead of the best: the search goes on depth first,
// each node queued keeps its parent's tableau past the budget (branch), and the
// queue grows by at most the depth. Best first would leave most queued nodes
// without a tableau, each then solved from scratch at some 15 times the pivots
// of a re-solve (CATS matching 96x450: 340 of a separation's 2,500 nodes). When
// the incumbent does not change, as in a payment solve's proof, the order does
// not change which nodes are solved.
func (t *bnbTree) next(s *solution, deadline time.Time, maxNodes int) (*node, bool) {
	for t.dive != nil || t.queue.Len() > 0 {
		top := t.dive
		at := 0 // top's index in the queue
		if top == nil {
			if t.full {
				for i, n := range t.queue {
					if n.seq > t.queue[at].seq {
						at = i
					}
				}
			}
			top = t.queue[at]
			if top.bound <= s.value+pruneTol(s.value) {
				t.release(heap.Remove(&t.queue, at).(*node))
				continue
			}
		}
		if time.Now().After(deadline) || (maxNodes > 0 && s.nodes >= maxNodes) {
			if t.dive != nil {
				heap.Push(&t.queue, t.dive)
				t.dive = nil
			}
			return nil, false
		}
		diving := t.dive != nil
		if !diving {
			heap.Remove(&t.queue, at)
			t.release(top)
		}
		t.dive = nil
		return top, diving
	}
	return nil, false
}

// solve solves a node's LP (solveNode), a dive's child from the tableau of the
// node just solved, copied when the queued sibling keeps it too.
func (t *bnbTree) solve(p *problem, top *node, diving bool, deadline time.Time) (relaxation, bool) {
	var from relaxation
	if diving && t.parent.lp != nil {
		from = t.parent
		if t.shared {
			from.lp = from.lp.clone()
		}
	}
	return p.solveNode(top, from, deadline)
}

// solveNode solves a node's LP, for both searches (branchAndBound and
// branchAndBoundParallel): the root from p.root when it is set (rootLP), a
// dive's child from parent, the solved tableau of the node it dives from (set
// only for a dive's child; the child's re-solve takes it over), a queued node in
// place on the tableau it kept of its parent (its last use), and otherwise (or
// when that re-solve gave up) from scratch. ok is false when the LP gave up.
func (p *problem) solveNode(top *node, parent relaxation, deadline time.Time) (rel relaxation, ok bool) {
	switch {
	case len(top.ones) == 0 && len(top.zeros) == 0 && p.root.lp != nil:
		rel, ok = p.rootLP(deadline)
	case parent.lp != nil:
		rel, ok = p.childLP(parent, top.ones, top.ones[len(top.ones)-1], true, deadline)
		if rel.lp == nil {
			parent.lp.recycle() // infeasible or gave up: the tableau is of no further use
		}
	case top.from.lp != nil:
		rel, ok = p.childLP(top.from, top.ones, top.zeros[len(top.zeros)-1], false, deadline)
		if rel.lp == nil {
			top.from.lp.recycle()
		}
		top.from = relaxation{}
	}
	if !ok {
		rel, ok = p.nodeLP(top, deadline)
	}
	return rel, ok
}

// rootLP solves the root's LP from p.root, the solved root LP of the problem p
// restricts, with p.rootOut, the LP columns p does not have, fixed at 0: a copy
// of that tableau and a few dual simplex pivots per column instead of a new LP.
func (p *problem) rootLP(deadline time.Time) (relaxation, bool) {
	s := p.root.lp.clone()
	for _, k := range p.rootOut {
		switch s.fix(k, 0, deadline) {
		case lpInfeasible:
			return relaxation{}, true
		case lpOptimal:
		default:
			return relaxation{}, false
		}
	}
	rel := relaxation{lp: s, free: p.root.free}
	rel.x, rel.bound = p.expand(s, rel.free, nil, 0)
	return rel, true
}

// round turns a node's LP solution x into allocations and offers them to s: the
// columns at one, then the fixed columns and the LP's columns by value completed
// greedily, then that completed again by welfare per size. A new incumbent is
// searched around (improve).
func (p *problem) round(s *solution, ones []int32, x []float64, deadline time.Time) {
	choice := p.fixed(ones)
	order := byValue(x)
	before := s.value
	// The columns at one are an allocation of their own: when x is integral it is
	// the node's optimum, which may hold columns of negative welfare (a seller
	// whose sale lets a buyer fit) that greedy rounding never adds.
	whole := slices.Clone(choice)
	for j, v := range x {
		if v > 1-1e-6 {
			whole[p.cols[j].bidder] = int32(j)
		}
	}
	s.better(p, whole)
	rounded := p.greedy(choice, order)
	s.better(p, rounded)
	s.better(p, p.greedy(rounded, p.perUnit()))
	if s.value > before {
		p.improve(s, order, deadline) // a new incumbent: search around it
	}
}

// byValue returns the columns with a positive value in x, largest value first
// (ties in column order).
func byValue(x []float64) []int32 {
	order := make([]int32, 0, len(x))
	for j, v := range x {
		if v > 1e-6 {
			order = append(order, int32(j))
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		if x[a] != x[b] {
			if x[a] > x[b] {
				return -1
			}
			return 1
		}
		return 0
	})
	return order
}

// branchColumn returns the fractional column of x with the largest value (the
// first of equals), or -1 when x is integral.
func branchColumn(x []float64) int32 {
	br, bv := int32(-1), 0.0
	for j, v := range x {
		if v > 1e-6 && v < 1-1e-6 && v > bv {
			br, bv = int32(j), v
		}
	}
	return br
}

// mostFractional returns the column of x nearest 1/2 (the first of equals), or
// -1 when x is integral. Payment solves branch on it: their incumbent is usually
// optimal from the start, and splitting the most undecided column closes the
// bound in a fraction of the nodes that diving on the largest value needs (CATS
// matching 96x450: about 2,400 nodes for all of its VCG solves against about
// 11,000).
func mostFractional(x []float64) int32 {
	br, bv := int32(-1), 0.0
	for j, v := range x {
		if f := min(v, 1-v); f > 1e-6 && f > bv {
			br, bv = int32(j), f
		}
	}
	return br
}

// branch splits top on column br: the child with br out is queued (keeping the
// node's tableau rel to re-solve from, while the memory budget allows), and the
// child with br in is the dive's next node. Both children get bound.
func (t *bnbTree) branch(top *node, br int32, bound float64, rel relaxation) {
	t.seq++
	down := &node{bound: bound, ones: top.ones, zeros: append(slices.Clip(top.zeros), br), seq: t.seq}
	t.shared = false
	size := 8 * len(rel.lp.t)
	t.full = t.full || (t.depthFirst && t.kept+size > warmBudget)
	if t.kept+size <= warmBudget || t.full {
		down.from, t.kept, t.shared = rel, t.kept+size, true
	}
	heap.Push(&t.queue, down)
	t.seq++
	t.dive = &node{bound: bound, ones: append(slices.Clip(top.ones), br), zeros: top.zeros, seq: t.seq}
}

// close sets s's bound when the search stops: the best bound among the nodes left
// open (queued ones that could still beat the incumbent, and those whose LP gave
// up), or the incumbent's value, proved optimal, when none is.
func (t *bnbTree) close(s *solution) {
	open := t.lost
	for _, n := range t.queue {
		if n.bound > s.value+pruneTol(s.value) {
			open = max(open, n.bound)
		}
	}
	if math.IsInf(open, -1) {
		s.bound, s.optimal = s.value, true
		return
	}
	s.bound = min(s.bound, max(open, s.value))
}

func pruneTol(v float64) float64 { return 1e-7 * max(1, math.Abs(v)) }

// fixByReducedCost fixes out, for the node's subtree, every column that cannot
// be in an allocation worth more than floor: where column k is non-basic at 0
// with reduced cost d_k in the node's optimal tableau, every solution of the
// node's LP has welfare at most bound - d_k x_k, so with x_k = 1 at most
// bound - d_k. Such columns are blocked from entering the basis, so every child
// re-solved from this tableau (a copy of it) keeps them at 0 and its LP bound can
// only fall (reduced-cost fixing; Nemhauser and Wolsey 1988, II.5). The bound
// holds for the perturbed LP, a relaxation of the node's, so for the node too.
func (r relaxation) fixByReducedCost(floor float64) {
	s := r.lp
	if s == nil {
		return
	}
	obj := s.row(s.m)
	basic := make([]bool, s.n)
	for _, bj := range s.basis {
		if bj < s.n {
			basic[bj] = true
		}
	}
	for k := range s.n {
		if !basic[k] && !s.blocked[k] && obj[k] > 0 && r.bound-obj[k] <= floor {
			s.blocked[k] = true
		}
	}
}

// fixed returns the choice holding only the given columns.
func (p *problem) fixed(ones []int32) []int32 {
	choice := make([]int32, p.bidders())
	for i := range choice {
		choice[i] = -1
	}
	for _, j := range ones {
		choice[p.cols[j].bidder] = j
	}
	return choice
}

// relaxation is a node's solved LP: x per column (fixed-in columns at 1), the
// bound (fixed columns' welfare plus the LP's value), and the tableau over the
// node's free columns, from which a child is re-solved.
type relaxation struct {
	x     []float64
	bound float64
	lp    *lp
	free  []int32 // LP column -> problem column
	fixed float64 // welfare of the fixed-in columns
}

// nodeLP solves a node's LP relaxation from scratch: max w.x over the columns not
// fixed, with supply less the fixed columns' demand, at most one column per
// bidder. ok is false when the LP gave up; x is nil when the node is infeasible.
func (p *problem) nodeLP(n *node, deadline time.Time) (rel relaxation, ok bool) {
	res := p.fix(n, &rel)
	free := rel.free
	poolRow, rows := p.poolRows(free, len(res))
	if overdrawn(res, poolRow) {
		return relaxation{}, true
	}
	bidRow, rows := p.bidderRows(free, res, rows)
	cutRows, cutRHS, ok := p.cutRows(n, free)
	if !ok {
		return relaxation{}, true
	}
	A, b, c := p.nodeMatrix(free, res, poolRow, bidRow, rows+len(cutRows))
	for i, ks := range cutRows {
		for _, k := range ks {
			A[rows+i][k] = 1
		}
		b[rows+i] = cutRHS[i]
	}
	s, st := lpSolve(A, b, c, deadline)
	switch st {
	case lpInfeasible:
		return relaxation{}, true
	case lpOptimal:
	default:
		return relaxation{}, false
	}
	rel.lp = s
	rel.x, rel.bound = p.expand(s, free, n.ones, rel.fixed)
	return rel, true
}

// fix applies a node's fixings: it sets rel.fixed to the fixed-in columns'
// welfare and rel.free to the columns left free (neither fixed out nor of a
// bidder with a column fixed in, in column order), and returns the supply the
// fixed-in columns leave.
func (p *problem) fix(n *node, rel *relaxation) (res []float64) {
	out := make([]bool, len(p.cols))
	busy := make([]bool, p.bidders())
	res = slices.Clone(p.supply)
	for _, j := range n.ones {
		busy[p.cols[j].bidder] = true
		take(res, p.cols[j].items)
		rel.fixed += p.cols[j].w
	}
	for _, j := range n.zeros {
		out[j] = true
	}
	for j := range p.cols {
		if !out[j] && !busy[p.cols[j].bidder] {
			rel.free = append(rel.free, int32(j))
		}
	}
	return res
}

// poolRows numbers the LP's pool rows: one for each of the pools any free column
// uses, in the order the free columns first use them. poolRow is -1 for the
// others; rows is how many there are.
func (p *problem) poolRows(free []int32, pools int) (poolRow []int32, rows int) {
	poolRow = make([]int32, pools)
	for i := range poolRow {
		poolRow[i] = -1
	}
	for _, j := range free {
		for _, it := range p.cols[j].items {
			if poolRow[it.pool] < 0 {
				poolRow[it.pool] = int32(rows)
				rows++
			}
		}
	}
	return poolRow, rows
}

// overdrawn reports whether some pool without a row is short after the fixings:
// nothing left can make room in it, so the node is infeasible.
func overdrawn(res []float64, poolRow []int32) bool {
	for r, v := range res {
		if poolRow[r] < 0 && v < -feasibleTol {
			return true
		}
	}
	return false
}

// bidderRows numbers the LP's bidder rows, after the first rows (the pool rows):
// one for each bidder with free columns, in the order of their first free
// column. bidRow is -1 for the others; total is the LP's number of rows.
//
// A bidder's row (its columns sum to at most 1) is left out when it has one free
// column and a pool row already bounds that column by 1: a pool where it needs
// all that is left and no free column sells. Single-minded CATS bidders are
// many, and every row left out makes each pivot cheaper.
func (p *problem) bidderRows(free []int32, res []float64, rows int) (bidRow []int32, total int) {
	bidRow = make([]int32, p.bidders())
	for i := range bidRow {
		bidRow[i] = -1
	}
	freeOf := make([]int32, p.bidders())
	sold := make([]bool, len(res))
	for _, j := range free {
		freeOf[p.cols[j].bidder]++
		for _, it := range p.cols[j].items {
			sold[it.pool] = sold[it.pool] || it.q < 0
		}
	}
	for _, j := range free {
		b := p.cols[j].bidder
		if bidRow[b] >= 0 {
			continue
		}
		if freeOf[b] == 1 && boundedByPool(p.cols[j].items, res, sold) {
			continue
		}
		bidRow[b] = int32(rows)
		rows++
	}
	return bidRow, rows
}

// nodeMatrix builds the node's LP, max c.x subject to A x <= b: a column per free
// column, worth its welfare; pool rows holding the free columns' quantities
// against the supply left, each divided by the largest of 1, its right-hand side
// and its coefficients (in absolute value); bidder rows holding 1 per column
// against 1.
func (p *problem) nodeMatrix(free []int32, res []float64, poolRow, bidRow []int32, rows int) (A [][]float64, b, c []float64) {
	A = make([][]float64, rows)
	flat := make([]float64, rows*len(free))
	for i := range A {
		A[i] = flat[i*len(free) : (i+1)*len(free)]
	}
	b = make([]float64, rows)
	c = make([]float64, len(free))
	scale := make([]float64, rows)
	for r, row := range poolRow {
		if row >= 0 {
			scale[row] = max(math.Abs(res[r]), 1)
		}
	}
	for k, j := range free {
		col := &p.cols[j]
		c[k] = col.w
		for _, it := range col.items {
			row := poolRow[it.pool]
			A[row][k] = it.q
			scale[row] = max(scale[row], math.Abs(it.q))
		}
		if row := bidRow[col.bidder]; row >= 0 {
			A[row][k] = 1
		}
	}
	for r, row := range poolRow {
		if row >= 0 {
			f := 1 / scale[row]
			for k := range A[row] {
				A[row][k] *= f
			}
			b[row] = res[r] * f
		}
	}
	for _, row := range bidRow {
		if row >= 0 {
			b[row] = 1
		}
	}
	return A, b, c
}

// expand maps an LP solution over free columns back to every column (a free
// entry -1 is an LP column the problem does not have: rootLP's, fixed at 0).
func (p *problem) expand(s *lp, free, ones []int32, fixed float64) ([]float64, float64) {
	xf, val := s.solution()
	x := make([]float64, len(p.cols))
	for _, j := range ones {
		x[j] = 1
	}
	for k, j := range free {
		if j >= 0 {
			x[j] = xf[k]
		}
	}
	return x, fixed + val
}

// childLP solves a child of parent from the parent's tableau: with column br
// fixed in (x_br = 1) or out (x_br = 0), in a few dual simplex pivots instead of
// a new LP. The child's LP is the parent's with x_br fixed, the same LP nodeLP
// would build (the bidder's other columns and the pools' supply follow from the
// rows). The parent's tableau becomes the child's (the caller keeps no other
// use of it, or passes a copy). ok is false when the parent has no tableau or
// the LP gave up.
func (p *problem) childLP(parent relaxation, ones []int32, br int32, in bool, deadline time.Time) (relaxation, bool) {
	k := slices.Index(parent.free, br)
	if k < 0 || parent.lp == nil {
		return relaxation{}, false
	}
	s := parent.lp
	v := 0.0
	if in {
		v = 1
	}
	switch s.fix(k, v, deadline) {
	case lpInfeasible:
		return relaxation{}, true
	case lpOptimal:
	default:
		return relaxation{}, false
	}
	rel := relaxation{lp: s, free: parent.free, fixed: parent.fixed}
	rel.x, rel.bound = p.expand(s, parent.free, ones, parent.fixed)
	return rel, true
}

// boundedByPool reports whether some pool row keeps a column at most 1: the column
// needs at least all that is left of the pool (and something is left), and no
// column sells in it, so the row's other terms are never negative.
func boundedByPool(items []item, res []float64, sold []bool) bool {
	for _, it := range items {
		if it.q > 0 && !sold[it.pool] && res[it.pool] > 0 && it.q >= res[it.pool] {
			return true
		}
	}
	return false
}
