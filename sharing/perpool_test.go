package sharing

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Two pools under different policies: cpu by DirectContr (SIMPL), where a lent and
// b used, so a ranks first there; gpu by FairShare, where a used and b did not, so
// b ranks first there. A job's standing is its team's worst rank among its pools:
// a's cpu-only job and b's gpu-only job (each first where it needs units) start
// before the two-pool jobs, whatever their age; ties go to the job waiting longest.
// Preemption in each pool takes that pool's lowest-ranked team's task.
func TestPoolsUnderDifferentPoliciesOrderJobsByTheirWorstRank(t *testing.T) {
	now := epoch
	holdings := []Holding{{Team: "a", Quota: 20}, {Team: "b", Quota: 20}}
	pools := []Pool{
		{Name: "cpu", Capacity: 100, Teams: holdings, Policy: "direct-simpl"},
		{Name: "gpu", Capacity: 100, Teams: holdings, Policy: "fairshare"},
	}
	job := func(id, team string, ageMin int, cfg map[string]int64) Job {
		return Job{ID: id, Team: team, Configuration: cfg, Waiting: 1, Enqueued: now.Add(-time.Duration(ageMin) * time.Minute)}
	}
	both := map[string]int64{"cpu": 1, "gpu": 1}
	jobs := []Job{
		job("a-both", "a", 40, both),
		job("b-both", "b", 30, both),
		job("a-cpu", "a", 20, map[string]int64{"cpu": 1}),
		job("b-gpu", "b", 10, map[string]int64{"gpu": 1}),
	}
	accounts := func() *Accounts {
		acc, err := Restore(State{AsOf: now, Balances: []Balance{
			{Team: "a", Pool: "cpu", LentSurface: 10}, {Team: "b", Pool: "cpu", Surface: 10},
			{Team: "a", Pool: "gpu", Surface: 10},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return acc
	}
	d, err := Decide(&Snapshot{Now: now, Pools: pools, Jobs: jobs}, accounts(), RoundRobin{}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, st := range d.Starts {
		order = append(order, st.Job)
	}
	if want := []string{"a-cpu", "b-gpu", "a-both", "b-both"}; !slices.Equal(order, want) {
		t.Fatalf("start order %v, want %v", order, want)
	}
	if pc, pg := d.PoolPriority["cpu"], d.PoolPriority["gpu"]; !(pc["a"] > pc["b"]) || !(pg["b"] > pg["a"]) {
		t.Fatalf("pool priorities %v", d.PoolPriority)
	}
	q, err := QueueByStanding(&Snapshot{Now: now, Pools: pools, Jobs: jobs}, accounts(), RoundRobin{})
	if err != nil || !slices.Equal(q, order) {
		t.Fatalf("QueueByStanding %v (%v), want %v", q, err, order)
	}
	if _, err := QueueByStanding(&Snapshot{Now: now.Add(time.Hour), Pools: pools, Jobs: jobs}, accounts(), RoundRobin{}); !contains(err, "advance them first") {
		t.Fatalf("accounts behind: %v", err)
	}
	if _, err := QueueByStanding(&Snapshot{Now: now, Pools: pools[:1], Jobs: jobs}, accounts(), RoundRobin{}); !contains(err, "gpu") {
		t.Fatalf("a job of an unknown pool: %v", err)
	}
	// The same cluster under one policy ranks teams over both pools: round robin
	// serves the never-served teams in release order.
	d, err = Decide(&Snapshot{Now: now, Pools: []Pool{{Name: "cpu", Capacity: 100, Teams: holdings}, {Name: "gpu", Capacity: 100, Teams: holdings}},
		Jobs: jobs}, accounts(), RoundRobin{}, rand.New(rand.NewPCG(1, 1)))
	if err != nil || d.PoolPriority != nil || len(d.Starts) != 4 || d.Starts[0].Job != "a-both" {
		t.Fatalf("one policy: %+v, %v", d, err)
	}

	// Both teams run a two-pool task started two hours ago; the owners now use their
	// whole quota and the operator's share is gone: each pool must free one unit.
	full := []Holding{{Team: "a", Quota: 50, Used: 50}, {Team: "b", Quota: 50, Used: 50}}
	crowded := []Pool{
		{Name: "cpu", Capacity: 101, Teams: full, Policy: "direct-simpl"},
		{Name: "gpu", Capacity: 101, Teams: full, Policy: "fairshare"},
	}
	run := func(id, team string) Task {
		return Task{ID: id, Job: "j-" + id, Team: team, Configuration: both, Started: now.Add(-2 * time.Hour), Enqueued: now.Add(-3 * time.Hour),
			Lenders: []Share{{Pool: "cpu", Lender: Operator, Units: 1}, {Pool: "gpu", Lender: Operator, Units: 1}}}
	}
	d, err = Decide(&Snapshot{Now: now, Pools: crowded, Running: []Task{run("ta", "a"), run("tb", "b")}}, accounts(), RoundRobin{}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	// cpu (first by name) frees a unit from b, its lowest; that frees gpu's too.
	if !slices.Equal(d.Preempt, []string{"tb"}) {
		t.Fatalf("preempted %v, want [tb]", d.Preempt)
	}
	crowded[0].Capacity = 102 // now only gpu is short: fairshare's lowest is a
	d, err = Decide(&Snapshot{Now: now, Pools: crowded, Running: []Task{run("ta", "a"), run("tb", "b")}}, accounts(), RoundRobin{}, rand.New(rand.NewPCG(1, 1)))
	if err != nil || !slices.Equal(d.Preempt, []string{"ta"}) {
		t.Fatalf("preempted %v (%v), want [ta]", d.Preempt, err)
	}
}

// With room for every job and policies whose priorities do not move within a
// decision (not round robin), Decide starts a mixed cluster's jobs in the order
// QueueByStanding gives from the same accounts: the order pages show is the rule
// Decide follows, ties included (ages are whole minutes, so jobs often share a
// release).
func TestQueueByStandingIsTheOrderDecideStartsJobs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := epoch
		n := rapid.IntRange(2, 3).Draw(t, "pools")
		var pools []Pool
		for _, p := range genPools(t, n) {
			p.Capacity, p.Exposure = 1000, 0
			for k := range p.Teams {
				p.Teams[k].Used, p.Teams[k].Reserved = 0, 0
			}
			p.Policy = rapid.SampledFrom([]string{"direct-orig", "direct-rel", "direct-simpl", "fairshare"}).Draw(t, "policy")
			pools = append(pools, p)
		}
		if pools[1].Policy == pools[0].Policy {
			pools[1].Policy = map[bool]string{true: "fairshare", false: "direct-orig"}[pools[0].Policy != "fairshare"]
		}
		jobs := genJobs(t, pools, now, "j")
		for k := range jobs {
			jobs[k].Waiting = 1
		}
		s := &Snapshot{Now: now, Pools: pools, Jobs: jobs}
		acc := genAccounts(t, now)
		queue, err := QueueByStanding(s, acc, DirectContr{Orig})
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decide(s, acc, DirectContr{Orig}, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		var started []string
		for _, st := range d.Starts {
			started = append(started, st.Job)
		}
		if len(started) != len(jobs) || !slices.Equal(started, queue) {
			t.Fatalf("Decide started %v, QueueByStanding says %v (pool priorities %v)", started, queue, d.PoolPriority)
		}
	})
}
