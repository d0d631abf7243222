package slurm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent/slurm"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/identity"
)

func (m *slurmMarket) startAgent(server, token string, env ...string) *e2etest.Process {
	m.T.Helper()
	return e2etest.StartAgent(m.T, []string{"--server", server, "--token", token, "--cluster", "hpc", "--backend", "slurm", "--config", m.config}, env...)
}

// follow keeps the server's clock on the real time, which Slurm's events carry.
func (m *slurmMarket) follow() {
	if d := time.Since(m.Clock.Now()); d > 0 {
		m.Clock.Advance(d.Truncate(time.Second))
	}
}

// The agent killed with SIGKILL in the middle of a poll, at the two moments a crash
// could cost something, and restarted each time:
//  1. just after sbatch submitted a best-effort task's job, before the agent read
//     sbatch's answer (a stand-in sbatch submits, then hangs): the restarted agent
//     finds the job in Slurm and submits nothing;
//  2. with the task's start event in a report on its way to the server (the gate holds
//     it): the restarted agent reads the start from Slurm again and reports it.
//
// In the end there is exactly one Slurm job of the task (squeue and sacct), the start
// reached the server once, at the time Slurm recorded, and `clearhouse verify` is
// clean.
func TestSlurmAgentKilledMidPollSubmitsOnceAndLosesNoEvent(t *testing.T) {
	m := newSlurmMarket(t)
	ctx := context.Background()
	token := m.Token("hpc")
	gate := e2etest.NewReportGate(t, m.App.Server.URL())
	m.win("search", 13)
	adsUser, err := m.App.Identity.AddUser(ctx, identity.NewUser{Email: "member@ads.io", Role: identity.RoleMember, TeamID: "ads"})
	if err != nil {
		t.Fatal(err)
	}
	job, err := m.App.Idle.Submit(ctx, adsUser, besteffort.JobSpec{Configuration: map[string]int64{"hpc/cpu": 6}, Tasks: 1,
		Workload: &besteffort.Workload{Slurm: &besteffort.SlurmWorkload{Command: "sleep 600"}}})
	if err != nil {
		t.Fatal(err)
	}
	runs := func() []besteffort.Task {
		v, err := m.App.Idle.Job(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		return v.Runs
	}
	acct := slurm.BestEffortAccount(m.accounts["ads"]) // where best-effort tasks run
	var name string
	jobs := func() []string { // the task's Slurm jobs under this test's account, queued or ended
		return strings.Fields(m.slurm("squeue", "--noheader", "--states=all", "--name="+name, "--account="+acct, "--Format=JobID:|,QOS:|,State:|,StartTime:"))
	}

	// 1. Killed right after sbatch submitted the task's job.
	realSbatch, err := exec.LookPath("sbatch")
	if err != nil {
		t.Fatal(err)
	}
	bin, submitted := filepath.Join(t.TempDir(), "bin"), filepath.Join(t.TempDir(), "submitted")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nout=$(%s \"$@\") || exit\necho \"$out\" >%[2]s.tmp && mv %[2]s.tmp %[2]s\necho \"$out\"\nexec sleep 600\n", realSbatch, submitted)
	if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	first := m.startAgent(gate.URL, token, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	m.eventually("the agent's sbatch submitting the task's job", func() bool {
		m.follow()
		_, err := os.Stat(submitted)
		return err == nil
	})
	first.Kill()
	if r := runs(); len(r) != 1 || r[0].ConfirmedAt != nil {
		t.Fatalf("after the first kill: runs %+v, want one task, its start not confirmed\nagent:\n%s", r, first.Output())
	}
	task := runs()[0].ID
	name = fmt.Sprintf("clearhouse-task-%d", task)
	if got := jobs(); len(got) != 1 {
		t.Fatalf("Slurm jobs of task %d after the kill at sbatch: %v, want the one submitted\nagent:\n%s", task, got, first.Output())
	}

	// 2. Restarted, and killed with the start event on its way to the server.
	gate.HoldStart(task)
	second := m.startAgent(gate.URL, token)
	m.eventually("the restarted agent reporting the task's start (or submitting it again)", func() bool {
		m.follow()
		return gate.IsHeld() || len(jobs()) > 1
	})
	second.Kill()
	if got := jobs(); len(got) != 1 || !strings.Contains(got[0], "|clearhouse-best-effort|RUNNING|") {
		t.Fatalf("Slurm jobs of task %d after a restart: %v, want the one job, running\nagent:\n%s", task, got, second.Output())
	}
	if r := runs(); r[0].ConfirmedAt != nil {
		t.Fatalf("the held report reached the server: confirmed %v", r[0].ConfirmedAt)
	}

	// 3. Restarted: the start reaches the server, once.
	third := m.startAgent(gate.URL, token)
	m.eventually("the server confirming the task's start", func() bool {
		m.follow()
		return runs()[0].ConfirmedAt != nil
	})
	_, after := gate.Counts(task)
	m.eventually("three more reports", func() bool {
		m.follow()
		_, n := gate.Counts(task)
		return n >= after+3
	})
	third.Kill()

	got := jobs()
	if len(got) != 1 || !strings.Contains(got[0], "|clearhouse-best-effort|RUNNING|") {
		t.Fatalf("Slurm jobs of task %d in the end: %v, want one, running\nagent:\n%s", task, got, third.Output())
	}
	id, _, _ := strings.Cut(got[0], "|")
	var inAccounting []string
	m.eventually("accounting knowing the task's job", func() bool {
		inAccounting = strings.Fields(m.slurm("sacct", "--noheader", "--parsable2", "--allocations", "--allusers", "--name="+name,
			"--accounts="+acct, "--starttime=now-1hour", "--format=JobID"))
		return len(inAccounting) > 0
	})
	if len(inAccounting) != 1 || inAccounting[0] != id {
		t.Errorf("sacct's jobs named %s under %s: %v, want job %s alone", name, acct, inAccounting, id)
	}
	if started, _ := gate.Counts(task); started != 1 {
		t.Errorf("reports with task %d's start the server accepted: %d, want 1", task, started)
	}
	start := strings.Split(got[0], "|")[3]
	r := runs()
	if len(r) != 1 || r[0].Status != besteffort.TaskRunning || r[0].ConfirmedAt == nil || r[0].ConfirmedAt.Local().Format("2006-01-02T15:04:05") != start {
		t.Errorf("the task on the server: %+v, want running, confirmed at Slurm's start %s", r, start)
	}
	m.Verify()
}
