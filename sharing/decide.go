package sharing

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
)

// Decide is the step the cluster-side service runs on every agent poll: from one
// cluster's snapshot at Now, accounts advanced up to Now (Accounts.Advance) and the
// cluster's policy (or, for pools with a Policy of their own, theirs: see the rule
// in perpool.go), it returns the tasks to preempt, the running tasks whose lenders
// change, and the tasks to start. In that order:
//
//  1. Preemption: where a pool's demand (teams' own use and reservations) and its
//     best-effort tasks exceed its capacity, the policy's victims are stopped (the
//     lowest-priority team's most recently started task first), but never one that
//     started less than the pool's MinRuntime ago; what cannot be freed yet is Blocked.
//  2. Re-attribution: units lent by a team whose demand rose are moved, without
//     stopping anything, to the other lenders' idle units (most recently started first).
//  3. Starts: while the policy picks a job that fits, one task of it starts, its units
//     attributed by the rule of the package documentation. A task fits when every pool
//     of its configuration keeps at least Exposure of its capacity free after it, and
//     no pool ever runs more than its capacity.
//
// The same inputs and rng state give the same decision. Decide records round robin's
// marks in acc and changes nothing else there. EINVALID for a snapshot that fails
// Validate or accounts not up to date with Now (to the millisecond); EINTERNAL if the
// policy picks a job that does not fit.
func Decide(s *Snapshot, acc *Accounts, p Policy, rng *rand.Rand) (Decision, error) {
	if err := s.Validate(); err != nil {
		return Decision{}, err
	}
	now := HoursOf(s.Now)
	if math.Abs(acc.asOf-now) > clockTolerance {
		return Decision{}, clearhouse.Errorf(clearhouse.EINVALID, "accounts: up to date with %s, not now (%s): advance them first",
			acc.AsOf().Format(time.RFC3339Nano), s.Now.UTC().Format(time.RFC3339Nano))
	}
	acc.asOf = now // the same moment, to the millisecond
	d := newDecider(s, now)
	d.v.bind(acc)
	p, pols, mixed := d.policies(p)
	prio := make([]float64, len(d.v.Teams))
	p.Priorities(&d.v, acc, prio)
	out := Decision{Priority: map[string]float64{}}
	for t, team := range d.v.Teams {
		out.Priority[team.Name] = finite(prio[t])
	}
	victim := func(_ int, cands []int) int { return p.Victim(&d.v, acc, cands, rng) }
	choose := func() int { return p.Choose(&d.v, acc, rng) }
	name := p.Name()
	if mixed {
		m := newPerPool(&d.v, pols)
		victim = func(pool int, cands []int) int { return m.victim(pool, acc, cands, rng) }
		choose = func() int { return m.choose(&d.v, acc) }
		name = "per pool"
		out.PoolPriority = map[string]map[string]float64{}
	}
	for i, ps := range d.pools {
		if !mixed {
			break
		}
		pp := make([]float64, len(d.v.Teams))
		pols[i].Priorities(&View{Now: d.v.Now, Pools: d.v.Pools[i : i+1], Teams: d.v.Teams}, acc, pp)
		out.PoolPriority[ps.Name] = map[string]float64{}
		for t, team := range d.v.Teams {
			out.PoolPriority[ps.Name][team.Name] = finite(pp[t])
		}
	}
	d.preempt(victim, &out)
	d.reattribute(&out)
	if err := d.start(acc, choose, name, &out); err != nil {
		return Decision{}, err
	}
	return out, nil
}

// poolState is one pool while deciding.
type poolState struct {
	Pool
	lenders []string       // the pool's teams and Operator, sorted by name
	idx     map[string]int // lender -> position
	slack   []float64      // idle units per lender: quota - demand - units attributed
	free    int64          // capacity - demand - best-effort units
}

// runState is one running task while deciding; its lenders are a private copy.
type runState struct {
	task    *Task
	lenders []Share
	stopped bool
	moved   bool
}

type decider struct {
	v     View
	pools []poolState
	runs  []runState
	now   float64
}

