package sharing

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"pgregory.net/rapid"
)

var poolNames = []string{"cpu", "gpu", "ram"}
var teamNames = []string{"a", "b", "c", "d"}

// genPools draws one cluster's pools and holdings; demand may exceed quota and quota
// may exceed capacity.
func genPools(t *rapid.T, n int) []Pool {
	var pools []Pool
	for _, name := range poolNames[:n] {
		p := Pool{Name: name, MinRuntime: time.Duration(rapid.IntRange(0, 4).Draw(t, "minRuntime")) * 30 * time.Minute,
			Exposure: rapid.SampledFrom([]float64{0, 0.1, DefaultExposure, 0.5}).Draw(t, "exposure"),
			Policy:   rapid.SampledFrom(append([]string{"", "", ""}, Names()...)).Draw(t, "poolPolicy")}
		var quota int64
		for _, team := range teamNames {
			if rapid.IntRange(0, 3).Draw(t, "holds") == 0 {
				continue
			}
			q := int64(rapid.IntRange(0, 15).Draw(t, "quota"))
			quota += q
			p.Teams = append(p.Teams, Holding{Team: team, Quota: q, Used: int64(rapid.IntRange(0, int(q)+1).Draw(t, "used")),
				Reserved: int64(rapid.IntRange(0, int(q)).Draw(t, "reserved"))})
		}
		p.Capacity = max(0, quota+int64(rapid.IntRange(-3, 12).Draw(t, "unsold")))
		pools = append(pools, p)
	}
	return pools
}

func genJobs(t *rapid.T, pools []Pool, now time.Time, prefix string) []Job {
	var jobs []Job
	for i := range rapid.IntRange(0, 6).Draw(t, "jobs") {
		cfg := map[string]int64{}
		for _, p := range pools {
			if len(cfg) == 0 || rapid.Bool().Draw(t, "uses") {
				cfg[p.Name] = int64(rapid.IntRange(1, 5).Draw(t, "units"))
			}
		}
		jobs = append(jobs, Job{ID: fmt.Sprint(prefix, i), Team: rapid.SampledFrom(teamNames).Draw(t, "team"), Configuration: cfg,
			Waiting: rapid.IntRange(1, 20).Draw(t, "waiting"), Enqueued: now.Add(-time.Duration(rapid.IntRange(0, 600).Draw(t, "age")) * time.Minute)})
	}
	return jobs
}

func genAccounts(t *rapid.T, asOf time.Time) *Accounts {
	s := State{AsOf: asOf}
	for _, team := range teamNames {
		for _, pool := range poolNames {
			if rapid.Bool().Draw(t, "balance") {
				x := func() float64 { return float64(rapid.IntRange(0, 100).Draw(t, "x")) }
				s.Balances = append(s.Balances, Balance{Team: team, Pool: pool, Surface: x(), Orig: x(), Rel: x() - 50, LentSurface: x(), LentOrig: x(), LentRel: x() - 50})
			}
		}
	}
	acc, err := Restore(s)
	if err != nil {
		t.Fatal(err)
	}
	return acc
}

// tasksOf turns a decision's starts into the running tasks the cluster reports back.
func tasksOf(s *Snapshot, d Decision, started time.Time) []Task {
	byID := map[string]Job{}
	for _, j := range s.Jobs {
		byID[j.ID] = j
	}
	var out []Task
	for _, st := range d.Starts {
		j := byID[st.Job]
		for k := range st.Tasks {
			t := Task{ID: fmt.Sprintf("%s/%d", st.Job, k), Job: st.Job, Team: st.Team, Configuration: j.Configuration, Started: started, Enqueued: j.Enqueued}
			for _, sh := range st.Lenders {
				t.Lenders = append(t.Lenders, Share{Pool: sh.Pool, Lender: sh.Lender, Units: sh.Units / float64(st.Tasks)})
			}
			out = append(out, t)
		}
	}
	return out
}

