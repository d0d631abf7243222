package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// apiCall makes an API call on the app with a bearer token and decodes the answer.
func (m *agentMarket) apiCall(token, method, path string, body any, out any) int {
	m.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, m.app.Server.URL()+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer res.Body.Close()
	if out != nil {
		_ = json.NewDecoder(res.Body).Decode(out)
	}
	return res.StatusCode
}

// lendingMarket is the end-to-end market of the best-effort tests: search holds 60
// of us-east's 100 cores and ads queues ten 10-core best-effort tasks (30% of the
// pool kept free, 5 minutes of minimum runtime). It returns the agent's token, ads's
// API token and the job as the API answered it.
func lendingMarket(t *testing.T) (*agentMarket, string, string, apiv1.BestEffortJob) {
	t.Helper()
	m := newAgentMarket(t)
	ctx := context.Background()
	app := m.app
	if err := app.Market.GrantQuota(ctx, "search", "us-east/cpu", 60); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Budget: 100 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	u, err := app.Identity.AddUser(ctx, identity.NewUser{Email: "member@ads.io", Role: identity.RoleMember, TeamID: "ads"})
	if err != nil {
		t.Fatal(err)
	}
	ads, _, err := app.Identity.IssueToken(ctx, u.ID, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Idle.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/cpu", Policy: "direct-orig", Alpha: 0.5, MinRuntime: 5 * time.Minute, Exposure: 0.3}); err != nil {
		t.Fatal(err)
	}
	var job apiv1.BestEffortJob
	if code := m.apiCall(ads, "POST", "/api/v1/best-effort", map[string]any{"configuration": map[string]int64{"us-east/cpu": 10}, "tasks": 10}, &job); code != http.StatusCreated {
		t.Fatalf("submit: %d %+v", code, job)
	}
	return m, m.token("us-east"), ads, job
}

// Team search holds 60 idle cores of us-east; team ads's best-effort job runs on
// them (and on the operator's 40) through the reference agent's allocation; search
// reserves its quota and the agent preempts ads's tasks down to what the pool still
// has room for; search's contribution and ads's utility move as DirectContr says.
func TestBestEffortEndToEnd(t *testing.T) {
	m, tok, ads, job := lendingMarket(t)
	if job.Status != "queued" {
		t.Fatalf("submit: %+v", job)
	}
	ctx := context.Background()
	app := m.app
	// Owners use none of their quota here (the tests below make them use it).
	none := filepath.Join(t.TempDir(), "owners.json")
	if err := os.WriteFile(none, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The agent's poll starts 7 tasks of 10 cores: 30 of the 100 stay free.
	code, out, errOut := m.agent("us-east", tok, "--once", "--simulate", "--seed", "3", "--owner-usage", none)
	if code != 0 || strings.Count(out, "start best-effort task") != 7 {
		t.Fatalf("first poll: %d\n%s%s", code, out, errOut)
	}
	m.apiCall(ads, "GET", fmt.Sprintf("/api/v1/best-effort/%d", job.ID), nil, &job)
	if job.Status != "running" || job.Running != 7 || job.Queued != 3 || job.Position == nil || *job.Position != 1 {
		t.Fatalf("after the first poll: %+v", job)
	}

	// A quarter of an hour later (a slot boundary) search reserves its 60 cores for an hour, from now.
	m.clock.Advance(15 * time.Minute)
	m.reserve(60, time.Hour, 0, time.Hour)
	code, out, errOut = m.agent("us-east", tok, "--once", "--simulate", "--seed", "3", "--owner-usage", none)
	// (A new agent process announces the 4 tasks still running as its own starts.)
	if code != 0 || strings.Count(out, "stop best-effort task") != 3 || strings.Count(out, "start best-effort task") != 4 {
		t.Fatalf("poll after the reservation: %d\n%s%s", code, out, errOut)
	}
	m.apiCall(ads, "GET", fmt.Sprintf("/api/v1/best-effort/%d", job.ID), nil, &job)
	if job.Running != 4 || job.Queued != 6 || job.Preempted != 3 {
		t.Fatalf("after preemption: %+v", job)
	}
	// The simulated agent confirmed the stops: the next poll lists none.
	var alloc apiv1.Allocation
	op := m.operatorToken()
	if code := m.apiCall(op, "GET", "/api/v1/clusters/us-east/allocation", nil, &alloc); code != http.StatusOK || len(alloc.BestEffort) != 4 || len(alloc.Preempt) != 0 {
		t.Fatalf("allocation as the operator sees it: %d %+v", code, alloc)
	}

	// Over the quarter hour ads's 70 cores ran on search's 60 and the operator's 40 in
	// proportion: search lent 42 cores for 0.25 h; ads used 70 cores for 0.25 h.
	// ORIG values a part executed at tau at t - tau: 42 x 0.25^2 / 2 and 70 x 0.25^2 / 2.
	s, err := app.Idle.TeamPools(ctx, "search")
	if err != nil || len(s) != 1 {
		t.Fatalf("search's accounts: %+v %v", s, err)
	}
	a, err := app.Idle.TeamPools(ctx, "ads")
	if err != nil || len(a) != 1 {
		t.Fatalf("ads's accounts: %+v %v", a, err)
	}
	if !close(s[0].Balance.LentSurface, 10.5) || !close(s[0].Contribution, 1.3125) || s[0].Utility != 0 {
		t.Fatalf("search: lent %g unit-hours, contribution %g, utility %g; want 10.5, 1.3125, 0", s[0].Balance.LentSurface, s[0].Contribution, s[0].Utility)
	}
	if !close(a[0].Balance.Surface, 17.5) || !close(a[0].Utility, 2.1875) || a[0].Contribution != 0 || a[0].Borrowed != 40 {
		t.Fatalf("ads: used %g unit-hours, utility %g, contribution %g, borrows %g; want 17.5, 2.1875, 0, 40", a[0].Balance.Surface, a[0].Utility, a[0].Contribution, a[0].Borrowed)
	}
	// DirectContr ranks search (it lent) above ads (it used).
	if !(s[0].Priority > 0 && a[0].Priority < 0) {
		t.Fatalf("priorities: search %g, ads %g", s[0].Priority, a[0].Priority)
	}
	// Search's reservation now holds its quota: nothing of the remaining 40 running
	// ads cores is attributed to search any more.
	if s[0].Lent != 0 {
		t.Fatalf("search still lends %g cores while its reservation runs", s[0].Lent)
	}
}

func close(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// operatorToken adds an operator and returns an API token for it.
func (m *agentMarket) operatorToken() string {
	m.t.Helper()
	ctx := context.Background()
	u, err := m.app.Identity.AddUser(ctx, identity.NewUser{Email: "op@x.io", Role: identity.RoleOperator})
	if err != nil {
		m.t.Fatal(err)
	}
	tok, _, err := m.app.Identity.IssueToken(ctx, u.ID, "e2e")
	if err != nil {
		m.t.Fatal(err)
	}
	return tok
}
