package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent/simulate"
	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/besteffort"
)

func (m *agentMarket) beJob(token string, id int64) apiv1.BestEffortJob {
	m.t.Helper()
	var job apiv1.BestEffortJob
	if code := m.apiCall(token, "GET", fmt.Sprintf("/api/v1/best-effort/%d", id), nil, &job); code != http.StatusOK {
		m.t.Fatalf("job %d: %d", id, code)
	}
	return job
}

func (m *agentMarket) ownerUsage(team, pool string) int64 {
	m.t.Helper()
	var u besteffort.IdleUsage
	if err := m.app.DB.Read.Where("team_id = ? AND pool_id = ?", team, pool).Limit(1).Find(&u).Error; err != nil {
		m.t.Fatal(err)
	}
	return u.Units
}

// A real agent reads owners' usage from the operator's file at every poll: search
// uses none of its 60 cores, so 7 of ads's tasks start; then its own work takes all
// 60 and the next decision preempts 3 of ads's tasks (the pool's 100 cores hold 60
// of search's and 40 of ads's). A command printing the same JSON works alike, and
// a row for another cluster's pool is dropped with a warning, not sent.
func TestAgentReportsOwnersUsageFromTheOperatorsFile(t *testing.T) {
	m, tok, ads, job := lendingMarket(t)
	id := job.ID
	file := filepath.Join(t.TempDir(), "owners.json")
	write := func(units int64) {
		t.Helper()
		body := fmt.Sprintf(`[{"team":"search","pool":"us-east/cpu","units":%d},{"team":"search","pool":"eu-west/cpu","units":1}]`, units)
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	code, out, errOut := m.agent("us-east", tok, "--once", "--owner-usage", file)
	if code != 0 || strings.Count(out, "start best-effort task") != 7 || !strings.Contains(errOut, `owner usage row dropped (team "search", pool "eu-west/cpu"`) {
		t.Fatalf("first poll: %d\n%s%s", code, out, errOut)
	}
	if got := m.ownerUsage("search", "us-east/cpu"); got != 0 {
		t.Fatalf("search's usage %d, want 0", got)
	}
	m.clock.Advance(10 * time.Minute)
	write(60)
	// This poll decides on the usage known so far, then reports the new one.
	if code, out, errOut := m.agent("us-east", tok, "--once", "--owner-usage", file); code != 0 || strings.Contains(out, "stop best-effort task") {
		t.Fatalf("second poll: %d\n%s%s", code, out, errOut)
	}
	if got := m.ownerUsage("search", "us-east/cpu"); got != 60 {
		t.Fatalf("search's usage %d, want 60", got)
	}
	m.clock.Advance(time.Minute)
	code, out, errOut = m.agent("us-east", tok, "--once", "--owner-usage-command", "cat "+file)
	if code != 0 || strings.Count(out, "stop best-effort task") != 3 {
		t.Fatalf("poll after the owner's usage rose: %d\n%s%s", code, out, errOut)
	}
	if job := m.beJob(ads, id); job.Running != 4 || job.Preempted != 3 || job.Queued != 6 {
		t.Fatalf("after preemption: %+v", job)
	}
	if code, _, errOut := m.agent("us-east", tok, "--once", "--owner-usage", file, "--owner-usage-command", "true"); code != 2 || !strings.Contains(errOut, "give one source") {
		t.Fatalf("two sources: %d %s", code, errOut)
	}
	if code, _, errOut := m.agent("us-east", tok, "--once", "--owner-usage-command", "echo nonsense"); code != 0 || !strings.Contains(errOut, "owner usage not reported") {
		t.Fatalf("a bad command: %d %s", code, errOut)
	}
}

// A simulating agent sends each owner's seeded usage of its quota: at a time the
// wave is low, ads's tasks fill what search leaves idle; hours later search's usage
// has risen and the decision after the agent reports it preempts down to what the
// pool still holds beside it.
func TestSimulatingAgentsRisingOwnerUsagePreemptsBestEffortTasks(t *testing.T) {
	m, tok, ads, job := lendingMarket(t)
	id := job.ID
	const seed = 3
	usage := func(at time.Time) int64 { return simulate.OwnerUsage(seed, "search", "us-east/cpu", 60, at) }
	// Find, in the day ahead, a quarter hour when search uses at most 15 cores and
	// one 12 hours later when it uses at least 45.
	now := m.clock.Now()
	var low time.Time
	for at := now; at.Before(now.Add(24 * time.Hour)); at = at.Add(15 * time.Minute) {
		if usage(at) <= 15 && usage(at.Add(12*time.Hour)) >= 45 {
			low = at
			break
		}
	}
	if low.IsZero() {
		t.Fatal("the simulated wave never rises from 15 to 45 cores in 12 hours")
	}
	flags := []string{"--once", "--simulate", "--seed", fmt.Sprint(seed)}
	// The first poll decides before any usage is known: 7 tasks start (30 kept free);
	// beside search's low usage they still fit.
	m.clock.Set(low)
	code, out, errOut := m.agent("us-east", tok, flags...)
	if code != 0 || strings.Count(out, "start best-effort task") != 7 {
		t.Fatalf("low usage: %d\n%s%s", code, out, errOut)
	}
	if got := m.ownerUsage("search", "us-east/cpu"); got != usage(low) {
		t.Fatalf("reported usage %d, want %d", got, usage(low))
	}
	m.clock.Advance(time.Minute)
	if code, out, errOut := m.agent("us-east", tok, flags...); code != 0 || strings.Contains(out, "stop best-effort task") {
		t.Fatalf("low usage, second poll: %d\n%s%s", code, out, errOut)
	}
	// 12 hours later the first poll reports the risen usage; the next decision
	// preempts ads's tasks down to what fits beside it.
	high := low.Add(12 * time.Hour)
	m.clock.Set(high)
	if code, out, errOut := m.agent("us-east", tok, flags...); code != 0 || strings.Contains(out, "stop best-effort task") {
		t.Fatalf("high usage, first poll: %d\n%s%s", code, out, errOut)
	}
	u := usage(high)
	if got := m.ownerUsage("search", "us-east/cpu"); got != u {
		t.Fatalf("reported usage %d, want %d", got, u)
	}
	m.clock.Advance(time.Minute)
	code, out, errOut = m.agent("us-east", tok, flags...)
	kept := (100 - u) / 10
	if job := m.beJob(ads, id); code != 0 || job.Running != kept || job.Preempted != 7-kept || int64(strings.Count(out, "stop best-effort task")) != 7-kept {
		t.Fatalf("search's usage rose to %d: %+v, want %d running and %d preempted\n%s%s", u, job, kept, 7-kept, out, errOut)
	}
}
