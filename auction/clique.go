package auction

import (
	"slices"
	"strconv"
	"time"
)

// Clique cuts for the separations' branch and bound (core.go, separate). Two
// columns conflict when no feasible allocation holds both: they are one
// bidder's, or together they need more of a pool than it holds and no column
// sells in it. A set of pairwise conflicting columns (a clique) holds at most
// one column of any allocation, so sum over the clique of x <= 1 is valid for
// every node of every separation of the part (the separations' problems are
// the part with other column values). The LP relaxation does not imply it when
// the conflicts come from different rows (three flights pairwise sharing a slot
// at three airports: x = 1/2 each is feasible for the rows).

// conflicts is the conflict graph of a part's columns, as bit sets.
type conflicts struct {
	n    int
	bits [][]uint64
}

func newConflicts(p *problem) *conflicts {
	n := len(p.cols)
	g := &conflicts{n: n, bits: make([][]uint64, n)}
	for j := range g.bits {
		g.bits[j] = make([]uint64, (n+63)/64)
	}
	sold := make([]bool, len(p.supply))
	users := make([][]int32, len(p.supply))
	for j := range p.cols {
		for _, it := range p.cols[j].items {
			if it.q < 0 {
				sold[it.pool] = true
			}
			users[it.pool] = append(users[it.pool], int32(j))
		}
	}
	qty := func(j int32, r int32) float64 {
		for _, it := range p.cols[j].items {
			if it.pool == r {
				return it.q
			}
		}
		return 0
	}
	for r, us := range users {
		if sold[r] {
			continue
		}
		for a, ja := range us {
			for _, jb := range us[a+1:] {
				if qty(ja, int32(r))+qty(jb, int32(r)) > p.supply[r]+feasibleTol {
					g.set(ja, jb)
				}
			}
		}
	}
	for b := range p.bidders() {
		for ja := p.first[b]; ja < p.first[b+1]; ja++ {
			for jb := ja + 1; jb < p.first[b+1]; jb++ {
				g.set(ja, jb)
			}
		}
	}
	return g
}

func (g *conflicts) set(a, b int32) {
	g.bits[a][b/64] |= 1 << (b % 64)
	g.bits[b][a/64] |= 1 << (a % 64)
}

func (g *conflicts) has(a, b int32) bool { return g.bits[a][b/64]&(1<<(b%64)) != 0 }

// cliqueCuts is the pool of clique cuts found so far for a part.
type cliqueCuts struct {
	g     *conflicts
	cuts  [][]int32
	known map[string]bool
}

func newCliqueCuts(p *problem) *cliqueCuts {
	return &cliqueCuts{g: newConflicts(p), known: map[string]bool{}}
}

// separate adds to the pool the cliques that x violates (sum of x over the
// clique above 1), grown greedily from each fractional column by x, then made
// maximal with columns of no value in x. It returns how many it added.
func (cc *cliqueCuts) separate(x []float64) int {
	frac := byValue(x) // the columns with a value in x, largest first
	added := 0
	for _, seed := range frac {
		if x[seed] > 1-1e-6 {
			continue
		}
		c := []int32{seed}
		sum := x[seed]
		for _, j := range frac {
			if j != seed && cc.adjacentToAll(j, c) {
				c = append(c, j)
				sum += x[j]
			}
		}
		if sum <= 1+1e-4 {
			continue
		}
		for j := range int32(cc.g.n) {
			if x[j] <= 1e-6 && cc.adjacentToAll(j, c) {
				c = append(c, j)
			}
		}
		slices.Sort(c)
		var key []byte
		for _, j := range c {
			key = strconv.AppendInt(key, int64(j), 36)
			key = append(key, ',')
		}
		if cc.known[string(key)] {
			continue
		}
		cc.known[string(key)] = true
		cc.cuts = append(cc.cuts, c)
		added++
	}
	return added
}

// adjacentToAll reports whether column j conflicts with every column of c.
func (cc *cliqueCuts) adjacentToAll(j int32, c []int32) bool {
	for _, k := range c {
		if !cc.g.has(j, k) {
			return false
		}
	}
	return true
}

// maxCutRounds is how many times a separation's root LP is solved again with
// the clique cuts it violated.
const maxCutRounds = 5

// cutRoot strengthens the LP of q (a separation's problem) with the pool's
// clique cuts (*pool, made on first use) and the new ones its root LP violates,
// solved again up to maxCutRounds times, and leaves the last root LP, which
// holds every cut, in q.root for branch and bound to start from. A part too
// large for branch and bound's LP gets neither.
func (q *problem) cutRoot(pool **cliqueCuts, end time.Time) {
	if !q.fitsLP() {
		return
	}
	if *pool == nil {
		*pool = newCliqueCuts(q)
	}
	cc := *pool
	q.cuts = cc.cuts
	for round := 0; ; round++ {
		rel, ok := q.nodeLP(&node{}, end)
		if !ok || rel.x == nil {
			return
		}
		if round == maxCutRounds || cc.separate(rel.x) == 0 {
			q.root = rel
			return
		}
		q.cuts = cc.cuts
	}
}

// cutRows returns, for a node whose free columns are free, the rows of p.cuts
// with a free column: each as the LP columns (indices into free) of its free
// columns, and its right-hand side, 1 less its fixed-in columns. ok is false
// when some cut holds two fixed-in columns (the node is infeasible).
func (p *problem) cutRows(n *node, free []int32) (rows [][]int, rhs []float64, ok bool) {
	if len(p.cuts) == 0 {
		return nil, nil, true
	}
	at := make([]int, len(p.cols))
	for j := range at {
		at[j] = -1
	}
	for k, j := range free {
		at[j] = k
	}
	one := make([]bool, len(p.cols))
	for _, j := range n.ones {
		one[j] = true
	}
	for _, c := range p.cuts {
		var ks []int
		r := 1.0
		for _, j := range c {
			if one[j] {
				r--
			} else if at[j] >= 0 {
				ks = append(ks, at[j])
			}
		}
		if r < 0 {
			return nil, nil, false
		}
		if len(ks) > 0 {
			rows, rhs = append(rows, ks), append(rhs, r)
		}
	}
	return rows, rhs, true
}
