package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/ledger"
)

// The simulating reference agent measures an abacus job it ran: once the job has no
// task left running and none waiting, its next report carries the job's utility
// (the inverse of its run time in hours, first start to last end) and its mean
// share of the pool's best-effort cores; the server keeps it and fits the team's
// weights (too few jobs yet for a usable fit).
func TestAgentMeasuresFinishedAbacusJobs(t *testing.T) {
	m := newAgentMarket(t)
	ctx := context.Background()
	if err := m.app.Idle.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/cpu", Policy: besteffort.PolicyAbacus, Alpha: 0.5, Exposure: 0}); err != nil {
		t.Fatal(err)
	}
	job, err := m.app.Idle.Submit(ctx, m.member, besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": 10}, Tasks: 3, Budget: 4 * ledger.Dollar})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	a, _ := m.loop(m.token("us-east"), &agent.Simulation{Seed: 3, Use: 1}, &out, &errOut)
	start := m.clock.Now()
	for range 30 { // every 10 minutes for 5 hours: every simulated task ends within 3
		if err := a.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		m.clock.Advance(10 * time.Minute)
	}
	v, err := m.app.Idle.Job(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != besteffort.JobDone || v.Captured != 4*ledger.Dollar || v.MeasuredUtility == nil || errOut.Len() > 0 {
		t.Fatalf("job %s, charged %s, measured %v; agent errors %q", v.Status, v.Captured, v.MeasuredUtility, errOut.String())
	}
	var last time.Time
	for _, r := range v.Runs {
		if r.EndedAt != nil && r.EndedAt.After(last) {
			last = *r.EndedAt
		}
	}
	// The server ends a task when the poll after its simulated end reports it: the
	// agent's last end is at most one poll (10 minutes) before the server's.
	lo, hi := 1/last.Sub(start).Hours(), 1/last.Add(-10*time.Minute).Sub(start).Hours()
	if u := *v.MeasuredUtility; u < lo-1e-9 || u > hi {
		t.Fatalf("measured utility %g, want 1/run time in hours, from %g to %g", u, lo, hi)
	}
	if s := v.MeasuredShares; !strings.Contains(s, `"us-east/cpu":1`) { // alone in the pool
		t.Fatalf("measured shares %q, want the whole pool's best-effort cores", s)
	}
	if !strings.Contains(out.String(), "best-effort job 1 done: utility") {
		t.Fatalf("agent output:\n%s", out.String())
	}
	fits, err := m.app.Idle.Fits(ctx, "search")
	if err != nil || len(fits) != 1 || fits[0].Samples != 1 || fits[0].Outcome != "too-few-samples" {
		t.Fatalf("fits: %+v %v", fits, err)
	}
}
