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

// A best-effort job's workload: refused with the field named (form and API) and
// nothing saved, shown with its job, returned by the API, and carried in the
// agent's allocation with each of its tasks.
func TestBestEffortWorkloadFromFormAndAPIToTheAgent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	f.user("ana@x.io", identity.RoleMember, "search")
	member := f.token(f.user("cy@x.io", identity.RoleMember, "search"))
	agent, _, err := f.id.IssueAgentToken(ctx, "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	b.login("ana@x.io")
	tok := b.csrf("/best-effort")
	form := func(workload string) url.Values {
		return url.Values{"csrf_token": {tok}, "cluster": {"us-east"}, "u.cpu": {"2"}, "tasks": {"3"}, "workload": {workload}}
	}
	res, doc := b.post("/best-effort", form(`{"kubernetes": {"image": "not an image"}}`))
	if msg := doc.Find("[data-testid=error-workload]").Text(); res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, "workload.kubernetes.image") {
		t.Fatalf("a bad image: %d %q", res.StatusCode, msg)
	}
	if v, _ := doc.Find("[data-testid=field-workload]").Html(); !strings.Contains(v, "not an image") {
		t.Fatalf("the form lost what was typed: %q", v)
	}
	code, out := f.api(member, "POST", "/api/v1/best-effort", `{"configuration": {"us-east/cpu": 2}, "tasks": 1, "workload": {"slurm": {"script": "sleep 1"}}}`)
	if code != http.StatusBadRequest || !strings.HasPrefix(errorMessage(out), "workload.slurm.script:") {
		t.Fatalf("a script without #!: %d %q", code, errorMessage(out))
	}
	if n, _ := f.be.Jobs(ctx, besteffort.JobFilter{}); len(n) != 0 {
		t.Fatalf("refused workloads saved %d jobs", len(n))
	}
	res, _ = b.post("/best-effort", form(`{"kubernetes": {"image": "busybox:1.36", "command": ["sh", "-c", "sleep 600"]}}`))
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("submit: %d", res.StatusCode)
	}
	_, doc = b.get("/best-effort")
	if got := doc.Find("[data-testid=best-effort-jobs] [data-testid=workload]").Text(); got != `kubernetes: busybox:1.36 sh -c "sleep 600"` {
		t.Fatalf("the job shows workload %q", got)
	}
	code, job := f.api(member, "POST", "/api/v1/best-effort", `{"configuration": {"us-east/cpu": 1}, "tasks": 1, "workload": {"slurm": {"command": "sleep 600"}}}`)
	if w, _ := job["workload"].(map[string]any); code != http.StatusCreated || w["slurm"] == nil || w["kubernetes"] != nil {
		t.Fatalf("API submit: %d %v", code, job)
	}
	code, alloc := f.api(agent, "GET", "/api/v1/clusters/us-east/allocation", "")
	run, _ := alloc["best_effort"].([]any)
	if code != http.StatusOK || len(run) != 4 {
		t.Fatalf("allocation: %d, %d tasks", code, len(run))
	}
	for _, r := range run {
		task := r.(map[string]any)
		w, _ := task["workload"].(map[string]any)
		k, _ := w["kubernetes"].(map[string]any)
		s, _ := w["slurm"].(map[string]any)
		switch {
		case task["job"] == job["id"] && (s["command"] != "sleep 600" || k != nil):
			t.Errorf("task %v of the slurm job carries %v", task["task"], w)
		case task["job"] != job["id"] && (k["image"] != "busybox:1.36" || fmt.Sprint(k["command"]) != "[sh -c sleep 600]"):
			t.Errorf("task %v of the kubernetes job carries %v", task["task"], w)
		}
	}
}
