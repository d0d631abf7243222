package besteffort_test

import (
	"context"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// us-east's cpu follows DirectContr (SIMPL) and its ram FairShare. An hour of
// search's ram-only job ranks search last in ram, but not in cpu; so search's
// cpu-only job, queued before ads's cpu and ram job, starts first: a job waits only
// for its team's turn in the pools it needs (under FairShare over the whole cluster,
// ads's job would go first). Abacus stays a whole cluster's policy.
func TestPoolsOfOneClusterFollowTheirOwnPolicies(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		set := func(pool, policy string) {
			t.Helper()
			if err := x.be.SetSettings(ctx, besteffort.IdleSettings{Pool: pool, Policy: policy, Alpha: 0.5, Exposure: 0}); err != nil {
				t.Fatal(err)
			}
		}
		policies := func() map[string]string {
			t.Helper()
			sts, err := x.be.Settings(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]string{}
			for _, st := range sts {
				out[st.Pool] = st.Policy
			}
			return out
		}
		set("us-east/cpu", "direct-simpl")
		set("us-east/ram", "fairshare")
		if p := policies(); p["us-east/cpu"] != "direct-simpl" || p["us-east/ram"] != "fairshare" || p["eu-west/cpu"] != besteffort.DefaultPolicy {
			t.Fatalf("policies %v", p)
		}
		ram := x.submit("member@search", besteffort.JobSpec{Configuration: map[string]int64{"us-east/ram": 40}, Tasks: 1})
		x.step("us-east")
		x.Clock.Advance(time.Hour)
		alloc, _ := x.be.Allocation(ctx, "us-east")
		if err := x.be.Report(ctx, "us-east", besteffort.Report{Tasks: []besteffort.TaskEvent{{Task: alloc.Run[0].Task, Event: "done", At: x.Clock.Now()}}}); err != nil {
			t.Fatal(err)
		}
		if v := x.job(ram.ID); v.Status != besteffort.JobDone {
			t.Fatalf("ram job %s", v.Status)
		}
		first := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(5), Tasks: 1})
		x.Clock.Advance(time.Minute)
		second := x.submit("member@ads", besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": 5, "us-east/ram": 5}, Tasks: 1})
		x.step("us-east")
		alloc, _ = x.be.Allocation(ctx, "us-east")
		if len(alloc.Run) != 2 || alloc.Run[0].Job != first.ID || alloc.Run[1].Job != second.ID {
			t.Fatalf("started %+v, want search's job %d then ads's %d", alloc.Run, first.ID, second.ID)
		}
		sr, ar := x.balance("search", "us-east/ram"), x.balance("ads", "us-east/ram")
		sc, ac := x.balance("search", "us-east/cpu"), x.balance("ads", "us-east/cpu")
		if !(sr.Priority < ar.Priority) || sc.Priority != ac.Priority {
			t.Fatalf("priorities: ram search %g ads %g, cpu search %g ads %g", sr.Priority, ar.Priority, sc.Priority, ac.Priority)
		}
		// Abacus covers the cluster: choosing it for one pool chooses it for both (once
		// no job is live), and leaving it for one pool leaves it for both.
		for _, j := range []besteffort.JobView{first, second} {
			who := "member@search"
			if j.ID == second.ID {
				who = "member@ads"
			}
			if _, err := x.be.Cancel(ctx, x.Users[who], j.ID); err != nil {
				t.Fatal(err)
			}
		}
		set("us-east/cpu", besteffort.PolicyAbacus)
		if p := policies(); p["us-east/cpu"] != besteffort.PolicyAbacus || p["us-east/ram"] != besteffort.PolicyAbacus {
			t.Fatalf("after abacus: %v", p)
		}
		set("us-east/ram", "round-robin")
		if p := policies(); p["us-east/cpu"] != "round-robin" || p["us-east/ram"] != "round-robin" {
			t.Fatalf("after leaving abacus: %v", p)
		}
	})
}

// A task counts in the accounts at most its job's maximum task duration, however
// late the service learns it ended: here the next decision comes 3 hours after the
// start of a job whose tasks may run 1 hour.
func TestAccountsCountATaskAtMostItsMaximumDuration(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		j := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(10), Tasks: 1, MaxTaskDuration: time.Hour})
		if r := x.step("us-east"); r.Started != 1 {
			t.Fatalf("started %d", r.Started)
		}
		x.Clock.Advance(3 * time.Hour)
		if r := x.step("us-east"); len(r.Overran) != 1 {
			t.Fatalf("overran %v", r.Overran)
		}
		if v := x.job(j.ID); v.Failed != 1 {
			t.Fatalf("job %+v", v.Job)
		}
		if b := x.balance("search", "us-east/cpu"); !near(b.Surface, 10) {
			t.Fatalf("search used %g unit-hours, want 10 (10 cores for the 1-hour maximum)", b.Surface)
		}
	})
}

