package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// us-east's cpu follows DirectContr (SIMPL) and its ram FairShare. An hour of
// search's ram-only job ranks search last in ram, but not in cpu; so search's
// cpu-only job, queued before ads's cpu and ram job, starts first: a job waits only
// for its team's turn in the pools it needs (under FairShare over the whole cluster,
// ads's job would go first). Abacus stays a whole cluster's policy.
func TestPoolsOfOneClusterFollowTheirOwnPolicies(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		set := func(pool, policy string) {
			t.Helper()
			if err := x.be.SetSettings(ctx, fleet.IdleSettings{Pool: pool, Policy: policy, Alpha: 0.5, Exposure: 0}); err != nil {
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
		if p := policies(); p["us-east/cpu"] != "direct-simpl" || p["us-east/ram"] != "fairshare" || p["eu-west/cpu"] != fleet.DefaultPolicy {
			t.Fatalf("policies %v", p)
		}
		ram := x.submit("member@search", fleet.JobSpec{Configuration: map[string]int64{"us-east/ram": 40}, Tasks: 1})
		x.step("us-east")
		x.Clock.Advance(time.Hour)
		alloc, _ := x.be.Allocation(ctx, "us-east")
		if err := x.be.Report(ctx, "us-east", fleet.BestEffortReport{Tasks: []fleet.TaskEvent{{Task: alloc.Run[0].Task, Event: "done", At: x.Clock.Now()}}}); err != nil {
			t.Fatal(err)
		}
		if v := x.job(ram.ID); v.Status != fleet.JobDone {
			t.Fatalf("ram job %s", v.Status)
		}
		first := x.submit("member@search", fleet.JobSpec{Configuration: cpu(5), Tasks: 1})
		x.Clock.Advance(time.Minute)
		second := x.submit("member@ads", fleet.JobSpec{Configuration: map[string]int64{"us-east/cpu": 5, "us-east/ram": 5}, Tasks: 1})
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
		for _, j := range []fleet.JobView{first, second} {
			who := "member@search"
			if j.ID == second.ID {
				who = "member@ads"
			}
			if _, err := x.be.Cancel(ctx, x.Users[who], j.ID); err != nil {
				t.Fatal(err)
			}
		}
		set("us-east/cpu", fleet.PolicyAbacus)
		if p := policies(); p["us-east/cpu"] != fleet.PolicyAbacus || p["us-east/ram"] != fleet.PolicyAbacus {
			t.Fatalf("after abacus: %v", p)
		}
		set("us-east/ram", "round-robin")
		if p := policies(); p["us-east/cpu"] != "round-robin" || p["us-east/ram"] != "round-robin" {
			t.Fatalf("after leaving abacus: %v", p)
		}
	})
}
