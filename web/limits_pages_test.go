package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// The over-limit policy form: operators only, with a CSRF token; bad input is shown
// on the form and changes nothing; a good policy is saved and sent to agents.
func TestOverLimitPolicyFormIsForOperatorsAndRefusesBadInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	f.user("op@x.io", identity.RoleOperator, "")
	f.user("ana@x.io", identity.RoleMember, "search")
	op := f.browser()
	op.login("op@x.io")
	_, doc := op.get("/operate")
	if a, _ := doc.Find(`[data-testid=over-limit-action] option[selected]`).Attr("value"); a != "report" {
		t.Fatalf("the form shows action %q, want the default report", a)
	}
	if g, _ := doc.Find(`[data-testid=over-limit-form] input[name=grace]`).Attr("value"); g != "600" {
		t.Fatalf("the form shows grace %q, want 600", g)
	}
	if doc.Find("[data-testid=no-over-limit]").Length() != 1 {
		t.Fatal("no team is over its limit, and the page does not say so")
	}
	tok := op.csrf("/operate")
	if res, _ := op.post("/operate/over-limit", url.Values{"action": {"evict"}, "grace": {"60"}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("without a CSRF token: %d", res.StatusCode)
	}
	member := f.browser()
	member.login("ana@x.io")
	if res, _ := member.post("/operate/over-limit", url.Values{"action": {"evict"}, "grace": {"60"}, "csrf_token": {member.csrf("/team")}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("a member set the policy: %d", res.StatusCode)
	}
	for _, bad := range []struct{ action, grace, field string }{
		{"kill", "60", "action"}, {"evict", "-5", "grace"}, {"evict", "ten", "grace"}, {"evict", "604801", "grace"}, {"", "60", "action"},
	} {
		res, doc := op.post("/operate/over-limit", url.Values{"action": {bad.action}, "grace": {bad.grace}, "csrf_token": {tok}})
		if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("[data-testid=error-"+bad.field+"]").Length() != 1 {
			t.Errorf("action %q grace %q: %d, want 422 naming %s", bad.action, bad.grace, res.StatusCode, bad.field)
		}
		if g, _ := doc.Find(`[data-testid=over-limit-form] input[name=grace]`).Attr("value"); res.StatusCode == http.StatusUnprocessableEntity && g != bad.grace {
			t.Errorf("the form lost what was typed: %q", g)
		}
	}
	// The action is the domain's to refuse (fleet.OverLimitPolicy.Validate); the form
	// says it in its words, beside a grace it could not read.
	res, doc := op.post("/operate/over-limit", url.Values{"action": {"kill"}, "grace": {"ten"}, "csrf_token": {tok}})
	if a, g := doc.Find("[data-testid=error-action]").Text(), doc.Find("[data-testid=error-grace]").Text(); res.StatusCode != http.StatusUnprocessableEntity ||
		!strings.Contains(a, "Choose report only or take back.") || g == "" {
		t.Errorf("a bad action and grace: %d, action %q, grace %q", res.StatusCode, a, g)
	}
	if p, _ := f.plan.OverLimitPolicy(ctx); p != fleet.DefaultOverLimitPolicy {
		t.Fatalf("bad input changed the policy to %+v", p)
	}
	if res, _ := op.post("/operate/over-limit", url.Values{"action": {"evict"}, "grace": {"300"}, "csrf_token": {tok}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a good policy: %d", res.StatusCode)
	}
	if p, _ := f.plan.OverLimitPolicy(ctx); p.Action != fleet.OverLimitEvict || p.Grace != 5*time.Minute {
		t.Fatalf("saved policy %+v, want evict after 5 minutes", p)
	}
}

// The team page shows the limit in each pool with its parts, by the rule the agents
// get: held (what is on offer included), reserved beyond own quota, best-effort
// granted apart; and, when the team runs above it, by how much, since when and what
// will happen; /operate lists the team.
func TestTeamPageShowsTheLimitsPartsAndWorkAboveIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
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
	owner := f.user("olga@x.io", identity.RoleOwner, "search")
	member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
	f.user("op@x.io", identity.RoleOperator, "")
	limit := ledger.Money(0)
	if _, err := f.market.PlaceOrder(ctx, owner, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": -10}}}); err != nil {
		t.Fatal(err)
	}
	// 35 cores for an hour: 30 from the quota not on offer, 5 beyond it.
	code, body := f.api(member, "POST", "/api/v1/reservations/new", "")
	if code != http.StatusCreated {
		t.Fatalf("new: %d %v", code, body)
	}
	if code, r := f.api(member, "POST", "/api/v1/reservations", f.definition(int64(body["id"].(float64)), 35, "1h", 0, 2*time.Hour, `"50"`)); code != http.StatusCreated || r["status"] != "accepted" {
		t.Fatalf("reservation: %d %v", code, r)
	}
	if code, job := f.api(member, "POST", "/api/v1/best-effort", `{"configuration": {"us-east/cpu": 1}, "tasks": 2}`); code != http.StatusCreated {
		t.Fatalf("best-effort job: %d %v", code, job)
	}
	agent, _, err := f.id.IssueAgentToken(ctx, "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := f.api(agent, "GET", "/api/v1/clusters/us-east/allocation", ""); code != http.StatusOK { // runs the best-effort decision
		t.Fatalf("allocation: %d", code)
	}
	b := f.browser()
	b.login("olga@x.io")
	_, doc := b.get("/team")
	row := doc.Find("[data-testid='limit-us-east/cpu']")
	for field, want := range map[string]string{"units": "45 cores", "held": "40 cores", "offered": "10 cores", "reserved": "5 cores", "best-effort": "2 cores"} {
		if got := strings.TrimSpace(row.Find("[data-testid=limit-" + field + "]").Text()); got != want {
			t.Errorf("limit's %s: %q, want %q", field, got, want)
		}
	}
	if doc.Find("[data-testid^=over-limit-]").Length() != 0 {
		t.Fatal("the team page warns of work above the limit before any was reported")
	}
	if err := f.plan.SetOverLimitPolicy(ctx, fleet.OverLimitPolicy{Action: fleet.OverLimitEvict, Grace: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	upd := `{"over_limit": [{"team": "search", "pool": "us-east/cpu", "used": 52, "limit": 45}]}`
	if code, out := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", upd); code != http.StatusOK {
		t.Fatalf("over_limit report: %d %v", code, out)
	}
	f.clock.Advance(3 * time.Minute)
	_, doc = b.get("/team")
	warn := strings.Join(strings.Fields(doc.Find("[data-testid='over-limit-us-east/cpu']").Text()), " ")
	for _, want := range []string{"52 cores", "7 cores above its limit", "of 45 cores", "since " + storetest0(), "will be stopped", "from " + storetest0At(10*time.Minute)} {
		if !strings.Contains(warn, want) {
			t.Errorf("the team's warning %q does not say %q", warn, want)
		}
	}
	op := f.browser()
	op.login("op@x.io")
	_, doc = op.get("/operate")
	orow := doc.Find("[data-testid='over-limit-search-us-east/cpu']")
	if got := strings.TrimSpace(orow.Find("[data-testid=over-limit-excess]").Text()); got != "7 cores" {
		t.Fatalf("/operate's over-limit row: excess %q (%q)", got, orow.Text())
	}
	if !strings.Contains(orow.Find("[data-testid=over-limit-fate]").Text(), "will be stopped") {
		t.Fatalf("/operate's fate %q", orow.Find("[data-testid=over-limit-fate]").Text())
	}
}

// storetest0 is the fixture's epoch as pages show times; storetest0At the epoch plus d.
func storetest0() string { return storetest0At(0) }
func storetest0At(d time.Duration) string {
	return storetest.Epoch.Add(d).UTC().Format("2006-01-02 15:04 UTC")
}
