package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
)

// Each report's agent status reaches /operate: the backend, how long ago the last
// report came, the drift corrected (count and latest) and the last errors, escaped;
// a cluster whose agent never reported says so; a bad status is refused whole; the
// page is the operator's alone.
func TestOperateShowsEachClustersAgent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	if _, err := f.market.AddCluster(ctx, exchange.Cluster{ID: "eu-west"}); err != nil {
		t.Fatal(err)
	}
	agent, _, err := f.id.IssueAgentToken(ctx, "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	report := `{"agent": {"backend": "kubernetes", "version": "v1.2",
		"corrections": [{"team": "search", "pool": "us-east/cpu", "object": "ResourceQuota search/clearhouse", "was": "10", "now": "40"}],
		"errors": ["measure: <b>nodes</b> forbidden"]}}`
	if code, body := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", report); code != http.StatusOK {
		t.Fatalf("report: %d %v", code, body)
	}
	// A bad status is refused and changes nothing, not even the report's time.
	f.clock.Advance(time.Minute)
	if code, _ := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", `{"agent": {"backend": ""}}`); code != http.StatusBadRequest {
		t.Fatalf("a status without a backend: %d, want 400", code)
	}
	f.clock.Advance(2 * time.Minute)

	f.user("op@x.io", identity.RoleOperator, "")
	op := f.browser()
	op.login("op@x.io")
	res, doc := op.get("/operate")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /operate: %d", res.StatusCode)
	}
	row := doc.Find("[data-testid=agent-us-east]")
	text := func(id string) string {
		return strings.Join(strings.Fields(row.Find("[data-testid="+id+"]").Text()), " ")
	}
	if got := text("agent-backend"); got != "kubernetes v1.2" {
		t.Errorf("backend %q", got)
	}
	if got := text("agent-last-report"); got != "3m ago" {
		t.Errorf("last report %q, want 3m ago", got)
	}
	if got := text("agent-latest-correction"); got != "latest: ResourceQuota search/clearhouse 10 → 40" {
		t.Errorf("latest correction %q", got)
	}
	if got := text("agent-corrections"); !strings.HasPrefix(got, "1 ") {
		t.Errorf("corrections %q, want a count of 1", got)
	}
	if got := text("agent-errors"); !strings.Contains(got, "measure: <b>nodes</b> forbidden") || row.Find("[data-testid=agent-errors] b").Length() != 0 {
		t.Errorf("errors %q (not escaped?)", got)
	}
	if got := strings.Join(strings.Fields(doc.Find("[data-testid=agent-eu-west] [data-testid=agent-last-report]").Text()), " "); got != "never" {
		t.Errorf("eu-west's agent never reported; the page says %q", got)
	}
	if row.Find("[data-testid=agent-late]").Length() != 0 {
		t.Error("an agent 3 minutes quiet is shown late")
	}
	f.clock.Advance(10 * time.Minute)
	if _, doc = op.get("/operate"); doc.Find("[data-testid=agent-us-east] [data-testid=agent-late]").Length() != 1 {
		t.Error("an agent 13 minutes quiet is not shown late")
	}

	member := f.browser()
	f.user("mem@x.io", identity.RoleMember, "search")
	member.login("mem@x.io")
	if res, _ := member.get("/operate"); res.StatusCode != http.StatusForbidden {
		t.Errorf("a member reads /operate: %d", res.StatusCode)
	}
}

// An agent that reported errors and then a clean report is shown recovered: healthy,
// with its last errors and their time kept as history; a new error makes it unhealthy
// again.
func TestOperateShowsAnAgentsRecovery(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	agent, _, err := f.id.IssueAgentToken(ctx, "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	report := func(body string) {
		t.Helper()
		if code, res := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", body); code != http.StatusOK {
			t.Fatalf("report: %d %v", code, res)
		}
	}
	f.user("op@x.io", identity.RoleOperator, "")
	op := f.browser()
	op.login("op@x.io")
	cell := func() (string, bool, string) {
		t.Helper()
		_, doc := op.get("/operate")
		c := doc.Find("[data-testid=agent-us-east] [data-testid=agent-errors]")
		return strings.Join(strings.Fields(c.Text()), " "), c.Find("[data-testid=agent-healthy]").Length() == 1,
			strings.Join(strings.Fields(c.Find("[data-testid=agent-last-errors]").Text()), " ")
	}
	report(`{"agent": {"backend": "kubernetes", "errors": ["measure: kubernetes: the API server does not answer"]}}`)
	failedAt := f.clock.Now().UTC()
	if text, healthy, _ := cell(); healthy || !strings.Contains(text, "the API server does not answer") {
		t.Fatalf("after a failed poll: %q, healthy %v", text, healthy)
	}
	f.clock.Advance(time.Minute)
	report(`{"agent": {"backend": "kubernetes"}}`)
	text, healthy, last := cell()
	if !healthy || !strings.HasPrefix(text, "none since the last report") || !strings.Contains(text, "the API server does not answer") ||
		!strings.Contains(last, failedAt.Format("2006-01-02 15:04")) {
		t.Fatalf("after a clean report: %q (healthy %v, last errors %q); want healthy with the errors of %v as history", text, healthy, last, failedAt)
	}
	f.clock.Advance(time.Minute)
	report(`{"agent": {"backend": "kubernetes", "errors": ["apply quotas: forbidden"]}}`)
	if text, healthy, _ := cell(); healthy || !strings.Contains(text, "apply quotas: forbidden") || strings.Contains(text, "does not answer") {
		t.Fatalf("after a new error: %q, healthy %v", text, healthy)
	}
}
