package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// The best-effort API: submit (201, queued, Idempotency-Key honoured, bad input 400
// naming the field), list and read (members their own team's), cancel; an agent's
// poll starts tasks in best_effort and its report ends them.
func TestBestEffortAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Budget: 100 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
	other := f.token(f.user("bo@x.io", identity.RoleMember, "ads"))
	fin := f.token(f.user("fay@x.io", identity.RoleFinance, ""))
	agent, _, err := f.id.IssueAgentToken(ctx, "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	submit := func(token, key, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", f.srv.URL+"/api/v1/best-effort", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		return decodeResponse(t, req)
	}
	body := `{"configuration": {"us-east/cpu": 2}, "tasks": 50, "max_task_duration": "2h"}`
	code, job := submit(member, "k", body)
	if code != http.StatusCreated || job["status"] != "queued" || job["queued"] != float64(50) || job["max_task_duration"] != "2h0m0s" {
		t.Fatalf("submit: %d %v", code, job)
	}
	id := int64(job["id"].(float64))
	if code, again := submit(member, "k", body); code != http.StatusCreated || again["id"] != job["id"] {
		t.Fatalf("replay: %d %v", code, again)
	}
	for field, bad := range map[string]string{
		"budget (negative)": `{"configuration": {"us-east/cpu": 1}, "tasks": 1, "budget": "-5"}`,
		"configuration":     `{"configuration": {"us-east/gpu": 1}, "tasks": 1}`,
		"tasks":             `{"configuration": {"us-east/cpu": 1}, "tasks": 0}`,
		"max_task_duration": `{"configuration": {"us-east/cpu": 1}, "tasks": 1, "max_task_duration": "forever"}`,
		"budget":            `{"configuration": {"us-east/cpu": 1}, "tasks": 1, "budget": "5"}`,
	} {
		field, _, _ := strings.Cut(field, " ")
		if code, out := submit(member, "", bad); code != http.StatusBadRequest || !strings.HasPrefix(errorMessage(out), field+":") {
			t.Errorf("%s: %d %q", field, code, errorMessage(out))
		}
	}
	if code, _ := submit(fin, "", body); code != http.StatusForbidden {
		t.Errorf("finance submitted: %d", code)
	}
	for _, c := range []struct {
		token, method, path string
		want                int
	}{
		{member, "GET", "/api/v1/best-effort", http.StatusOK},
		{member, "GET", "/api/v1/best-effort?team=ads", http.StatusForbidden},
		{fin, "GET", "/api/v1/best-effort?team=search", http.StatusOK},
		{other, "GET", fmt.Sprintf("/api/v1/best-effort/%d", id), http.StatusNotFound},
		{other, "DELETE", fmt.Sprintf("/api/v1/best-effort/%d", id), http.StatusNotFound},
		{fin, "DELETE", fmt.Sprintf("/api/v1/best-effort/%d", id), http.StatusForbidden},
		{"", "GET", "/api/v1/best-effort", http.StatusUnauthorized},
	} {
		if code, out := f.api(c.token, c.method, c.path, ""); code != c.want {
			t.Errorf("%s %s: %d, want %d (%v)", c.method, c.path, code, c.want, out)
		}
	}
	code, list := f.api(fin, "GET", "/api/v1/best-effort?team=search", "")
	if jobs, _ := list["jobs"].([]any); code != http.StatusOK || len(jobs) != 1 {
		t.Fatalf("list: %d %v", code, list)
	}
	// The agent's poll decides: 100 idle cores, 30 kept free, 35 tasks of 2 start.
	code, alloc := f.api(agent, "GET", "/api/v1/clusters/us-east/allocation", "")
	run, _ := alloc["best_effort"].([]any)
	if code != http.StatusOK || len(run) != 35 {
		t.Fatalf("allocation: %d, %d best-effort tasks", code, len(run))
	}
	// Each pool of the cluster, and only those, with its sharing settings.
	pools, _ := alloc["pools"].([]any)
	if len(pools) == 0 {
		t.Fatalf("allocation's pools: %v", alloc["pools"])
	}
	for _, p := range pools {
		p := p.(map[string]any)
		if id, _ := p["pool"].(string); !strings.HasPrefix(id, "us-east/") || p["policy"] != besteffort.DefaultPolicy {
			t.Errorf("allocation's pool %v", p)
		}
		if id := p["pool"]; id == "us-east/cpu" && p["exposure"] != 0.3 {
			t.Errorf("us-east/cpu's exposure %v, want 0.3 (30 cores kept free)", p["exposure"])
		}
	}
	task := int64(run[0].(map[string]any)["task"].(float64))
	upd := fmt.Sprintf(`{"best_effort": [{"task": %d, "event": "done", "at": %q}], "owner_usage": [{"team": "search", "pool": "us-east/cpu", "units": 0}]}`,
		task, f.clock.Now().Format("2006-01-02T15:04:05Z"))
	if code, out := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", upd); code != http.StatusOK {
		t.Fatalf("updates: %d %v", code, out)
	}
	bad := `{"best_effort": [{"task": 999999, "event": "done", "at": "2026-03-02T09:00:00Z"}]}`
	if code, _ := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", bad); code != http.StatusBadRequest {
		t.Fatalf("a report of an unknown task: %d", code)
	}
	code, got := f.api(member, "GET", fmt.Sprintf("/api/v1/best-effort/%d", id), "")
	if code != http.StatusOK || got["status"] != "running" || got["running"] != float64(34) || got["done"] != float64(1) || got["position"] != float64(1) {
		t.Fatalf("job: %d %v", code, got)
	}
	if pp, _ := got["pool_policies"].(map[string]any); got["policy"] != besteffort.DefaultPolicy || len(pp) != 1 || pp["us-east/cpu"] != besteffort.DefaultPolicy {
		t.Fatalf("job's policies: %v, %v", got["policy"], got["pool_policies"])
	}
	code, got = f.api(member, "DELETE", fmt.Sprintf("/api/v1/best-effort/%d", id), "")
	if code != http.StatusOK || got["status"] != "cancelled" || got["cancelled"] != float64(49) {
		t.Fatalf("cancel: %d %v", code, got)
	}
	_, alloc = f.api(agent, "GET", "/api/v1/clusters/us-east/allocation", "")
	if stop, _ := alloc["preempt"].([]any); len(stop) != 34 {
		t.Fatalf("preempt after cancel: %d tasks", len(stop))
	}
}

