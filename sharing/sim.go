package sharing

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/clearhouse/clearhouse"
)

// Org is an organization of the simulator (CloudShare section 5): a team and the
// processors it brings to the federation, all in one pool.
type Org struct {
	Name       string
	Processors int64
}

// SimJob is a job of the simulator: Tasks identical one-processor tasks of TaskHours
// each, released at Release (hours from the start of the run). A Background job is
// its team's local load: it runs only on its team's own processors, before any
// best-effort task there (preempting one if need be), is never chosen by the policy,
// and its wait is not counted.
type SimJob struct {
	ID         string
	Team       string
	Release    float64
	Tasks      int
	TaskHours  float64
	Background bool
}

// SimConfig is one run of the simulator: the organizations of the coalition, the
// jobs (those of teams that are not among Orgs are left out, which is how a coalition
// is simulated), the policy, the minimum runtime before preemption (hours), the
// exposure threshold and the seed of the policy's rng. With a Horizon (hours, above
// zero) the run stops there and a task not finished by then counts the wait it had so
// far (a coalition may then have no processors at all); without one it runs until every
// task has run.
type SimConfig struct {
	Orgs       []Org
	Jobs       []SimJob
	Policy     Policy
	MinRuntime float64
	Exposure   float64
	Seed       uint64
	Horizon    float64
}

// SimResult is what a run gives: per organization (in Orgs order) the total wait of
// its best-effort tasks in task-hours (each task's completion less its release less
// its duration: time queued, and work lost to preemption) and the tasks it completed;
// the preemptions; how long background tasks waited for their own processors in all
// (task-hours); and when the last task ended.
type SimResult struct {
	Wait           []float64
	Tasks          []int
	Preemptions    int
	BackgroundWait float64
	End            float64
}

// TotalWait is the sum of the organizations' waits.
func (r SimResult) TotalWait() float64 {
	s := 0.0
	for _, w := range r.Wait {
		s += w
	}
	return s
}

var cpuUnit = []PoolUnits{{Pool: 0, Units: 1}}

// simTask is a task running in the simulator.
type simTask struct {
	job, org   int // job: index into the view's jobs; -1 for background
	start, end float64
	release    float64
	hours      float64
	lend       []float64 // units per lender (best-effort only)
	stopped    bool
	seq        int
}

// endTimes is a min-heap of the distinct times at which tasks end.
type endTimes []float64

func (h endTimes) Len() int           { return len(h) }
func (h endTimes) Less(i, j int) bool { return h[i] < h[j] }
func (h endTimes) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endTimes) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *endTimes) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type bgTask struct{ release, hours float64 }

type sim struct {
	cfg      SimConfig
	v        View
	acc      *Accounts
	rng      *rand.Rand
	capacity int64
	keep     int64
	orgRows  []int
	poolRow  int

	arrivals []int // indices into cfg.Jobs, by release
	next     int
	jobOf    []int     // cfg.Jobs index -> view job (-1: background or left out)
	hours    []float64 // view job -> task duration
	orgOf    map[string]int

	times   endTimes               // distinct end times
	ends    map[float64][]*simTask // tasks ending at each, in start order
	spare   [][]*simTask           // emptied lists of ends, for reuse
	slab    []simTask              // tasks are allocated from here, a block at a time
	seq     int
	running []*simTask // best-effort, in start order (stopped ones dropped lazily)
	nRun    int
	bgRun   []int64
	bgQueue [][]bgTask
	bgTotal int64
	wake    float64

	slack        []float64 // per lender: processors - background - attributed
	useW, useR   []float64 // per org: running units, and their sum of releases
	lendW, lendR []float64 // per lender: attributed units, and their release-weighted sum
	res          SimResult
	free         [][]float64 // recycled lend slices
}