// A pool's work beyond the replay's 20,000 one-unit tasks is replayed whole, each
// simulated task standing for several units: here 600 tasks of 50 cores (30,000
// units) as 15,000 tasks of 2 cores. Both jobs are in the report and the Shapley
// values, in unit-hours, still add up to the coalition's wait.
func TestFairnessReportReplaysLargeWorkScaled(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	x := newIdle(t, db)
	x.submit("member@search", besteffort.JobSpec{Configuration: cpu(50), Tasks: 500, MaxTaskDuration: time.Hour})
	x.Clock.Advance(time.Minute)
	x.submit("member@ml", besteffort.JobSpec{Configuration: cpu(50), Tasks: 100, MaxTaskDuration: time.Hour})
	x.step("us-east")
	x.Clock.Advance(30 * time.Minute)
	reports, err := x.be.ComputeFairness(context.Background())
	if err != nil || len(reports) == 0 || len(reports[0].Pools) != 1 {
		t.Fatalf("reports: %+v %v", reports, err)
	}
	p := reports[0].Pools[0]
	sum, teams := 0.0, map[string]float64{}
	for _, tf := range p.Teams {
		sum += tf.Shapley
		teams[tf.Team] = tf.Simulated["fairshare"]
	}
	if p.Scale != 2 || teams["ml"] <= 0 || teams["search"] <= 0 || math.Abs(sum-p.CoalitionValue) > 1e-6*max(1, p.CoalitionValue) {
		t.Fatalf("scale %d, simulated fairshare waits %v, shapley sum %g of %g", p.Scale, teams, sum, p.CoalitionValue)
	}
}

// Queue positions follow the rule decisions follow. us-east's cpu follows
// DirectContr (SIMPL) and its ram FairShare. Search's ram-only tasks rank it last in
// ram (and below ads under the cluster's DirectContr over both pools, the priority
// the last decision stored). Search's cpu-only job, queued first, stands at rank 0
// (in cpu nobody did anything yet), as does ads's cpu and ram job: the older goes
// first, position 1, and the next decision starts it first. Ranking teams by their
// priority over the whole cluster would put ads's job first.
func TestQueuePositionFollowsPoolPolicies(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		for pool, policy := range map[string]string{"us-east/cpu": "direct-simpl", "us-east/ram": "fairshare"} {
			if err := x.be.SetSettings(ctx, besteffort.IdleSettings{Pool: pool, Policy: policy, Alpha: 0.5, Exposure: 0}); err != nil {
				t.Fatal(err)
			}
		}
		x.submit("member@search", besteffort.JobSpec{Configuration: map[string]int64{"us-east/ram": 40}, Tasks: 2})
		x.step("us-east")
		x.Clock.Advance(time.Hour)
		alloc, _ := x.be.Allocation(ctx, "us-east")
		if err := x.be.Report(ctx, "us-east", besteffort.Report{Tasks: []besteffort.TaskEvent{{Task: alloc.Run[0].Task, Event: "done", At: x.Clock.Now()}}}); err != nil {
			t.Fatal(err)
		}
		x.Clock.Advance(time.Hour) // ORIG's utility grows with the time since the run
		x.step("us-east")          // nothing waits: the decision stores the priorities
		var stored []besteffort.IdleTeam
		if err := x.DB.Read.Order("team_id").Find(&stored, "cluster_id = ?", "us-east").Error; err != nil ||
			len(stored) != 2 || stored[0].TeamID != "ads" || !(stored[1].Priority < stored[0].Priority) {
			t.Fatalf("stored priorities over the cluster: %+v (%v), want search's below ads's", stored, err)
		}
		first := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(5), Tasks: 2})
		x.Clock.Advance(time.Minute)
		second := x.submit("member@ads", besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": 5, "us-east/ram": 5}, Tasks: 1})
		f, s := x.job(first.ID), x.job(second.ID)
		if f.Position != 1 || s.Position != 3 {
			t.Fatalf("positions: search's cpu job %d, ads's cpu and ram job %d; want 1 and 3", f.Position, s.Position)
		}
		if f.Policy != besteffort.PolicyPerPool || !maps.Equal(f.PoolPolicies, map[string]string{"us-east/cpu": "direct-simpl"}) ||
			!maps.Equal(s.PoolPolicies, map[string]string{"us-east/cpu": "direct-simpl", "us-east/ram": "fairshare"}) {
			t.Fatalf("policies: %s %v, %s %v", f.Policy, f.PoolPolicies, s.Policy, s.PoolPolicies)
		}
		x.step("us-east")
		alloc, _ = x.be.Allocation(ctx, "us-east")
		var started []int64
		for _, r := range alloc.Run {
			started = append(started, r.Job)
		}
		if !slices.Equal(started[1:], []int64{first.ID, first.ID, second.ID}) {
			t.Fatalf("running jobs %v, want search's ram job, then %d twice, then %d", started, first.ID, second.ID)
		}
		// eu-west follows one policy: the job view names it, for each pool too.
		eu := x.submit("member@search", besteffort.JobSpec{Configuration: map[string]int64{"eu-west/cpu": 1}, Tasks: 1})
		if v := x.job(eu.ID); v.Policy != besteffort.DefaultPolicy || v.Position != 1 || !maps.Equal(v.PoolPolicies, map[string]string{"eu-west/cpu": besteffort.DefaultPolicy}) {
			t.Fatalf("eu-west job: %s %v, position %d", v.Policy, v.PoolPolicies, v.Position)
		}
	})
}
