package sharing

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// bigView is one pool of 100,000 units with 1,000 teams, each with 10 jobs of 10
// waiting tasks (100,000 queued tasks), and accounts with a balance for every team.
func bigView() (*View, *Accounts) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := &View{Pools: []PoolView{{Name: "cpu", Capacity: 100_000, Room: 5_000}}}
	s := State{AsOf: epoch}
	for t := range 1000 {
		name := fmt.Sprintf("team%04d", t)
		v.Teams = append(v.Teams, TeamView{Name: name, Share: 1.0 / 1000})
		for k := range 10 {
			v.Jobs = append(v.Jobs, JobView{Job: &Job{ID: fmt.Sprint(name, "/", k), Team: name}, Team: t,
				Units: []PoolUnits{{0, int64(1 + rng.IntN(4))}}, Waiting: 10, Enqueued: rng.Float64() * 100})
			v.Teams[t].Queue = append(v.Teams[t].Queue, len(v.Jobs)-1)
		}
		x := func() float64 { return rng.Float64() * 1e6 }
		s.Balances = append(s.Balances, Balance{Team: name, Pool: "cpu", Surface: x(), Orig: x(), Rel: x(), LentSurface: x(), LentOrig: x(), LentRel: x()})
		s.Served = append(s.Served, Served{Team: name, Seq: int64(t)})
	}
	s.Seq = 1000
	acc, err := Restore(s)
	if err != nil {
		panic(err)
	}
	return v, acc
}

