package sharing

import (
	"cmp"
	"math"
	"slices"
)

// The chooser of pools under different policies, indexed (perpool.go states the
// rule; chooseByScan is its plain reading, which this must equal). Decide asks for
// one job per task it starts, and a cluster may queue thousands of jobs, so:
//
//   - Ranks are kept between choices: a pool is re-ranked only when its policy's
//     priorities changed (under DirectContr and FairShare they do not within a
//     decision; round robin's move with every start), and when a few teams'
//     priorities changed they are moved in the ranking rather than all re-sorted.
//   - Waiting jobs are indexed by team and by the pools they need (a bit set), each
//     group by release. The search walks the ranks upward, admitting each team to
//     a pool at its rank there: a group becomes eligible when its team is admitted
//     to all its pools, which happens exactly at its standing (the worst rank among
//     them). The first level with an eligible job that fits holds the answer, the
//     job waiting longest there. Usually few levels and groups are looked at; at
//     worst every group, once, as the scan does.
//
// The index assumes that queues only shrink during a decision (a job leaves its
// team's queue when its last task starts), as Decide's starts do; a job without
// waiting tasks is passed over wherever it is found.

// jobGroup is a team's waiting jobs that need the same pools.
type jobGroup struct {
	mask uint64 // the pools, a bit per pool of the view
	jobs []int  // by release, then position in the team's queue
	head int    // jobs before head have no task left to start
}

// jobIndex is the waiting jobs by team and pools, with the search's scratch.
type jobIndex struct {
	groups   [][]jobGroup // per team
	noPools  []int        // jobs that need no pool (eligible at rank 0), by team then queue
	qpos     []int        // per job: its position in its team's queue when indexed
	admitted []uint64     // per team: the pools where the search admitted it
	touched  []int
	next     []int // per pool: the next team (a position in the pool's order) to admit
}

// maxIndexedPools bounds the pools a job index handles (a bit each); beyond, the
// chooser scans.
const maxIndexedPools = 64

// newJobIndex indexes the jobs of the teams' queues: each team's sorted by pools,
// release and queue position into one array, cut into groups.
func newJobIndex(v *View) *jobIndex {
	queued := 0
	for _, t := range v.Teams {
		queued += len(t.Queue)
	}
	x := &jobIndex{groups: make([][]jobGroup, len(v.Teams)), qpos: make([]int, len(v.Jobs)),
		admitted: make([]uint64, len(v.Teams)), next: make([]int, len(v.Pools))}
	mask := make([]uint64, len(v.Jobs))
	flat := make([]int, 0, queued)
	groups := make([]jobGroup, 0, queued) // at most a group a job: never reallocated
	for t := range v.Teams {
		start := len(flat)
		for k, j := range v.Teams[t].Queue {
			x.qpos[j] = k
			for _, u := range v.Jobs[j].Units {
				mask[j] |= 1 << u.Pool
			}
			if mask[j] == 0 {
				x.noPools = append(x.noPools, j)
				continue
			}
			flat = append(flat, j)
		}
		jobs := flat[start:]
		slices.SortFunc(jobs, func(a, b int) int {
			if mask[a] != mask[b] {
				return cmp.Compare(mask[a], mask[b])
			}
			if c := cmp.Compare(v.Jobs[a].Enqueued, v.Jobs[b].Enqueued); c != 0 {
				return c
			}
			return x.qpos[a] - x.qpos[b]
		})
		first := len(groups)
		for lo := 0; lo < len(jobs); {
			hi := lo + 1
			for hi < len(jobs) && mask[jobs[hi]] == mask[jobs[lo]] {
				hi++
			}
			groups = append(groups, jobGroup{mask: mask[jobs[lo]], jobs: jobs[lo:hi:hi]})
			lo = hi
		}
		x.groups[t] = groups[first:len(groups):len(groups)]
	}
	return x
}

// before reports whether job a goes before job b among jobs of one standing: the
// one waiting longest, then the team listed first, then the earlier in its queue.
func (x *jobIndex) before(v *View, a, b int) bool {
	ja, jb := &v.Jobs[a], &v.Jobs[b]
	if ja.Enqueued != jb.Enqueued {
		return ja.Enqueued < jb.Enqueued
	}
	if ja.Team != jb.Team {
		return ja.Team < jb.Team
	}
	return x.qpos[a] < x.qpos[b]
}

