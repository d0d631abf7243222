package slurm

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// A best-effort task runs under the borrowing team's best-effort account in
// Clearhouse's QOS, within the grant, even though the team holds no quota; a restarted agent submits nothing twice and reports
// again what it had not; the owner's job that needs the cores preempts it (Slurm
// cancels it: stopped); a task the server stops is cancelled.
func TestLiveBestEffortTask(t *testing.T) {
	c := newLiveCluster(t)
	b := c.backend
	quotas := []agent.Quota{{Team: "ads", Pool: "hpc/cpu", Units: 16}, {Team: "ads", Pool: "hpc/ram", Units: 32},
		{Team: "ml", Pool: "hpc/cpu", BestEffort: 4}, {Team: "ml", Pool: "hpc/ram", BestEffort: 2}} // two tasks' grant
	if _, err := b.ApplyQuotas(c.ctx, quotas); err != nil { // ml holds nothing: GrpTRES cpu=0
		t.Fatal(err)
	}
	task := agent.Task{ID: 880000 + time.Now().UnixNano()%10000, Job: 7, Team: "ml", Configuration: map[string]int64{"hpc/cpu": 2, "hpc/ram": 1},
		Workload: &agent.Workload{Slurm: &agent.SlurmWorkload{Script: "#!/bin/sh\nsleep 600\n"}}}
	name := TaskJobName(task.ID)
	if ev, err := b.SyncTasks(c.ctx, []agent.Task{task}, nil); err != nil || len(ev) != 0 {
		t.Fatalf("first sync: events %v, error %v; want none yet", ev, err)
	}
	jobs := func() []string {
		out := c.sh("squeue", "--noheader", "--states=all", "--name="+name, "--Format=JobID:|,Account:|,QOS:|,State:")
		return strings.Fields(out)
	}
	var events []agent.TaskEvent
	c.eventually("the task started", func() bool {
		ev, err := b.SyncTasks(c.ctx, []agent.Task{task}, nil)
		events = append(events, ev...)
		return err == nil && len(events) > 0
	})
	if events[0].Task != task.ID || events[0].Event != agent.TaskStarted || events[0].At.IsZero() {
		t.Fatalf("events %v: want task %d started", events, task.ID)
	}
	if got := jobs(); len(got) != 1 || !strings.HasSuffix(got[0], "|"+BestEffortAccount(c.ml)+"|"+DefaultQOS+"|RUNNING") {
		t.Fatalf("jobs named %s: %v, want one RUNNING under %s in %s", name, got, BestEffortAccount(c.ml), DefaultQOS)
	}

	// The borrowed cores are not ml's own: its own limit stays 0, and nothing is drift.
	fixes, err := b.ApplyQuotas(c.ctx, quotas)
	if err != nil || len(fixes) != 0 {
		t.Fatalf("apply with the task running: corrections %v, error %v; want none", fixes, err)
	}
	if got := c.grpTRES(c.ml); got["cpu"] != 0 {
		t.Errorf("ml's GrpTRES %v with its best-effort task running, want cpu=0", got)
	}
	m, err := b.Measure(c.ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(m.Owners, agent.OwnerUsage{Team: "ml", Pool: "hpc/cpu", Units: 0}) {
		t.Errorf("owners %v: a best-effort task is not its team's own usage", m.Owners)
	}

	// A restarted agent: nothing submitted twice, the start reported again (the server
	// ignores repeats).
	restarted := c.open()
	ev, err := restarted.SyncTasks(c.ctx, []agent.Task{task}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != 1 || ev[0] != events[0] {
		t.Errorf("after a restart: events %v, want the start again %v", ev, events[0])
	}
	if got := jobs(); len(got) != 1 {
		t.Fatalf("after a restart: jobs named %s: %v, want one", name, got)
	}

	// The owner ads needs the whole node: Slurm preempts the best-effort job.
	owner := c.sbatch("--account="+c.ads, "--cpus-per-task=16", "--mem=1G", "--wrap=sleep 300")
	c.eventually("the owner's job running", func() bool { s, _ := c.jobState(owner); return s == "RUNNING" })
	c.eventually("the task reported stopped (preempted)", func() bool {
		ev, err := restarted.SyncTasks(c.ctx, []agent.Task{task}, nil)
		return err == nil && slices.ContainsFunc(ev, func(e agent.TaskEvent) bool { return e.Task == task.ID && e.Event == agent.TaskStopped })
	})
	if ev, _ := restarted.SyncTasks(c.ctx, []agent.Task{task}, nil); len(ev) != 0 {
		t.Errorf("a preempted task listed again: events %v, want none (and no second job)", ev)
	}
	if got := jobs(); len(got) != 1 || !strings.HasSuffix(got[0], "|PREEMPTED") {
		t.Errorf("jobs named %s: %v, want the one job PREEMPTED", name, got)
	}

	// The server stops a second task: it is cancelled and reported stopped.
	c.sh("scancel", owner)
	second := task
	second.ID++
	if _, err := restarted.SyncTasks(c.ctx, []agent.Task{second}, nil); err != nil {
		t.Fatal(err)
	}
	c.eventually("the second task running", func() bool {
		out := c.sh("squeue", "--noheader", "--name="+TaskJobName(second.ID), "--Format=State:")
		return out == "RUNNING"
	})
	second.Reason = "owner needs it"
	ev, err = restarted.SyncTasks(c.ctx, nil, []agent.Task{second})
	if err != nil || !slices.ContainsFunc(ev, func(e agent.TaskEvent) bool { return e.Event == agent.TaskStopped }) {
		t.Fatalf("stopping the second task: events %v, error %v; want stopped", ev, err)
	}
	c.eventually("the second task's job gone", func() bool {
		out := c.sh("squeue", "--noheader", "--name="+TaskJobName(second.ID), "--Format=State:")
		return out == "" || out == "CANCELLED"
	})

	// A task whose workload has nothing for Slurm fails at once.
	bad := agent.Task{ID: second.ID + 1, Team: "ml", Configuration: map[string]int64{"hpc/cpu": 1}}
	ev, err = restarted.SyncTasks(c.ctx, []agent.Task{bad}, nil)
	if err == nil || len(ev) != 1 || ev[0].Event != agent.TaskFailed {
		t.Errorf("a task without a Slurm workload: events %v, error %v; want failed and an error", ev, err)
	}
}
