package simulate

import (
	"bytes"
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// epoch is 09:00 UTC, the hour the expected lines start at.
var epoch = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// TestAgentFollowsAMovedJob drives the cluster's view of the plan with plans made by
// hand: a running job the plan moves later is stopped and waits again.
func TestAgentFollowsAMovedJob(t *testing.T) {
	now := epoch
	job := agent.Job{Reservation: 3, Request: 1, Team: "ads", Configuration: map[string]int64{"us-east/cpu": 2, "us-east/ram": 8},
		Count: 5, Units: 5, Start: now, End: now.Add(time.Hour)}
	moved := job
	moved.Units, moved.Start, moved.End = 0, now.Add(2*time.Hour), now.Add(3*time.Hour)
	var out bytes.Buffer
	c := New(&out, nil)
	ctx := context.Background()
	follow := func(at time.Duration, running, waiting []agent.Job) agent.JobReport {
		t.Helper()
		rep, err := c.FollowReservations(ctx, agent.Plan{Now: now.Add(at), Running: running, Waiting: waiting})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	follow(0, []agent.Job{job}, nil)
	follow(5*time.Minute, []agent.Job{job}, nil)
	follow(10*time.Minute, nil, []agent.Job{moved})
	rep := follow(15*time.Minute, nil, []agent.Job{moved})
	want := `09:00:00 start reservation 3 request 1: 5 x {"us-east/cpu":2,"us-east/ram":8} until 10:00 (team ads)
09:10:00 stop reservation 3 request 1 (moved, now planned 11:00)
09:10:00 waiting: reservation 3 request 1 planned 11:00 (team ads)
`
	if out.String() != want {
		t.Fatalf("output\n%s\nwant\n%s", out.String(), want)
	}
	if len(rep.Waiting)+len(rep.Usage)+len(rep.Ends)+len(rep.Starts) != 0 {
		t.Fatalf("the print backend reported %+v", rep)
	}
	sim := New(io.Discard, &agent.Simulation{Seed: 1, Use: 1})
	rep, err := sim.FollowReservations(ctx, agent.Plan{Now: now, Waiting: []agent.Job{moved}})
	if err != nil || len(rep.Waiting) != 1 || rep.Waiting[0].Tasks != 5 || len(rep.Usage) != 0 {
		t.Fatalf("a simulated waiting job: %+v %v", rep, err)
	}
}

// The simulating cluster measures what each pool has in use: its running
// reservations' usage (at the share they use) and its best-effort tasks.
func TestAgentReportsEachPoolsUsage(t *testing.T) {
	now := epoch
	c := New(io.Discard, &agent.Simulation{Seed: 1, Use: 0.5})
	ctx := context.Background()
	job := agent.Job{Reservation: 3, Request: 1, Team: "ads", Configuration: map[string]int64{"us-east/cpu": 2, "us-east/ram": 8},
		Count: 5, Units: 5, Start: now, End: now.Add(time.Hour)}
	if _, err := c.FollowReservations(ctx, agent.Plan{Now: now, Running: []agent.Job{job}}); err != nil {
		t.Fatal(err)
	}
	run := []agent.Task{
		{ID: 7, Job: 2, Team: "search", Configuration: map[string]int64{"us-east/cpu": 4}},
		{ID: 8, Job: 2, Team: "search", Configuration: map[string]int64{"us-east/cpu": 4}},
	}
	if _, err := c.SyncTasks(ctx, run, nil); err != nil {
		t.Fatal(err)
	}
	m, err := c.Measure(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []agent.PoolMeasure{{Pool: "us-east/cpu", Used: 5 + 8}, {Pool: "us-east/ram", Used: 20}}
	if !slices.Equal(m.Pools, want) {
		t.Fatalf("pools %+v, want %+v (half of 10 cores and 40 GiB reserved, two 4-core tasks)", m.Pools, want)
	}
}

// The simulated owners' usage follows the quota the loop applies, and the same seed
// gives the same run: the same lines and the same reports.
func TestSimulationIsDeterministicForASeed(t *testing.T) {
	play := func(seed uint64) (string, []agent.TaskEvent, []agent.JobEnd, []agent.OwnerUsage) {
		var out bytes.Buffer
		c := New(&out, &agent.Simulation{Seed: seed, FailRate: 0.3, FinishEarly: 0.5, Use: 1})
		ctx := context.Background()
		var events []agent.TaskEvent
		var ends []agent.JobEnd
		var owners []agent.OwnerUsage
		var jobs []agent.Job
		for i := range 4 {
			jobs = append(jobs, agent.Job{Reservation: int64(i + 1), Team: "ads", Configuration: map[string]int64{"us-east/cpu": 1},
				Count: 2, Units: 2, Start: epoch, End: epoch.Add(3 * time.Hour)})
		}
		run := []agent.Task{{ID: 1, Job: 9, Team: "ads", Configuration: map[string]int64{"us-east/cpu": 1}},
			{ID: 2, Job: 9, Team: "ads", Configuration: map[string]int64{"us-east/cpu": 1}}}
		for step := range 20 {
			now := epoch.Add(time.Duration(step) * 10 * time.Minute)
			if _, err := c.ApplyQuotas(ctx, []agent.Quota{{Team: "ads", Pool: "us-east/cpu", Units: 40}}); err != nil {
				t.Fatal(err)
			}
			rep, _ := c.FollowReservations(ctx, agent.Plan{Now: now, Running: jobs})
			ends = append(ends, rep.Ends...)
			evs, _ := c.SyncTasks(ctx, run, nil)
			events = append(events, evs...)
			m, _ := c.Measure(ctx, now)
			owners = append(owners, m.Owners...)
		}
		return out.String(), events, ends, owners
	}
	out1, ev1, end1, own1 := play(5)
	out2, ev2, end2, own2 := play(5)
	if out1 != out2 || !slices.Equal(ev1, ev2) || !slices.EqualFunc(end1, end2, func(a, b agent.JobEnd) bool { return a == b }) || !slices.Equal(own1, own2) {
		t.Fatalf("two runs of seed 5 differ:\n%s\n---\n%s", out1, out2)
	}
	if len(end1) == 0 || len(ev1) < 3 {
		t.Fatalf("seed 5 ended %d jobs early and saw %d task events; want some of each:\n%s", len(end1), len(ev1), out1)
	}
	for i, o := range own1 {
		if want := OwnerUsage(5, "ads", "us-east/cpu", 40, epoch.Add(time.Duration(i)*10*time.Minute)); o.Units != want || o.Units < 0 || o.Units > 40 {
			t.Fatalf("owner usage at step %d: %d, want %d within the quota of 40", i, o.Units, want)
		}
	}
	if out3, _, _, _ := play(6); out3 == out1 {
		t.Fatalf("seeds 5 and 6 played the same run")
	}
}