// genScenario draws a cluster, decides once, lets the started tasks run, changes the
// holdings, and returns the second snapshot with accounts advanced to its Now.
func genScenario(t *rapid.T) (*Snapshot, *Accounts) {
	n := rapid.IntRange(1, 3).Draw(t, "pools")
	t0 := epoch
	s0 := &Snapshot{Now: t0, Pools: genPools(t, n)}
	s0.Jobs = genJobs(t, s0.Pools, t0, "j")
	acc := genAccounts(t, t0)
	d0, err := Decide(s0, acc, genPolicy(t), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Duration(rapid.IntRange(0, 6).Draw(t, "elapsed")) * 30 * time.Minute)
	running := tasksOf(s0, d0, t0)
	var runs []Run
	for _, r := range running {
		runs = append(runs, Run{Task: r})
	}
	if err := acc.Advance(runs, now); err != nil {
		t.Fatal(err)
	}
	s1 := &Snapshot{Now: now, Pools: genPools(t, n), Running: running}
	// keep every lender of the running tasks listed in its pool
	for i := range s1.Pools {
		for _, old := range s0.Pools[i].Teams {
			if !slices.ContainsFunc(s1.Pools[i].Teams, func(h Holding) bool { return h.Team == old.Team }) {
				s1.Pools[i].Teams = append(s1.Pools[i].Teams, Holding{Team: old.Team, Used: old.Used})
			}
		}
	}
	s1.Jobs = genJobs(t, s1.Pools, now, "k")
	return s1, acc
}

func genPolicy(t *rapid.T) Policy {
	p, _ := ByName(rapid.SampledFrom(Names()).Draw(t, "policy"))
	return p
}

type outcome struct {
	be    map[string]int64              // best-effort units per pool after the decision
	lent  map[string]map[string]float64 // units per pool and lender after the decision
	tasks map[string]*Task
}

func apply(s *Snapshot, d Decision) outcome {
	o := outcome{be: map[string]int64{}, lent: map[string]map[string]float64{}, tasks: map[string]*Task{}}
	stopped := map[string]bool{}
	for _, id := range d.Preempt {
		stopped[id] = true
	}
	moved := map[string][]Share{}
	for _, r := range d.Reattributed {
		moved[r.Task] = r.Lenders
	}
	add := func(cfg map[string]int64, times int64, lenders []Share) {
		for pool, u := range cfg {
			o.be[pool] += u * times
		}
		for _, sh := range lenders {
			if o.lent[sh.Pool] == nil {
				o.lent[sh.Pool] = map[string]float64{}
			}
			o.lent[sh.Pool][sh.Lender] += sh.Units
		}
	}
	for i := range s.Running {
		r := &s.Running[i]
		o.tasks[r.ID] = r
		if stopped[r.ID] {
			continue
		}
		lenders := r.Lenders
		if m, ok := moved[r.ID]; ok {
			lenders = m
		}
		add(r.Configuration, 1, lenders)
	}
	jobs := map[string]Job{}
	for _, j := range s.Jobs {
		jobs[j.ID] = j
	}
	for _, st := range d.Starts {
		add(jobs[st.Job].Configuration, int64(st.Tasks), st.Lenders)
	}
	return o
}

func demand(p Pool) (d int64) {
	for _, h := range p.Teams {
		d += max(h.Used, h.Reserved)
	}
	return d
}

func sumShares(shares []Share, pool string) (s float64) {
	for _, sh := range shares {
		if sh.Pool == pool {
			s += sh.Units
		}
	}
	return s
}