// Simulate runs the jobs of cfg's organizations through the policy on their pooled
// processors, event by event (arrivals, task ends), until every task has run. The
// accounts start empty at time 0 and advance at every event; each free processor goes
// to the task the policy chooses, attributed as Decide attributes. The same config
// gives the same result. EINVALID for an organization without name, with negative
// processors or named twice, no processors at all, a job with no tasks, a task
// duration that is not positive, a release that is negative or not finite, no policy,
// or an exposure that keeps every processor free.
func Simulate(cfg SimConfig) (SimResult, error) {
	if err := cfg.validate(); err != nil {
		return SimResult{}, err
	}
	s := newSim(cfg)
	for s.step() {
	}
	return s.res, nil
}

func (c *SimConfig) validate() error {
	if c.Policy == nil {
		return clearhouse.Errorf(clearhouse.EINVALID, "policy: required")
	}
	if !(c.Exposure >= 0 && c.Exposure < 1) || !(c.MinRuntime >= 0) {
		return clearhouse.Errorf(clearhouse.EINVALID, "exposure must be in [0, 1) and min runtime zero or more")
	}
	seen, total := map[string]bool{}, int64(0)
	for i, o := range c.Orgs {
		if o.Name == "" || seen[o.Name] || o.Processors < 0 {
			return clearhouse.Errorf(clearhouse.EINVALID, "orgs[%d]: a unique name and processors zero or more are required", i)
		}
		seen[o.Name], total = true, total+o.Processors
	}
	if !(c.Horizon >= 0) || math.IsInf(c.Horizon, 0) {
		return clearhouse.Errorf(clearhouse.EINVALID, "horizon: a number of hours, zero or more")
	}
	if total == 0 && c.Horizon == 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "orgs: the coalition has no processors (give a horizon)")
	}
	if total > 0 && c.Horizon == 0 && int64(math.Ceil(c.Exposure*float64(total)-eps)) >= total {
		return clearhouse.Errorf(clearhouse.EINVALID, "exposure: %g keeps all %d processors free", c.Exposure, total)
	}
	for i, j := range c.Jobs {
		if j.Tasks < 1 || !(j.TaskHours > 0) || math.IsInf(j.TaskHours, 0) || !(j.Release >= 0) || math.IsInf(j.Release, 0) {
			return clearhouse.Errorf(clearhouse.EINVALID, "jobs[%d] (%q): at least 1 task, a positive task duration and a finite release zero or more", i, j.ID)
		}
	}
	return nil
}

func newSim(cfg SimConfig) *sim {
	n := len(cfg.Orgs)
	s := &sim{cfg: cfg, acc: newAccountsAt(0), rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5a17)),
		orgOf: map[string]int{}, ends: map[float64][]*simTask{}, bgRun: make([]int64, n), bgQueue: make([][]bgTask, n), wake: math.Inf(1),
		slack: make([]float64, n), useW: make([]float64, n), useR: make([]float64, n),
		lendW: make([]float64, n), lendR: make([]float64, n)}
	s.res = SimResult{Wait: make([]float64, n), Tasks: make([]int, n)}
	for i, o := range cfg.Orgs {
		s.orgOf[o.Name] = i
		s.capacity += o.Processors
		s.slack[i] = float64(o.Processors)
	}
	s.keep = int64(math.Ceil(cfg.Exposure*float64(s.capacity) - eps))
	s.v.Pools = []PoolView{{Name: "cpu", Capacity: s.capacity}}
	for _, o := range cfg.Orgs {
		s.v.Teams = append(s.v.Teams, TeamView{Name: o.Name, Share: float64(o.Processors) / float64(s.capacity)})
	}
	s.v.bind(s.acc)
	s.orgRows, s.poolRow = slices.Clone(s.v.teamRows), s.v.poolRows[0]
	s.jobOf = make([]int, len(cfg.Jobs))
	for i, j := range cfg.Jobs {
		s.jobOf[i] = -1
		o, ok := s.orgOf[j.Team]
		if !ok {
			continue
		}
		s.arrivals = append(s.arrivals, i)
		if !j.Background {
			s.jobOf[i] = len(s.v.Jobs)
			s.v.Jobs = append(s.v.Jobs, JobView{Job: &Job{ID: j.ID, Team: j.Team, Configuration: map[string]int64{"cpu": 1}},
				Team: o, Units: cpuUnit, Waiting: 0, Enqueued: j.Release})
			s.hours = append(s.hours, j.TaskHours)
		}
	}
	slices.SortStableFunc(s.arrivals, func(a, b int) int {
		return cmpFloat(cfg.Jobs[a].Release, cfg.Jobs[b].Release)
	})
	return s
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// addAggregate adds to s the parts of tasks that all ran over the whole of [t0, t1):
// w units in all, sumWR the sum of each task's units times its job's release.
func (s *side) addAggregate(w, sumWR, t0, t1 float64) {
	d := t1 - t0
	if d <= 0 || w == 0 {
		return
	}
	s.surface += w * d
	s.orig += w * d * d / 2
	s.rel += d * (sumWR - w*(t1+t0)/2)
}

