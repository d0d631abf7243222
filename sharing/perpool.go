package sharing

import (
	"math/rand/v2"
	"slices"
)

// Pools of one cluster under different policies (issue 13: policies are pluggable
// per pool). A job's task spans the pools of its configuration, so a start needs
// every one of them; the rule:
//
//   - Each pool's policy ranks the cluster's teams by its own measure of what they
//     did in that pool alone (DirectContr: contribution less utility there, per unit
//     of its capacity; FairShare: usage there over the team's share; round robin:
//     the cluster's last service), the highest priority first, equal priorities
//     sharing a rank.
//   - A job's standing is its team's worst rank among the pools its task needs: a
//     pool grants the task only in its team's turn there, so the task waits for the
//     pool where its team stands last.
//   - Among the jobs whose next task fits, the best standing starts first; ties go
//     to the job waiting longest, then to the team listed first.
//   - Preemption in a pool takes that pool's policy's victim (the lowest-ranked
//     team there, its most recently started task), after the pool's minimum runtime.
//
// When every pool follows one policy the rule is that policy over the whole cluster
// (its priorities summed over the pools), as Decide always did. The cost of a start
// under mixed policies is one priority pass per pool and a search of the waiting
// jobs indexed by team and pools (perpoolindex.go).

// perPool is the chooser and victim picker of a cluster whose pools follow
// different policies. It keeps each pool's ranking between choices and indexes the
// waiting jobs (perpoolindex.go).
type perPool struct {
	pols    []Policy    // per pool of the view
	views   []*View     // per pool: the view restricted to that pool, for its policy
	prio    [][]float64 // per pool: the priorities of its ranking
	spare   []float64   // the next priorities, before they replace a pool's
	ranked  []bool      // per pool: rank and order hold its ranking
	nan     []bool      // per pool: some priority of its ranking is NaN
	rank    [][]int     // per pool, per team
	order   [][]int     // per pool: the teams by rank (then as listed)
	moved   []int
	index   *jobIndex // built at the second choice; nil beyond maxIndexedPools
	choices int
}

// policies resolves each pool's policy (sorted as the decider's pools): the pool's
// own, or p. When all pools follow one policy, that is the cluster's (p itself, or
// the policy every pool names) and mixed is false.
func (d *decider) policies(p Policy) (cluster Policy, pols []Policy, mixed bool) {
	pols = make([]Policy, len(d.pools))
	for i, ps := range d.pools {
		pols[i] = p
		if ps.Policy != "" && ps.Policy != p.Name() {
			if q, err := ByName(ps.Policy); err == nil { // Validate checked the name
				pols[i] = q
			}
		}
	}
	for _, q := range pols {
		if q.Name() != pols[0].Name() {
			return p, pols, true
		}
	}
	if len(pols) > 0 {
		p = pols[0]
	}
	return p, pols, false
}

func newPerPool(v *View, pols []Policy) *perPool {
	n := len(v.Teams)
	m := &perPool{pols: pols, spare: make([]float64, n)}
	for i := range v.Pools {
		m.views = append(m.views, &View{Now: v.Now, Pools: v.Pools[i : i+1], Teams: v.Teams, Jobs: v.Jobs, Running: v.Running})
		m.prio = append(m.prio, make([]float64, n))
		m.ranked = append(m.ranked, false)
		m.nan = append(m.nan, false)
		m.rank = append(m.rank, make([]int, n))
		m.order = append(m.order, make([]int, n))
	}
	return m
}

// rankAll ranks the teams in every pool: 0 for the highest priority, equal
// priorities sharing a rank.
func (m *perPool) rankAll(acc *Accounts) {
	for i := range m.pols {
		next := m.spare
		m.pols[i].Priorities(m.views[i], acc, next)
		m.rerank(i, next)
	}
}

// denseRanks writes each team's rank by prio into rank (0 for the highest priority,
// equal priorities sharing a rank), leaving order sorted by rank, then as listed:
// the order of a stable sort by priority (which only a stable sort gives when some
// priority is NaN).
func denseRanks(prio []float64, order, rank []int) {
	for t := range order {
		order[t] = t
	}
	if hasNaN(prio) {
		slices.SortStableFunc(order, func(a, b int) int {
			switch {
			case prio[a] > prio[b]:
				return -1
			case prio[a] < prio[b]:
				return 1
			}
			return 0
		})
	} else {
		slices.SortFunc(order, func(a, b int) int {
			switch {
			case prio[a] > prio[b]:
				return -1
			case prio[a] < prio[b]:
				return 1
			}
			return a - b
		})
	}
	setRanks(prio, order, rank)
}

// setRanks writes the dense rank of each team along order into rank.
func setRanks(prio []float64, order, rank []int) {
	r := 0
	for k, t := range order {
		if k > 0 && prio[t] != prio[order[k-1]] {
			r++
		}
		rank[t] = r
	}
}

// choose returns the job whose next task starts now under the rule above, -1 for none.
func (m *perPool) choose(v *View, acc *Accounts) int {
	if !v.anyRoom() {
		return -1
	}
	m.rankAll(acc)
	m.choices++
	if m.index == nil && m.choices > 1 && len(v.Pools) <= maxIndexedPools {
		m.index = newJobIndex(v) // a decision that chooses once scans once instead
	}
	if m.index == nil {
		return m.chooseByScan(v)
	}
	return m.index.search(v, m.rank, m.order)
}

// chooseByScan is choose by scanning every waiting job: for a decision's first
// choice (the index costs more than a scan), and for more pools than an index
// handles.
func (m *perPool) chooseByScan(v *View) int {
	best, bestWorst := -1, 0
	for t := range v.Teams {
		for _, j := range v.Teams[t].Queue {
			if !v.Fits(j) {
				continue
			}
			worst := 0
			for _, u := range v.Jobs[j].Units {
				worst = max(worst, m.rank[u.Pool][t])
			}
			if best < 0 || worst < bestWorst || worst == bestWorst && v.Jobs[j].Enqueued < v.Jobs[best].Enqueued {
				best, bestWorst = j, worst
			}
		}
	}
	return best
}

// victim returns pool i's policy's victim among candidates.
func (m *perPool) victim(i int, acc *Accounts, candidates []int, rng *rand.Rand) int {
	return m.pols[i].Victim(m.views[i], acc, candidates, rng)
}
