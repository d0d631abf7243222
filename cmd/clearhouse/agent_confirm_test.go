package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/besteffort"
)

// Without --simulate the reference agent confirms the best-effort starts and stops
// it prints, in the report that follows the poll, so the server records the starts
// and stops listing the stopped tasks.
func TestRealAgentConfirmsBestEffortStartsAndStops(t *testing.T) {
	m, tok, _, job := lendingMarket(t)
	ctx := context.Background()
	var out, errOut bytes.Buffer
	a, _ := m.loop(tok, nil, &out, &errOut)
	tasks := func(status besteffort.TaskStatus) []besteffort.Task {
		t.Helper()
		var ts []besteffort.Task
		if err := m.app.DB.Read.Where("job_id = ? AND status = ?", job.ID, status).Order("id").Find(&ts).Error; err != nil {
			t.Fatal(err)
		}
		return ts
	}
	if err := a.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	started := tasks(besteffort.TaskRunning)
	if n := strings.Count(out.String(), "start best-effort task"); n != 7 || len(started) != 7 {
		t.Fatalf("first poll: %d starts printed, %d tasks running\n%s%s", n, len(started), out.String(), errOut.String())
	}
	for _, x := range started {
		if x.ConfirmedAt == nil {
			t.Fatalf("task %d: the agent printed its start but did not confirm it", x.ID)
		}
	}
	// search's own work takes its 60 cores back: 3 of ads's 7 tasks must stop.
	m.clock.Advance(10 * time.Minute)
	if err := m.app.Idle.Report(ctx, "us-east", besteffort.Report{Usage: []besteffort.OwnerUsage{{Team: "search", Pool: "us-east/cpu", Units: 60}}}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := a.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := tasks(besteffort.TaskPreempted)
	if n := strings.Count(out.String(), "stop best-effort task"); n != 3 || len(stopped) != 3 || errOut.Len() > 0 {
		t.Fatalf("after search's usage rose: %d stops printed, %d tasks preempted\n%s%s", n, len(stopped), out.String(), errOut.String())
	}
	for _, x := range stopped {
		if x.StopAckedAt == nil {
			t.Fatalf("task %d: the agent printed its stop but did not confirm it", x.ID)
		}
	}
	alloc, err := m.app.Idle.Allocation(ctx, "us-east")
	if err != nil || len(alloc.Stop) != 0 || len(alloc.Run) != 4 {
		t.Fatalf("the allocation lists %d stops and %d tasks to run, want 0 and 4 (%v)", len(alloc.Stop), len(alloc.Run), err)
	}
}