// step handles the next moment something happens; false when nothing is left.
func (s *sim) step() bool {
	t := s.wake
	if s.next < len(s.arrivals) {
		t = min(t, s.cfg.Jobs[s.arrivals[s.next]].Release)
	}
	if len(s.times) > 0 {
		t = min(t, s.times[0])
	}
	if h := s.cfg.Horizon; h > 0 && t > h {
		s.advance(h)
		s.stopAtHorizon(h)
		return false
	}
	if math.IsInf(t, 1) {
		return false
	}
	s.advance(t)
	s.wake = math.Inf(1)
	for len(s.times) > 0 && s.times[0] <= t {
		at := heap.Pop(&s.times).(float64)
		done := s.ends[at]
		for _, task := range done {
			s.finish(task)
		}
		delete(s.ends, at)
		s.spare = append(s.spare, done[:0])
	}
	for s.next < len(s.arrivals) && s.cfg.Jobs[s.arrivals[s.next]].Release <= t {
		s.arrive(s.arrivals[s.next])
		s.next++
	}
	s.startBackground()
	s.startBestEffort()
	return true
}

// advance brings the accounts to t: every running task ran over the whole interval.
func (s *sim) advance(t float64) {
	t0 := s.acc.asOf
	if t <= t0 {
		return
	}
	s.acc.grow(t)
	for o, r := range s.orgRows {
		row := s.acc.at(r, s.poolRow)
		row.use.addAggregate(s.useW[o], s.useR[o], t0, t)
		row.lent.addAggregate(s.lendW[o], s.lendR[o], t0, t)
	}
	s.v.Now = t
}

// stopAtHorizon counts the wait so far of every task not finished at h.
func (s *sim) stopAtHorizon(h float64) {
	for _, t := range s.running {
		if !t.stopped {
			s.res.Wait[t.org] += t.start - t.release
		}
	}
	for _, j := range s.v.Jobs {
		s.res.Wait[j.Team] += float64(j.Waiting) * (h - j.Enqueued)
	}
	s.res.End = h
}

func (s *sim) arrive(i int) {
	j := s.cfg.Jobs[i]
	o := s.orgOf[j.Team]
	if j.Background {
		for range j.Tasks {
			s.bgQueue[o] = append(s.bgQueue[o], bgTask{j.Release, j.TaskHours})
		}
		return
	}
	k := s.jobOf[i]
	s.v.Jobs[k].Waiting = j.Tasks
	s.enqueue(k)
}

// enqueue puts job k in its team's queue, in release order.
func (s *sim) enqueue(k int) {
	q := &s.v.Teams[s.v.Jobs[k].Team].Queue
	at, _ := slices.BinarySearchFunc(*q, k, func(x, k int) int {
		if c := cmpFloat(s.v.Jobs[x].Enqueued, s.v.Jobs[k].Enqueued); c != 0 {
			return c
		}
		return x - k
	})
	*q = slices.Insert(*q, at, k)
}

func (s *sim) dequeue(k int) {
	q := &s.v.Teams[s.v.Jobs[k].Team].Queue
	if len(*q) > 0 && (*q)[0] == k {
		*q = (*q)[1:]
		return
	}
	*q = slices.DeleteFunc(*q, func(x int) bool { return x == k })
}
