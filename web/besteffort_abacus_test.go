package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/identity"
)

// The API takes an SLO (refusing one that cannot be met, naming min_utility) and
// shows it; the allocation tells the agent each abacus task's job and what of it
// waits; the agent's updates carry finished jobs' measurements, which the team
// sees as learned weights once enough jobs were measured; the form takes a minimum
// utility and the job table shows it with the weights' origin; the operator's
// auction table shows who is served.
func TestAbacusSLOAndLearningThroughTheAPIAndPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
	f.user("op@x.io", identity.RoleOperator, "")
	agent, _, err := f.id.IssueAgentToken(ctx, "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.be.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/cpu", Policy: besteffort.PolicyAbacus, Alpha: 0.5}); err != nil {
		t.Fatal(err)
	}
	code, out := f.api(member, "POST", "/api/v1/best-effort", `{"configuration": {"us-east/cpu": 1}, "tasks": 1, "budget": "5", "min_utility": 1.5}`)
	if code != http.StatusBadRequest || !strings.HasPrefix(errorMessage(out), "min_utility:") {
		t.Fatalf("an SLO above 1: %d %q", code, errorMessage(out))
	}
	code, job := f.api(member, "POST", "/api/v1/best-effort", `{"configuration": {"us-east/cpu": 1}, "tasks": 1, "budget": "5", "min_utility": 0.5}`)
	if code != http.StatusCreated || job["min_utility"] != 0.5 || job["weights_from"] != "equal" {
		t.Fatalf("an SLO of 0.5: %d %v", code, job)
	}
	// Measure four one-task jobs, each done, with the agent's report.
	for k := range 4 {
		if k > 0 {
			if code, job = f.api(member, "POST", "/api/v1/best-effort", `{"configuration": {"us-east/cpu": 1}, "tasks": 1, "budget": "5"}`); code != http.StatusCreated {
				t.Fatalf("job %d: %d %v", k, code, job)
			}
		}
		code, alloc := f.api(agent, "GET", "/api/v1/clusters/us-east/allocation", "")
		tasks, _ := alloc["best_effort"].([]any)
		if code != http.StatusOK || len(tasks) != 1 {
			t.Fatalf("allocation: %d %v", code, alloc)
		}
		task := tasks[0].(map[string]any)
		if task["abacus"] != true || task["job_waiting"] != float64(0) {
			t.Fatalf("allocation task: %v", task)
		}
		body := fmt.Sprintf(`{"best_effort": [{"task": %v, "event": "done", "at": %q}], "best_effort_jobs": [{"job": %v, "utility": %g, "shares": {"us-east/cpu": %g}}]}`,
			task["task"], f.clock.Now().Format("2006-01-02T15:04:05Z07:00"), task["job"], 3*float64(k+1)/4, float64(k+1)/4)
		if code, out := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", body); code != http.StatusOK {
			t.Fatalf("updates: %d %v", code, out)
		}
	}
	if code, out := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", `{"best_effort_jobs": [{"job": 1}]}`); code != http.StatusBadRequest || !strings.Contains(errorMessage(out), "utility: required") {
		t.Fatalf("a measurement without a utility: %d %v", code, out)
	}
	code, job = f.api(member, "GET", "/api/v1/best-effort/1", "")
	if code != http.StatusOK || job["slo"] != "met" || job["measured_utility"] != 0.75 {
		t.Fatalf("the first job: %d %v", code, job)
	}
	b := f.browser()
	b.login("ana@x.io")
	_, doc := b.get("/team")
	if got := doc.Find(`[data-testid=fits] [data-testid=weights]`).Text(); got != "us-east/cpu 3" {
		t.Fatalf("learned weights on the team page: %q", got)
	}
	tok := b.csrf("/best-effort")
	res, doc := b.post("/best-effort", url.Values{"csrf_token": {tok}, "cluster": {"us-east"}, "u.cpu": {"1"}, "tasks": {"3"}, "budget": {"4"}, "min_utility": {"x"}})
	if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("[data-testid=error-min_utility]").Length() != 1 {
		t.Fatalf("a minimum utility that is no number: %d", res.StatusCode)
	}
	res, doc = b.post("/best-effort", url.Values{"csrf_token": {tok}, "cluster": {"us-east"}, "u.cpu": {"1"}, "tasks": {"3"}, "budget": {"4"}, "min_utility": {"5"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(doc.Find("[data-testid=error-min_utility]").Text(), "at most 3") {
		t.Fatalf("a minimum utility above the learned weight: %d %q", res.StatusCode, doc.Find("[data-testid=form-errors]").Text())
	}
	if res, _ = b.post("/best-effort", url.Values{"csrf_token": {tok}, "cluster": {"us-east"}, "u.cpu": {"1"}, "tasks": {"3"}, "budget": {"4"}, "min_utility": {"2"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("submit: %d", res.StatusCode)
	}
	_, doc = b.get("/best-effort")
	row := doc.Find("[data-testid=best-effort-jobs] tbody tr").First()
	if w, s := row.Find("[data-testid=weights]").Text(), row.Find("[data-testid=slo]").Text(); !strings.Contains(w, "learned") || !strings.Contains(s, "minimum utility 2") {
		t.Fatalf("job row: weights %q, SLO %q", w, s)
	}
	if b, c := row.Find("td[data-label=Budget] > .money").Text(), strings.TrimSpace(row.Find("[data-testid=charged]").Text()); b != "$4.00" || c != "charged $0.00" {
		t.Fatalf("job row: budget %q, %q", b, c)
	}
	if _, err := f.be.Step(ctx, "us-east"); err != nil {
		t.Fatal(err)
	}
	_, doc = b.get("/best-effort")
	sh := doc.Find("[data-testid=best-effort-jobs] tbody tr").First().Find("[data-testid=shares]")
	if got := strings.Join(strings.Fields(sh.Text()), " "); got != "shares us-east/cpu 100%" || sh.Find(".pool-id").Text() != "us-east/cpu" {
		t.Fatalf("job row's shares %q: each pool kept whole (%q)", got, sh.Find(".pool-id").Text())
	}
	op := f.browser()
	op.login("op@x.io")
	_, doc = op.get("/operate/idle")
	if got := doc.Find("[data-testid=auction-us-east] [data-testid=slo]").First().Text(); !strings.HasPrefix(got, "2: served") {
		t.Fatalf("the operator's auction: %q", got)
	}
	if got := doc.Find("[data-testid=auction-us-east] td[data-label=Budget]").First().Text(); got != "$4.00" {
		t.Fatalf("the auction's budget %q, want the money format", got)
	}
	labelledRows(t, doc, "/operate/idle", "auction-us-east")
}