// One policy decision (which job's task runs next) among 1,000 teams and 100,000
// queued tasks. Goal: under 100 microseconds.
func BenchmarkChooseThousandTeams(b *testing.B) {
	for _, name := range Names() {
		b.Run(name, func(b *testing.B) {
			v, acc := bigView()
			p, _ := ByName(name)
			rng := rand.New(rand.NewPCG(1, 1))
			p.Choose(v, acc, rng) // bind the view to the accounts once, as Decide does
			b.ResetTimer()
			for b.Loop() {
				if p.Choose(v, acc, rng) < 0 {
					b.Fatal("nothing chosen")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
		})
	}
}

// bigMixedView is bigView's 1,000 teams, each with 10 jobs of 10 waiting tasks, in
// a cluster of four pools under three policies (cpu and ram DirectContr ORIG, gpu
// FairShare, ssd round robin); each job needs one or two pools. Accounts hold a
// balance for every team in every pool.
func bigMixedView() (*View, *Accounts, []Policy) {
	rng := rand.New(rand.NewPCG(5, 6))
	names := []string{"cpu", "gpu", "ram", "ssd"}
	var pols []Policy
	v := &View{}
	for _, pool := range names {
		v.Pools = append(v.Pools, PoolView{Name: pool, Capacity: 100_000, Room: 5_000})
		p, _ := ByName(map[string]string{"cpu": "direct-orig", "gpu": "fairshare", "ram": "direct-orig", "ssd": "round-robin"}[pool])
		pols = append(pols, p)
	}
	s := State{AsOf: epoch}
	x := func() float64 { return rng.Float64() * 1e6 }
	for t := range 1000 {
		name := fmt.Sprintf("team%04d", t)
		v.Teams = append(v.Teams, TeamView{Name: name, Share: 1.0 / 1000})
		for k := range 10 {
			first := rng.IntN(len(names))
			units := []PoolUnits{{first, int64(1 + rng.IntN(4))}}
			if second := rng.IntN(len(names)); rng.IntN(2) == 0 && second != first {
				units = append(units, PoolUnits{second, int64(1 + rng.IntN(4))})
				slices.SortFunc(units, func(a, b PoolUnits) int { return a.Pool - b.Pool })
			}
			v.Jobs = append(v.Jobs, JobView{Job: &Job{ID: fmt.Sprint(name, "/", k), Team: name}, Team: t,
				Units: units, Waiting: 10, Enqueued: rng.Float64() * 100})
			v.Teams[t].Queue = append(v.Teams[t].Queue, len(v.Jobs)-1)
		}
		for _, pool := range names {
			s.Balances = append(s.Balances, Balance{Team: name, Pool: pool, Surface: x(), Orig: x(), Rel: x(), LentSurface: x(), LentOrig: x(), LentRel: x()})
		}
		s.Served = append(s.Served, Served{Team: name, Seq: int64(t)})
	}
	s.Seq = 1000
	acc, err := Restore(s)
	if err != nil {
		panic(err)
	}
	return v, acc, pols
}

// One decision (which job's task runs next) in a cluster whose four pools follow
// three policies, among 1,000 teams and 100,000 queued tasks: ChooseThousandTeams
// under the rule of perpool.go. Goal: under 100 microseconds.
func BenchmarkChooseThousandTeamsMixedPolicies(b *testing.B) {
	v, acc, pols := bigMixedView()
	m := newPerPool(v, pols)
	m.choose(v, acc) // bind the views to the accounts once, as Decide does
	for b.Loop() {
		if m.choose(v, acc) < 0 {
			b.Fatal("nothing chosen")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
}

// The same, each choice following a start as in Decide: the chosen job's team is
// marked served (round robin's ranking moves), while room and queues are kept as
// they were so every choice has the same work.
func BenchmarkChooseThousandTeamsMixedPoliciesAfterStart(b *testing.B) {
	v, acc, pols := bigMixedView()
	m := newPerPool(v, pols)
	v.bind(acc)
	m.choose(v, acc)
	for b.Loop() {
		j := m.choose(v, acc)
		if j < 0 {
			b.Fatal("nothing chosen")
		}
		acc.markServed(v.teamRows[v.Jobs[j].Team])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
}

// The first choice of a decision in the same cluster: every pool ranked and the
// waiting jobs indexed from scratch.
func BenchmarkChooseThousandTeamsMixedPoliciesFirst(b *testing.B) {
	v, acc, pols := bigMixedView()
	newPerPool(v, pols).choose(v, acc) // bind the views to the accounts once
	for b.Loop() {
		if newPerPool(v, pols).choose(v, acc) < 0 {
			b.Fatal("nothing chosen")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/decision")
}

// A whole snapshot step: 1,000 teams holding quota in two pools, 10,000 jobs with
// 100,000 waiting tasks, 2,000 tasks running, room for about a thousand more.
func BenchmarkDecideThousandTeams(b *testing.B) {
	benchmarkDecide(b, thousandTeams("", ""))
}

// The same with the two pools under different policies (cpu DirectContr ORIG, ram
// FairShare): every start is a choice under the rule of perpool.go.
func BenchmarkDecideThousandTeamsMixedPolicies(b *testing.B) {
	benchmarkDecide(b, thousandTeams("direct-orig", "fairshare"))
}

// thousandTeams is the snapshot of DecideThousandTeams, its cpu and ram pools
// following the policies given ("" follows the cluster's).
func thousandTeams(cpuPolicy, ramPolicy string) *Snapshot {
	rng := rand.New(rand.NewPCG(3, 4))
	now := epoch.Add(24 * time.Hour)
	s := &Snapshot{Now: now}
	for _, pool := range []string{"cpu", "ram"} {
		p := Pool{Name: pool, Capacity: 12_000, MinRuntime: 10 * time.Minute, Exposure: DefaultExposure,
			Policy: map[string]string{"cpu": cpuPolicy, "ram": ramPolicy}[pool]}
		for t := range 1000 {
			p.Teams = append(p.Teams, Holding{Team: fmt.Sprintf("team%04d", t), Quota: 10, Used: int64(rng.IntN(6))})
		}
		s.Pools = append(s.Pools, p)
	}
	for j := range 10_000 {
		team := fmt.Sprintf("team%04d", rng.IntN(1000))
		s.Jobs = append(s.Jobs, Job{ID: fmt.Sprint("j", j), Team: team, Configuration: map[string]int64{"cpu": 1, "ram": 1},
			Waiting: 10, Enqueued: now.Add(-time.Duration(rng.IntN(3600)) * time.Second)})
	}
	for k := range 2000 {
		lender := fmt.Sprintf("team%04d", k%1000)
		s.Running = append(s.Running, Task{ID: fmt.Sprint("t", k), Job: "j0", Team: fmt.Sprintf("team%04d", rng.IntN(1000)),
			Configuration: map[string]int64{"cpu": 1, "ram": 1}, Started: now.Add(-time.Hour), Enqueued: now.Add(-2 * time.Hour),
			Lenders: []Share{{"cpu", lender, 1}, {"ram", lender, 1}}})
	}
	return s
}

func benchmarkDecide(b *testing.B, s *Snapshot) {
	acc := NewAccounts(s.Now)
	p := DirectContr{Orig}
	starts := 0
	for b.Loop() {
		d, err := Decide(s, acc, p, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			b.Fatal(err)
		}
		starts = 0
		for _, st := range d.Starts {
			starts += st.Tasks
		}
	}
	b.ReportMetric(float64(starts), "tasks-started")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/snapshot")
}

// Exact Shapley values for 12 teams over one day: all 4,095 coalitions simulated
// under one policy (a day of about 3,500 one-hour tasks on 240 processors).
func BenchmarkExactShapleyTwelveTeams(b *testing.B) {
	orgs, jobs := dayOf(12, 20, 7)
	var coalitions int
	for b.Loop() {
		ev, err := Evaluate(Experiment{Orgs: orgs, Jobs: jobs, Policies: []Policy{DirectContr{Orig}}, Seed: 1})
		if err != nil || !ev.Exact {
			b.Fatal(err)
		}
		coalitions = ev.Coalitions
	}
	b.ReportMetric(float64(coalitions), "coalitions")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/evaluation")
}