func newDecider(s *Snapshot, now float64) *decider {
	d := &decider{now: now}
	d.v.Now = now
	pools := slices.Clone(s.Pools)
	slices.SortFunc(pools, func(a, b Pool) int { return strings.Compare(a.Name, b.Name) })
	poolIdx := map[string]int{}
	teamSet := map[string]bool{}
	for i, p := range pools {
		poolIdx[p.Name] = i
		d.pools = append(d.pools, newPoolState(p))
		d.v.Pools = append(d.v.Pools, PoolView{Name: p.Name, Capacity: p.Capacity})
		for _, h := range p.Teams {
			teamSet[h.Team] = true
		}
	}
	for _, j := range s.Jobs {
		teamSet[j.Team] = true
	}
	for _, t := range s.Running {
		teamSet[t.Team] = true
	}
	teams := sortedKeys(teamSet)
	teamIdx := map[string]int{}
	share := shares(pools)
	for i, name := range teams {
		teamIdx[name] = i
		d.v.Teams = append(d.v.Teams, TeamView{Name: name, Share: share[name]})
	}
	d.addJobs(s.Jobs, poolIdx, teamIdx)
	d.addRunning(s.Running, poolIdx, teamIdx)
	return d
}

func newPoolState(p Pool) poolState {
	ps := poolState{Pool: p, idx: map[string]int{}}
	var quota, demand, overflow int64
	idle := map[string]float64{}
	for _, h := range p.Teams {
		dem := max(h.Used, h.Reserved)
		quota, demand = quota+h.Quota, demand+dem
		overflow += max(0, dem-h.Quota)
		idle[h.Team] = float64(max(0, h.Quota-dem))
	}
	opQuota := max(0, p.Capacity-quota)
	idle[Operator] = float64(opQuota - min(opQuota, overflow))
	ps.lenders = sortedKeys(idle)
	for i, l := range ps.lenders {
		ps.idx[l] = i
		ps.slack = append(ps.slack, idle[l])
	}
	ps.free = p.Capacity - demand
	return ps
}

// shares gives each team its share of quota: the mean over pools where anyone holds
// quota of its quota over the teams' total.
func shares(pools []Pool) map[string]float64 {
	out := map[string]float64{}
	n := 0
	for _, p := range pools {
		var total int64
		for _, h := range p.Teams {
			total += h.Quota
		}
		if total == 0 {
			continue
		}
		n++
		for _, h := range p.Teams {
			out[h.Team] += float64(h.Quota) / float64(total)
		}
	}
	for team := range out {
		out[team] /= float64(n)
	}
	return out
}

func unitsOf(c map[string]int64, poolIdx map[string]int) []PoolUnits {
	var out []PoolUnits
	for name, u := range c {
		out = append(out, PoolUnits{Pool: poolIdx[name], Units: u})
	}
	slices.SortFunc(out, func(a, b PoolUnits) int { return a.Pool - b.Pool })
	return out
}

func (d *decider) addJobs(jobs []Job, poolIdx, teamIdx map[string]int) {
	sorted := slices.Clone(jobs)
	slices.SortFunc(sorted, func(a, b Job) int {
		if c := a.Enqueued.Compare(b.Enqueued); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for i := range sorted {
		j := &sorted[i]
		t := teamIdx[j.Team]
		d.v.Jobs = append(d.v.Jobs, JobView{Job: j, Team: t, Units: unitsOf(j.Configuration, poolIdx),
			Waiting: j.Waiting, Enqueued: HoursOf(j.Enqueued)})
		d.v.Teams[t].Queue = append(d.v.Teams[t].Queue, len(d.v.Jobs)-1)
	}
}

func (d *decider) addRunning(running []Task, poolIdx, teamIdx map[string]int) {
	sorted := slices.Clone(running)
	slices.SortFunc(sorted, func(a, b Task) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for i := range sorted {
		t := &sorted[i]
		units := unitsOf(t.Configuration, poolIdx)
		d.v.Running = append(d.v.Running, RunningView{ID: t.ID, Team: teamIdx[t.Team], Started: HoursOf(t.Started), Units: units})
		d.runs = append(d.runs, runState{task: t, lenders: slices.Clone(t.Lenders)})
		for _, u := range units {
			d.pools[u.Pool].free -= u.Units
		}
		for _, s := range t.Lenders {
			ps := &d.pools[poolIdx[s.Pool]]
			ps.slack[ps.idx[s.Lender]] -= s.Units
		}
	}
}