func decodeResponse(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

// Cancelling a best-effort job asks for confirmation only for one of the viewer's
// team: another team's job, or an id that does not exist, is not found before any
// page, and the job goes on.
func TestCancellingAnotherTeamsBestEffortJobIsNotFoundBeforeConfirming(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	if _, err := f.market.AddTeam(context.Background(), exchange.NewTeam{ID: "ads", Budget: 100 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
	code, job := f.api(member, "POST", "/api/v1/best-effort", `{"configuration": {"us-east/cpu": 2}, "tasks": 5, "max_task_duration": "2h"}`)
	if code != http.StatusCreated {
		t.Fatalf("submit: %d %v", code, job)
	}
	id := int64(job["id"].(float64))
	f.user("bo@x.io", identity.RoleMember, "ads")
	bo := f.browser()
	bo.login("bo@x.io")
	tok := bo.csrf("/best-effort")
	for _, path := range []string{fmt.Sprintf("/best-effort/%d/cancel", id), "/best-effort/987654/cancel"} {
		res, doc := bo.post(path, url.Values{"csrf_token": {tok}})
		if res.StatusCode != http.StatusNotFound || doc.Find("[data-testid=confirm]").Length() != 0 {
			t.Errorf("POST %s by another team: %d, confirmation page %d", path, res.StatusCode, doc.Find("[data-testid=confirm]").Length())
		}
	}
	if code, v := f.api(member, "GET", fmt.Sprintf("/api/v1/best-effort/%d", id), ""); code != http.StatusOK || v["status"] != "queued" {
		t.Fatalf("after another team's attempts: %d %v", code, v)
	}
	ana := f.browser()
	ana.login("ana@x.io")
	if res, doc := ana.post(fmt.Sprintf("/best-effort/%d/cancel", id), url.Values{"csrf_token": {ana.csrf("/best-effort")}}); res.StatusCode != http.StatusOK || doc.Find("[data-testid=confirm]").Length() != 1 {
		t.Errorf("the team's own job: %d, want the confirmation page", res.StatusCode)
	}
}