// firstFit is group g's first job whose next task fits, -1 for none.
func (g *jobGroup) firstFit(v *View) int {
	for g.head < len(g.jobs) && v.Jobs[g.jobs[g.head]].Waiting < 1 {
		g.head++
	}
	for _, j := range g.jobs[g.head:] {
		if v.Fits(j) {
			return j
		}
	}
	return -1
}

// search returns the job under the rule with ranks rank and orders order (per pool),
// -1 for none.
func (x *jobIndex) search(v *View, rank, order [][]int) int {
	best := -1
	for _, j := range x.noPools {
		if v.Fits(j) && (best < 0 || x.before(v, j, best)) {
			best = j
		}
	}
	clear(x.next)
	defer x.reset()
	for level := 0; best < 0; level++ {
		more := false
		for i, o := range order {
			bit := uint64(1) << i
			for ; x.next[i] < len(o) && rank[i][o[x.next[i]]] == level; x.next[i]++ {
				t := o[x.next[i]]
				if x.admitted[t] == 0 {
					x.touched = append(x.touched, t)
				}
				x.admitted[t] |= bit
				for g := range x.groups[t] {
					grp := &x.groups[t][g]
					if grp.mask&bit == 0 || grp.mask&^x.admitted[t] != 0 {
						continue
					}
					if j := grp.firstFit(v); j >= 0 && (best < 0 || x.before(v, j, best)) {
						best = j
					}
				}
			}
			more = more || x.next[i] < len(o)
		}
		if !more {
			break
		}
	}
	return best
}

func (x *jobIndex) reset() {
	for _, t := range x.touched {
		x.admitted[t] = 0
	}
	x.touched = x.touched[:0]
}

// rerank brings pool i's ranking up to date with prio, the policy's priorities
// now; the previous ranking's priorities are in m.prio[i]. When a few teams'
// priorities changed and none is NaN (now or before), they are moved one by one;
// otherwise the pool is ranked again.
func (m *perPool) rerank(i int, prio []float64) {
	old := m.prio[i]
	moved, many, nan := m.moved[:0], false, false
	for t, p := range prio {
		if math.Float64bits(p) != math.Float64bits(old[t]) {
			if len(moved) < maxMoved {
				moved = append(moved, t)
			} else {
				many = true
			}
		}
		nan = nan || p != p
	}
	m.moved = moved
	if m.ranked[i] && len(moved) == 0 {
		return
	}
	m.prio[i], m.spare = prio, old
	if m.ranked[i] && !many && !nan && !m.nan[i] {
		m.moveChanged(i, moved)
	} else {
		denseRanks(prio, m.order[i], m.rank[i])
	}
	m.ranked[i], m.nan[i] = true, nan
}

// maxMoved bounds the teams whose priority changed that rerank moves one by one
// (round robin moves one team per start); beyond, it sorts again.
const maxMoved = 16

// moveChanged re-sorts pool i's order for the priorities m.prio[i], where only
// the teams moved changed: they are taken out and put back where they belong (the
// order is by priority, highest first, then team, as the stable sort of denseRanks
// leaves it when no priority is NaN); then every rank is written again.
func (m *perPool) moveChanged(i int, moved []int) {
	prio, o := m.prio[i], m.order[i]
	kept := o[:0]
	for _, t := range o {
		if !slices.Contains(moved, t) {
			kept = append(kept, t)
		}
	}
	for _, t := range moved {
		at, _ := slices.BinarySearchFunc(kept, t, func(u, t int) int {
			switch {
			case prio[u] > prio[t]:
				return -1
			case prio[u] < prio[t]:
				return 1
			}
			return u - t
		})
		kept = slices.Insert(kept, at, t) // within o's capacity: in place
	}
	setRanks(prio, o, m.rank[i])
}

func hasNaN(x []float64) bool {
	return slices.ContainsFunc(x, math.IsNaN)
}
