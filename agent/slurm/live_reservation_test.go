package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// A reservation the plan runs becomes a Slurm advanced reservation for the team's
// account; a job submitted to it runs in it, its usage is reported while it runs and
// its end once it ended; a waiting request with jobs queued starts early when the plan
// allows; a reservation the plan drops is deleted.
func TestLiveReservationRunsItsJobs(t *testing.T) {
	c := newLiveCluster(t)
	b := c.backend
	now := time.Now().UTC()
	running := agent.Job{Reservation: 990001, Request: 0, Team: "ads", Configuration: map[string]int64{"hpc/cpu": 1, "hpc/ram": 1},
		Count: 2, Units: 2, Start: now.Add(-time.Minute), End: now.Add(20 * time.Minute)}
	waiting := agent.Job{Reservation: 990002, Request: 1, Team: "ml", Configuration: map[string]int64{"hpc/cpu": 1},
		Count: 1, Start: now.Add(2 * time.Hour), End: now.Add(3 * time.Hour)}
	plan := agent.Plan{Now: now, Running: []agent.Job{running}, Waiting: []agent.Job{waiting}}
	if _, err := b.FollowReservations(c.ctx, plan); err != nil {
		t.Fatal(err)
	}
	have, err := b.reservations(c.ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := have[ReservationName(running.Key())]
	if r.CPUs != 2 || r.Accounts != c.ads || r.Start.After(time.Now()) || !r.End.Equal(running.End.Truncate(time.Second)) {
		t.Fatalf("reservation %+v: want 2 CPUs for %s from now to %s", r, c.ads, running.End)
	}
	w := have[ReservationName(waiting.Key())]
	if w.CPUs != 1 || w.Accounts != c.ml || !w.Start.Equal(waiting.Start.Truncate(time.Second)) {
		t.Fatalf("reservation %+v: want 1 CPU for %s at %s", w, c.ml, waiting.Start)
	}

	// The job runs until the test lets it end (a file appears): the poll sees it
	// running however loaded the machine, and it completes as soon as released.
	release := filepath.Join(t.TempDir(), "release")
	id := c.sbatch("--account="+c.ads, "--reservation="+ReservationName(running.Key()), "--cpus-per-task=1", "--mem=1G", "--wrap=until [ -e "+release+" ]; do sleep 0.1; done")
	var report agent.JobReport
	c.eventually("the job's usage reported while it runs in the reservation", func() bool {
		report, err = b.FollowReservations(c.ctx, plan)
		return err == nil && slices.Contains(report.Usage, agent.JobUsage{Reservation: 990001, Request: 0, Pool: "hpc/cpu", Units: 1})
	})
	if s, _ := c.jobState(id); s != "RUNNING" {
		t.Fatalf("job %s is %s, want RUNNING in its reservation", id, s)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c.eventually("the reservation's end reported after its job ended", func() bool {
		report, err = b.FollowReservations(c.ctx, plan)
		return err == nil && len(report.Ends) == 1
	})
	end := report.Ends[0]
	// Slurm's times are whole seconds: the job may end in the second the test began.
	if end.Reservation != 990001 || end.Request != 0 || end.Failed || end.At.Before(now.Truncate(time.Second)) || end.At.After(time.Now()) {
		t.Errorf("end %+v: want reservation 990001 request 0, not failed, at the job's end", end)
	}
	if report, _ := b.FollowReservations(c.ctx, plan); len(report.Ends) != 0 {
		t.Errorf("the end reported twice: %+v", report.Ends)
	}

	// The waiting request may start now and ml queued a job in it: it starts early.
	queuedJob := c.sbatch("--account="+c.ml, "--reservation="+ReservationName(waiting.Key()), "--cpus-per-task=1", "--mem=1G", "--wrap=sleep 300")
	c.eventually("the job queued in the waiting reservation", func() bool { s, _ := c.jobState(queuedJob); return s == "PENDING" })
	waiting.MayStartNow = true
	plan = agent.Plan{Now: time.Now().UTC(), Waiting: []agent.Job{waiting}}
	report, err = b.FollowReservations(c.ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Starts) != 1 || report.Starts[0].Reservation != 990002 {
		t.Fatalf("starts %+v: want reservation 990002 started early", report.Starts)
	}
	c.eventually("the queued job running in the reservation started early", func() bool { s, _ := c.jobState(queuedJob); return s == "RUNNING" })

	// The plan drops the first: its Slurm reservation goes.
	if _, err := b.FollowReservations(c.ctx, plan); err != nil {
		t.Fatal(err)
	}
	have, _ = b.reservations(c.ctx)
	if _, ok := have[ReservationName(running.Key())]; ok {
		t.Errorf("reservation %s still there after the plan dropped it", ReservationName(running.Key()))
	}
	if !strings.Contains(c.out.String(), "deleted reservation "+ReservationName(running.Key())) {
		t.Errorf("the backend did not say it deleted the reservation:\n%s", c.out.String())
	}
}

// A job that ran and ended between two polls, in a reservation made now, reports the
// reservation's end to an agent that restarted (a fresh backend, which never saw the
// job run): from accounting, whose row names the reservation or, when the job began in
// the reservation's first second, gives only its id, which sacctmgr names. The naming
// is also checked on the real row with its name taken away.
func TestLiveReservationEndAfterARestart(t *testing.T) {
	c := newLiveCluster(t)
	now := time.Now().UTC()
	running := agent.Job{Reservation: 990011, Team: "ads", Configuration: map[string]int64{"hpc/cpu": 1}, Count: 1, Units: 1,
		Start: now, End: now.Add(20 * time.Minute)}
	plan := agent.Plan{Now: now, Running: []agent.Job{running}}
	if _, err := c.backend.FollowReservations(c.ctx, plan); err != nil {
		t.Fatal(err)
	}
	name := ReservationName(running.Key())
	id := c.sbatch("--account="+c.ads, "--reservation="+name, "--cpus-per-task=1", "--mem=100M", "--wrap=true")
	var row job
	c.eventually("accounting knowing the job's end", func() bool {
		jobs, err := c.backend.accounting(c.ctx, now.Add(-time.Minute), "--accounts="+c.ads)
		for _, j := range jobs {
			if fmt.Sprint(j.ID) == id && !j.End.IsZero() {
				row = j
			}
		}
		return err == nil && row.ID != 0
	})
	if row.ReservationID <= 0 {
		t.Fatalf("accounting row %+v: want the reservation's id", row)
	}
	t.Logf("accounting names the reservation %q (id %d)", row.Reservation, row.ReservationID)

	b := c.open() // restarted: it saw nothing run
	report, err := b.FollowReservations(c.ctx, agent.Plan{Now: time.Now().UTC(), Running: []agent.Job{running}})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Ends) != 1 || report.Ends[0].Reservation != 990011 || !report.Ends[0].At.Equal(row.End) {
		t.Fatalf("ends after a restart %+v: want reservation 990011's at the job's end %s", report.Ends, row.End)
	}

	unnamed := []job{row}
	unnamed[0].Reservation = ""
	if err := b.nameReservations(c.ctx, unnamed); err != nil || unnamed[0].Reservation != name {
		t.Errorf("reservation id %d named %q (%v), want %s", row.ReservationID, unnamed[0].Reservation, err, name)
	}
}
