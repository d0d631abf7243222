package slurm

import (
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// A booked reservation exists in Slurm from booking, not from its slot (issue 37,
// hole 3 of the issue): an upcoming request is reserved at once with its planned start,
// moved and resized as the plan moves it; on cores busy with a team's job Slurm
// refuses it and the backend reports it unplaceable, at every call while the plan has
// it, with Slurm's reason, and leaves no reservation behind; on cores busy with
// best-effort tasks only, it is reserved.
func TestLiveReservationsAreMadeAtBooking(t *testing.T) {
	c := newLiveCluster(t)
	b := c.backend
	if _, err := b.ApplyQuotas(c.ctx, []agent.Quota{{Team: "ml", Pool: "hpc/cpu", Units: 16}, {Team: "ml", Pool: "hpc/ram", Units: 4}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)

	// The node's 16 cores busy with ml's job (no time limit): a booking for later is refused.
	busy := c.sbatch("--account="+c.ml, "--cpus-per-task=16", "--mem=1G", "--wrap=sleep 600")
	c.eventually("ml's job on every core", func() bool { s, _ := c.jobState(busy); return s == "RUNNING" })
	refused := agent.Job{Reservation: 990201, Team: "ads", Configuration: map[string]int64{"hpc/cpu": 1}, Count: 2,
		Start: now.Add(30 * time.Minute), End: now.Add(90 * time.Minute)}
	for range 2 {
		report, err := b.FollowReservations(c.ctx, agent.Plan{Now: now, Upcoming: []agent.Job{refused}})
		if err != nil {
			t.Fatalf("a refusal is a report, not an error: %v", err)
		}
		if len(report.Unplaceable) != 1 || report.Unplaceable[0].Reservation != 990201 || report.Unplaceable[0].Reason != "Requested nodes are busy" {
			t.Fatalf("unplaceable %+v: want reservation 990201, Requested nodes are busy", report.Unplaceable)
		}
	}
	have, err := b.reservations(c.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := have[ReservationName(refused.Key())]; ok {
		t.Fatalf("reservation %s in Slurm although refused", ReservationName(refused.Key()))
	}
	c.sh("scancel", busy)
	c.eventually("ml's job gone", func() bool { s, _ := c.jobState(busy); return s != "RUNNING" && s != "COMPLETING" })

	// Every core busy with ml's best-effort task instead: the booking is reserved (the
	// server stops the task by the reservation's start), not refused.
	if _, err := b.ApplyQuotas(c.ctx, []agent.Quota{{Team: "ml", Pool: "hpc/cpu", BestEffort: 16}, {Team: "ml", Pool: "hpc/ram", BestEffort: 1}}); err != nil {
		t.Fatal(err)
	}
	task := agent.Task{ID: 550000 + time.Now().UnixNano()%10000, Team: "ml", Configuration: map[string]int64{"hpc/cpu": 16, "hpc/ram": 1},
		Workload: &agent.Workload{Slurm: &agent.SlurmWorkload{Command: "sleep 600"}}}
	if _, err := b.SyncTasks(c.ctx, []agent.Task{task}, nil); err != nil {
		t.Fatal(err)
	}
	c.eventually("ml's best-effort task on every core", func() bool {
		return c.sh("squeue", "--noheader", "--name="+TaskJobName(task.ID), "--Format=State:") == "RUNNING"
	})
	beside := refused
	beside.Reservation = 990203
	report, err := b.FollowReservations(c.ctx, agent.Plan{Now: time.Now().UTC(), Upcoming: []agent.Job{beside}})
	if err != nil || len(report.Unplaceable) != 0 {
		t.Fatalf("booking beside a best-effort task: unplaceable %v, error %v; want it reserved", report.Unplaceable, err)
	}
	if have, _ := b.reservations(c.ctx); have[ReservationName(beside.Key())].CPUs != 2 {
		t.Fatalf("reservation %s not in Slurm beside the best-effort task: %+v", ReservationName(beside.Key()), have)
	}
	c.sh("scancel", "--name="+TaskJobName(task.ID))
	if _, err := b.FollowReservations(c.ctx, agent.Plan{Now: time.Now().UTC()}); err != nil { // dropped: deleted
		t.Fatal(err)
	}

	// Booked for two hours from now: reserved now, with its start.
	later := agent.Job{Reservation: 990202, Team: "ads", Configuration: map[string]int64{"hpc/cpu": 1}, Count: 3,
		Start: now.Add(2 * time.Hour), End: now.Add(3 * time.Hour), Arrival: now.Add(time.Hour), Deadline: now.Add(5 * time.Hour)}
	check := func(what string, cpus int64, start time.Time) {
		t.Helper()
		report, err := b.FollowReservations(c.ctx, agent.Plan{Now: time.Now().UTC(), Upcoming: []agent.Job{later}})
		if err != nil || len(report.Unplaceable) != 0 {
			t.Fatalf("%s: unplaceable %v, error %v", what, report.Unplaceable, err)
		}
		have, err := b.reservations(c.ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := have[ReservationName(later.Key())]
		if !ok || r.CPUs != cpus || !r.Start.Equal(start) || !r.End.Equal(start.Add(time.Hour)) || r.Accounts != c.ads {
			t.Fatalf("%s: Slurm reservation %+v (exists %v), want %d CPUs for %s from %s for an hour", what, r, ok, cpus, c.ads, start)
		}
	}
	check("booked", 3, later.Start)
	later.Start, later.End = later.Start.Add(time.Hour), later.End.Add(time.Hour)
	check("moved an hour later", 3, later.Start)
	later.Count = 2
	check("resized to 2 tasks", 2, later.Start)
	if out := c.out.String(); !strings.Contains(out, "moved reservation "+ReservationName(later.Key())) {
		t.Errorf("the backend did not say it moved the reservation:\n%s", out)
	}
	// Dropped from the plan (cancelled): deleted.
	if _, err := b.FollowReservations(c.ctx, agent.Plan{Now: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if have, _ := b.reservations(c.ctx); have[ReservationName(later.Key())].Name != "" {
		t.Errorf("reservation %s still in Slurm after the plan dropped it", ReservationName(later.Key()))
	}
}
