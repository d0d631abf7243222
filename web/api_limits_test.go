package web_test

import (
	"context"
	"fmt"
	"github.com/clearhouse/clearhouse/auction"
	"net/http"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// limitRow is team's row of an allocation's limits (nil when none).
func limitRow(alloc map[string]any, team, pool string) map[string]any {
	ls, _ := alloc["limits"].([]any)
	for _, l := range ls {
		if l := l.(map[string]any); l["team"] == team && l["pool"] == pool {
			return l
		}
	}
	return nil
}

// The allocation's limits follow the one rule: a reservation inside the team's quota
// does not raise it, an offer does not cut it (quotas, what owner_usage reports
// against, still leave the offer out), best-effort grants come apart. An agent's
// over_limit is kept from its first report; under an evict policy the allocation
// lists it in reclaim once the grace has passed; a report of what was reclaimed, and
// without the excess, clears it. A bad over_limit row refuses the report.
func TestTheAllocationSendsLimitsOverLimitPolicyAndReclaims(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixtureOn(t, db, web.Config{LoginRate: 5, PublicURL: "http://127.0.0.1"})
		f.cpuPool()
		ctx := context.Background()
		if err := f.market.GrantQuota(ctx, "search", "us-east/cpu", 40); err != nil {
			t.Fatal(err)
		}
		if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
			t.Fatal(err)
		}
		if _, err := f.market.OpenDue(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Budget: 100 * ledger.Dollar}); err != nil {
			t.Fatal(err)
		}
		owner := f.user("olga@x.io", identity.RoleOwner, "search")
		member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
		adsMember := f.token(f.user("bo@x.io", identity.RoleMember, "ads"))
		agent, _, err := f.id.IssueAgentToken(ctx, "us-east", "agent")
		if err != nil {
			t.Fatal(err)
		}
		alloc := func() map[string]any {
			t.Helper()
			code, a := f.api(agent, "GET", "/api/v1/clusters/us-east/allocation", "")
			if code != http.StatusOK {
				t.Fatalf("allocation: %d %v", code, a)
			}
			return a
		}
		want := func(a map[string]any, team string, units, held, offered, reserved, be float64) {
			t.Helper()
			l := limitRow(a, team, "us-east/cpu")
			if l == nil || l["units"] != units || l["held"] != held || l["offered"] != offered || l["reserved"] != reserved || l["best_effort"] != be {
				t.Fatalf("%s's limit %v, want units %v = held %v + reserved %v (offered %v), best-effort %v", team, l, units, held, reserved, offered, be)
			}
		}
		// A reservation of 10 cores inside search's 40 runs now: free, no raise.
		code, body := f.api(member, "POST", "/api/v1/reservations/new", "")
		if code != http.StatusCreated {
			t.Fatalf("new: %d %v", code, body)
		}
		if code, r := f.api(member, "POST", "/api/v1/reservations", f.definition(int64(body["id"].(float64)), 10, "1h", 0, 2*time.Hour, `"5"`)); code != http.StatusCreated || r["price"] != "0.00" {
			t.Fatalf("a reservation inside the quota: %d %v", code, r)
		}
		a := alloc()
		if run, _ := a["running"].([]any); len(run) != 1 {
			t.Fatalf("running %v, want the reservation", a["running"])
		}
		want(a, "search", 40, 40, 0, 0, 0)
		// search offers 10 cores: its limit stays 40 until a sale settles.
		limit := ledger.Money(0)
		if _, err := f.market.PlaceOrder(ctx, owner, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": -10}}}); err != nil {
			t.Fatal(err)
		}
		// ads runs best-effort tasks: granted apart, its own limit stays 0.
		if code, job := f.api(adsMember, "POST", "/api/v1/best-effort", `{"configuration": {"us-east/cpu": 2}, "tasks": 3}`); code != http.StatusCreated {
			t.Fatalf("best-effort job: %d %v", code, job)
		}
		a = alloc()
		want(a, "search", 40, 40, 10, 0, 0)
		want(a, "ads", 0, 0, 0, 0, 6)
		qs, _ := a["quotas"].([]any)
		if len(qs) != 1 || qs[0].(map[string]any)["units"] != float64(30) {
			t.Fatalf("quotas %v, want search's 30 not on offer (what owner_usage reports against)", qs)
		}
		if p := a["over_limit"].(map[string]any); p["action"] != "report" || p["grace_seconds"] != float64(600) {
			t.Fatalf("default over-limit policy %v", p)
		}

		// search runs 50 cores of its own: over by 10, reported only at first.
		over := `{"over_limit": [{"team": "search", "pool": "us-east/cpu", "used": 50, "limit": 40}]}`
		if code, out := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", over); code != http.StatusOK {
			t.Fatalf("over_limit report: %d %v", code, out)
		}
		bad := `{"over_limit": [{"team": "search", "pool": "us-east/cpu", "used": 40, "limit": 40}]}`
		if code, out := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", bad); code != http.StatusBadRequest || errorMessage(out) == "" {
			t.Fatalf("an over_limit row not over its limit: %d %v", code, out)
		}
		if o, _ := f.plan.OverLimits(ctx, "search"); len(o) != 1 || !o[0].Since.Equal(storetest.Epoch) || o[0].Excess() != 10 {
			t.Fatalf("over limits %+v, want search 10 over since the first report (the bad one changed nothing)", o)
		}
		if err := f.plan.SetOverLimitPolicy(ctx, fleet.OverLimitPolicy{Action: fleet.OverLimitEvict, Grace: 10 * time.Minute}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(9 * time.Minute)
		if re, _ := alloc()["reclaim"].([]any); len(re) != 0 {
			t.Fatalf("reclaim within the grace: %v", re)
		}
		f.clock.Advance(time.Minute)
		if code, out := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", over); code != http.StatusOK {
			t.Fatalf("over_limit report: %d %v", code, out)
		}
		a = alloc()
		re, _ := a["reclaim"].([]any)
		if p := a["over_limit"].(map[string]any); p["action"] != "evict" || len(re) != 1 {
			t.Fatalf("after the grace: policy %v, reclaim %v", p, re)
		}
		if r := re[0].(map[string]any); r["team"] != "search" || r["pool"] != "us-east/cpu" || r["units"] != float64(10) || r["since"] != storetest.Epoch.Format(time.RFC3339) {
			t.Fatalf("reclaim %v, want search's 10 cores since the first report", r)
		}
		done := `{"reclaimed": [{"team": "search", "pool": "us-east/cpu", "object": "pod search/train-3", "units": 10}]}`
		if code, out := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", done); code != http.StatusOK {
			t.Fatalf("reclaimed report: %d %v", code, out)
		}
		if re, _ := alloc()["reclaim"].([]any); len(re) != 0 {
			t.Fatalf("reclaim after the excess was taken back: %v", re)
		}
		if got, _ := f.plan.RecentlyReclaimed(ctx, "search", 5); len(got) != 1 || got[0].Object != "pod search/train-3" {
			t.Fatalf("reclaimed %+v", got)
		}
		// An operator reads the same allocation without changing it.
		op := f.token(f.user("op@x.io", identity.RoleOperator, ""))
		if code, a := f.api(op, "GET", "/api/v1/clusters/us-east/allocation", ""); code != http.StatusOK || limitRow(a, "search", "us-east/cpu") == nil {
			t.Fatalf("operator's read: %d %v", code, fmt.Sprint(a["limits"]))
		}
	})
}
