package slurm

import (
	"slices"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// Reclaim takes back a team's excess from its newest own jobs: requeued (then held by
// the lowered GrpTRES) or, when Slurm will not requeue it, cancelled; its older job,
// its best-effort task and its job in a Clearhouse reservation keep running (issue 37,
// hole 5 of the issue: quota taken away is taken back).
func TestLiveReclaimRequeuesNewestOwnJobs(t *testing.T) {
	c := newLiveCluster(t)
	b := c.backend
	quotas := []agent.Quota{{Team: "ads", Pool: "hpc/cpu", Units: 8, BestEffort: 2}, {Team: "ads", Pool: "hpc/ram", Units: 16, BestEffort: 1}}
	if _, err := b.ApplyQuotas(c.ctx, quotas); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	reserved := agent.Job{Reservation: 990101, Team: "ads", Configuration: map[string]int64{"hpc/cpu": 2}, Count: 1, Units: 1,
		Start: now.Add(-time.Minute), End: now.Add(time.Hour)}
	plan := agent.Plan{Now: now, Running: []agent.Job{reserved}}
	if _, err := b.FollowReservations(c.ctx, plan); err != nil {
		t.Fatal(err)
	}
	running := func(id string) {
		c.eventually("job "+id+" running", func() bool { s, _ := c.jobState(id); return s == "RUNNING" })
	}
	oldest := c.sbatch("--account="+c.ads, "--cpus-per-task=2", "--mem=1G", "--wrap=sleep 300")
	running(oldest)
	noRequeue := c.sbatch("--account="+c.ads, "--no-requeue", "--cpus-per-task=2", "--mem=1G", "--wrap=sleep 300")
	running(noRequeue)
	newest := c.sbatch("--account="+c.ads, "--cpus-per-task=2", "--mem=1G", "--wrap=sleep 300")
	running(newest)
	inRes := c.sbatch("--account="+c.ads, "--reservation="+ReservationName(reserved.Key()), "--cpus-per-task=2", "--mem=1G", "--wrap=sleep 300")
	running(inRes)
	task := agent.Task{ID: 660000 + time.Now().UnixNano()%10000, Team: "ads", Configuration: map[string]int64{"hpc/cpu": 2, "hpc/ram": 1},
		Workload: &agent.Workload{Slurm: &agent.SlurmWorkload{Command: "sleep 300"}}}
	if _, err := b.SyncTasks(c.ctx, []agent.Task{task}, nil); err != nil {
		t.Fatal(err)
	}
	c.eventually("the best-effort task running", func() bool {
		return c.sh("squeue", "--noheader", "--name="+TaskJobName(task.ID), "--Format=State:") == "RUNNING"
	})

	// ads sells 6 of its 8 cores: its own jobs use 6 (and 2 in its reservation); the
	// server asks for 4 back.
	quotas[0].Units = 2
	if _, err := b.ApplyQuotas(c.ctx, quotas); err != nil {
		t.Fatal(err)
	}
	got, err := b.Reclaim(c.ctx, []agent.Reclaim{{Team: "ads", Pool: "hpc/cpu", Units: 4, Since: now}})
	if err != nil {
		t.Fatal(err)
	}
	want := []agent.Reclaimed{
		{Team: "ads", Pool: "hpc/cpu", Object: "job " + newest + " requeued", Units: 2},
		{Team: "ads", Pool: "hpc/cpu", Object: "job " + noRequeue + " cancelled (Slurm would not requeue it)", Units: 2},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("reclaimed %v\nwant %v", got, want)
	}
	c.eventually("the requeued job held by the lowered limit", func() bool {
		s, r := c.jobState(newest)
		return s == "PENDING" && (r == "AssocGrpCpuLimit" || r == "BeginTime")
	})
	// Under load slurmd may take a while to kill the job: COMPLETING is on the way.
	c.eventually("the job that may not be requeued cancelled", func() bool {
		s, _ := c.jobState(noRequeue)
		return s == "CANCELLED" || s == ""
	})
	for _, id := range []string{oldest, inRes} {
		if s, _ := c.jobState(id); s != "RUNNING" {
			t.Errorf("job %s is %s after the reclaim, want still RUNNING (older, or in the team's reservation)", id, s)
		}
	}
	if s := c.sh("squeue", "--noheader", "--name="+TaskJobName(task.ID), "--Format=State:"); s != "RUNNING" {
		t.Errorf("the best-effort task is %q after the reclaim, want RUNNING", s)
	}
	// What is left running is the older job and the reservation's: 4 cores measured.
	m, err := b.Measure(c.ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(m.Owners, agent.OwnerUsage{Team: "ads", Pool: "hpc/cpu", Units: 4}) {
		t.Errorf("owners %v: want ads's own usage 4 cores (its older job and its reservation's)", m.Owners)
	}
}