// Decisions never run a pool over its capacity (what cannot be freed yet is reported),
// keep the exposure threshold, preempt only tasks past the minimum runtime, attribute
// exactly the units started, within what each lender has idle, and are deterministic.
func TestDecideKeepsCapacityExposureAndMinimumRuntime(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, acc := genScenario(t)
		p := genPolicy(t)
		before := acc.Export()
		d, err := Decide(s, acc, p, rand.New(rand.NewPCG(7, 7)))
		if err != nil {
			t.Fatal(err)
		}
		o := apply(s, d)
		blocked := map[string]int64{}
		for _, b := range d.Blocked {
			blocked[b.Pool] = b.Units
		}
		used := map[string]bool{}
		jobs := map[string]Job{}
		for _, j := range s.Jobs {
			jobs[j.ID] = j
		}
		for _, st := range d.Starts {
			j := jobs[st.Job]
			if st.Tasks < 1 || st.Tasks > j.Waiting || st.Team != j.Team {
				t.Fatalf("start %+v of job %+v", st, j)
			}
			for pool, u := range j.Configuration {
				used[pool] = true
				if got := sumShares(st.Lenders, pool); math.Abs(got-float64(u*int64(st.Tasks))) > 1e-6 {
					t.Fatalf("start %+v: lenders of %s sum to %v, want %d", st, pool, got, u*int64(st.Tasks))
				}
			}
		}
		for _, p := range s.Pools {
			over := demand(p) + o.be[p.Name] - p.Capacity
			if max(over, 0) != blocked[p.Name] {
				t.Fatalf("pool %s: %d units over capacity after the decision, %d reported blocked", p.Name, over, blocked[p.Name])
			}
			if used[p.Name] && p.Capacity-demand(p)-o.be[p.Name] < int64(math.Ceil(p.Exposure*float64(p.Capacity)-1e-9)) {
				t.Fatalf("pool %s: started tasks leave %d of %d units free, under the exposure threshold %v",
					p.Name, p.Capacity-demand(p)-o.be[p.Name], p.Capacity, p.Exposure)
			}
			if blocked[p.Name] > 0 {
				continue
			}
			for _, h := range p.Teams {
				if idle := float64(max(0, h.Quota-max(h.Used, h.Reserved))); o.lent[p.Name][h.Team] > idle+1e-6 {
					t.Fatalf("pool %s: %s lends %v units but has %v idle", p.Name, h.Team, o.lent[p.Name][h.Team], idle)
				}
			}
		}
		for _, id := range d.Preempt {
			task := o.tasks[id]
			ok := false
			for _, p := range s.Pools {
				ok = ok || task.Configuration[p.Name] > 0 && s.Now.Sub(task.Started) >= p.MinRuntime
			}
			if !ok {
				t.Fatalf("task %s preempted after %v, under its pools' minimum runtime", id, s.Now.Sub(task.Started))
			}
		}
		for _, r := range d.Reattributed {
			for pool, u := range o.tasks[r.Task].Configuration {
				if got := sumShares(r.Lenders, pool); math.Abs(got-float64(u)) > 1e-6 {
					t.Fatalf("task %s re-attributed %v units of %s, has %d", r.Task, got, pool, u)
				}
			}
		}
		again, err := Restore(before)
		if err != nil {
			t.Fatal(err)
		}
		d2, err := Decide(s, again, p, rand.New(rand.NewPCG(7, 7)))
		if err != nil || !reflect.DeepEqual(d, d2) {
			t.Fatalf("the same snapshot decided twice differs:\n%+v\n%+v", d, d2)
		}
	})
}

func simpleSnapshot() *Snapshot {
	return &Snapshot{Now: at(2), Pools: []Pool{{Name: "cpu", Capacity: 10, Teams: []Holding{
		{Team: "a", Quota: 6}, {Team: "b", Quota: 4, Used: 4}}}},
		Jobs: []Job{{ID: "j1", Team: "b", Configuration: map[string]int64{"cpu": 1}, Waiting: 3, Enqueued: at(1)}}}
}

func TestDecideRefusesBadSnapshots(t *testing.T) {
	for _, tc := range []struct {
		change func(*Snapshot)
		want   string
	}{
		{func(s *Snapshot) { s.Now = time.Time{} }, "now"},
		{func(s *Snapshot) { s.Pools[0].Capacity = -1 }, "pools[0]: capacity"},
		{func(s *Snapshot) { s.Pools[0].Exposure = 1 }, "pools[0]: exposure"},
		{func(s *Snapshot) { s.Pools[0].MinRuntime = -time.Second }, "pools[0]: min runtime"},
		{func(s *Snapshot) { s.Pools[0].Teams[0].Team = Operator }, "pools[0]: teams"},
		{func(s *Snapshot) { s.Pools[0].Teams[1].Quota = -3 }, "pools[0]: teams"},
		{func(s *Snapshot) { s.Jobs[0].Waiting = 0 }, "jobs[0] (\"j1\"): waiting"},
		{func(s *Snapshot) { s.Jobs[0].Configuration = map[string]int64{"gpu": 1} }, "pool \"gpu\" is not in this cluster"},
		{func(s *Snapshot) { s.Jobs[0].Configuration = map[string]int64{"cpu": 0} }, "at least 1 unit"},
		{func(s *Snapshot) { s.Jobs[0].Budget = -1 }, "budget"},
		{func(s *Snapshot) { s.Jobs[0].Utility = "quadratic" }, "utility"},
		{func(s *Snapshot) { s.Jobs[0].Weights = map[string]float64{"cpu": 0} }, "weights"},
		{func(s *Snapshot) {
			s.Running = []Task{{ID: "t", Team: "b", Configuration: map[string]int64{"cpu": 2}, Started: at(1), Enqueued: at(1),
				Lenders: []Share{{"cpu", "a", 1}}}}
		}, "running[0] (\"t\"): lenders"},
		{func(s *Snapshot) {
			s.Running = []Task{{ID: "t", Team: "b", Configuration: map[string]int64{"cpu": 1}, Started: at(3), Enqueued: at(1),
				Lenders: []Share{{"cpu", "a", 1}}}}
		}, "started: after now"},
		{func(s *Snapshot) {
			s.Running = []Task{{ID: "t", Team: "b", Configuration: map[string]int64{"cpu": 1}, Started: at(1), Enqueued: at(1),
				Lenders: []Share{{"cpu", "z", 1}}}}
		}, "\"z\" is not listed"},
	} {
		s := simpleSnapshot()
		tc.change(s)
		acc := NewAccounts(s.Now)
		_, err := Decide(s, acc, DirectContr{Orig}, rand.New(rand.NewPCG(1, 1)))
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !contains(err, tc.want) {
			t.Errorf("want EINVALID with %q, got %v", tc.want, err)
		}
	}
}

func TestDecideNeedsAccountsUpToDate(t *testing.T) {
	s := simpleSnapshot()
	_, err := Decide(s, NewAccounts(at(1)), FairShare{}, rand.New(rand.NewPCG(1, 1)))
	if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !contains(err, "advance them first") {
		t.Fatalf("stale accounts: %v", err)
	}
}

// B's tasks go on A's idle quota; A takes 2 units back: the tasks move to the
// operator's idle capacity without stopping; when nothing is idle, B's newest task past
// the minimum runtime stops.
func TestDecideReattributesBeforePreempting(t *testing.T) {
	s := simpleSnapshot()
	s.Pools[0].Capacity = 12 // 2 units for the operator
	acc := NewAccounts(s.Now)
	d, err := Decide(s, acc, DirectContr{Orig}, rand.New(rand.NewPCG(1, 1)))
	if err != nil || len(d.Starts) != 1 || d.Starts[0].Tasks != 3 {
		t.Fatalf("%+v %v", d, err)
	}
	if got := sumShares(d.Starts[0].Lenders, "cpu"); got != 3 {
		t.Fatalf("lenders %+v", d.Starts[0].Lenders)
	}
	for _, sh := range d.Starts[0].Lenders { // proportional to idle: a 6, operator 2
		if want := map[string]float64{"a": 2.25, Operator: 0.75}[sh.Lender]; math.Abs(sh.Units-want) > 1e-9 {
			t.Fatalf("lender %s got %v, want %v (in proportion to idle units)", sh.Lender, sh.Units, want)
		}
	}
	running := tasksOf(s, d, s.Now)
	running[2].Started = at(2.5) // the newest
	s2 := &Snapshot{Now: at(3), Running: running, Pools: []Pool{{Name: "cpu", Capacity: 12, MinRuntime: 45 * time.Minute,
		Teams: []Holding{{Team: "a", Quota: 6, Used: 5}, {Team: "b", Quota: 4, Used: 4}}}}}
	acc2 := NewAccounts(s2.Now)
	d2, err := Decide(s2, acc2, DirectContr{Orig}, rand.New(rand.NewPCG(1, 1)))
	if err != nil || len(d2.Preempt) != 0 || len(d2.Reattributed) == 0 {
		t.Fatalf("a's demand 5 of 6 leaves 1 idle, the operator has 2: re-attribute, do not preempt: %+v %v", d2, err)
	}
	o := apply(s2, d2)
	if o.lent["cpu"]["a"] > 1+1e-9 || math.Abs(o.lent["cpu"][Operator]-2) > 1e-9 {
		t.Fatalf("after re-attribution a lends %v (idle 1), the operator %v (idle 2)", o.lent["cpu"]["a"], o.lent["cpu"][Operator])
	}
	s2.Pools[0].Teams[0].Used = 8 // demand 12 of 12: every best-effort unit must go
	d3, err := Decide(s2, acc2, DirectContr{Orig}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(d3.Preempt) != 2 || slices.Contains(d3.Preempt, running[2].ID) || len(d3.Blocked) != 1 || d3.Blocked[0].Units != 1 {
		t.Fatalf("want the two tasks past the 45-minute minimum preempted and 1 unit blocked by the newest: %+v", d3)
	}
}

// A team's own idle quota goes first to its own tasks.
func TestDecideUsesOwnQuotaFirst(t *testing.T) {
	s := simpleSnapshot()
	s.Jobs[0].Team = "a"
	d, err := Decide(s, NewAccounts(s.Now), RoundRobin{}, rand.New(rand.NewPCG(1, 1)))
	if err != nil || len(d.Starts) != 1 || !reflect.DeepEqual(d.Starts[0].Lenders, []Share{{"cpu", "a", 3}}) {
		t.Fatalf("%+v %v", d, err)
	}
}

// A task needing two pools starts only when both have room.
func TestDecideNeedsRoomInEveryPool(t *testing.T) {
	s := &Snapshot{Now: at(1), Pools: []Pool{
		{Name: "cpu", Capacity: 10, Teams: []Holding{{Team: "a", Quota: 10}}},
		{Name: "ram", Capacity: 40, Teams: []Holding{{Team: "a", Quota: 40, Used: 35}}}},
		Jobs: []Job{{ID: "j", Team: "b", Configuration: map[string]int64{"cpu": 1, "ram": 2}, Waiting: 9, Enqueued: at(0)}}}
	d, err := Decide(s, NewAccounts(s.Now), FairShare{}, rand.New(rand.NewPCG(1, 1)))
	if err != nil || len(d.Starts) != 1 || d.Starts[0].Tasks != 2 {
		t.Fatalf("5 free units of ram make room for 2 tasks of 2: %+v %v", d, err)
	}
	s.Pools[1].Exposure = DefaultExposure
	d, err = Decide(s, NewAccounts(s.Now), FairShare{}, rand.New(rand.NewPCG(1, 1)))
	if err != nil || len(d.Starts) != 0 {
		t.Fatalf("ram must keep 12 of 40 units free: no start: %+v %v", d, err)
	}
}

// Accounts stored with microseconds (PostgreSQL) and read back still match Now.
func TestDecideAcceptsAccountsStoredToTheMicrosecond(t *testing.T) {
	s := simpleSnapshot()
	s.Now = s.Now.Add(123456789 * time.Nanosecond)
	acc := NewAccounts(epoch)
	if err := acc.Advance(nil, s.Now); err != nil {
		t.Fatal(err)
	}
	st := acc.Export()
	st.AsOf = st.AsOf.Truncate(time.Microsecond)
	back, err := Restore(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decide(s, back, FairShare{}, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Fatalf("accounts read back to the microsecond: %v", err)
	}
	if err := back.Advance(nil, s.Now); err != nil {
		t.Fatalf("advancing to the same moment: %v", err)
	}
}

// fixedPriorities is a policy whose team priorities are given, for tests of the
// decider's own rules.
type fixedPriorities map[string]float64

func (fixedPriorities) Name() string { return "fixed" }
func (p fixedPriorities) Priorities(v *View, _ *Accounts, out []float64) {
	for t, tv := range v.Teams {
		out[t] = p[tv.Name]
	}
}
func (fixedPriorities) Choose(*View, *Accounts, *rand.Rand) int { return -1 }
func (p fixedPriorities) Victim(v *View, acc *Accounts, candidates []int, _ *rand.Rand) int {
	return victimOfLowest(v, acc, p, candidates)
}

// Preemption chooses among the tasks past the minimum runtime: when the
// lowest-priority team's only task is younger than that, the owner gets its units
// back now from the next team's task that may stop, rather than waiting.
func TestPreemptionPassesOverTasksYoungerThanTheMinimum(t *testing.T) {
	s := &Snapshot{Now: at(3), Pools: []Pool{{Name: "cpu", Capacity: 10, MinRuntime: 30 * time.Minute,
		Teams: []Holding{{Team: "a", Quota: 10, Used: 9}}}},
		Running: []Task{
			{ID: "b-young", Job: "jb", Team: "b", Configuration: map[string]int64{"cpu": 1}, Started: at(2.9), Enqueued: at(0), Lenders: []Share{{"cpu", "a", 1}}},
			{ID: "c-old", Job: "jc", Team: "c", Configuration: map[string]int64{"cpu": 1}, Started: at(1), Enqueued: at(0), Lenders: []Share{{"cpu", "a", 1}}},
			{ID: "b-old", Job: "jb", Team: "b", Configuration: map[string]int64{"cpu": 1}, Started: at(0.5), Enqueued: at(0), Lenders: []Share{{"cpu", "a", 1}}},
		}}
	// Demand 9 and three tasks on 10 units: two must stop. b (priority -1) is the
	// lowest: its old task goes first; its young one may not stop yet, so c's goes.
	d, err := Decide(s, NewAccounts(s.Now), fixedPriorities{"b": -1, "c": 1}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Preempt, []string{"b-old", "c-old"}) || len(d.Blocked) != 0 {
		t.Fatalf("preempted %v (blocked %v); want b's old task, then c's", d.Preempt, d.Blocked)
	}
}
