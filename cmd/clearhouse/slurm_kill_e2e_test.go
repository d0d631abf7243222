package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/slurm"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/identity"
)

// reportGate stands between the agent and the real server: it passes every request on
// and counts the best-effort start events that reached the server; armed with a task
// (or with anyTask), it holds the first report carrying that task's start instead (the agent waits for
// the answer as it would for a slow network) and never passes it on. A test kills the
// agent while its report is held: the poll made in Slurm what it made, and the server
// never heard of it.
type reportGate struct {
	*httptest.Server
	mu      sync.Mutex
	hold    int64         // the task whose start is held (0: none, anyTask: the first)
	held    bool          // a report was held
	heldFor int64         // the task whose start was held
	started map[int64]int // task -> reports with its start the server accepted
	reports int           // reports the server accepted
}

func newReportGate(t *testing.T, server string) *reportGate {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	g := &reportGate{started: map[int64]int{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/updates") {
			proxy.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var up agent.Updates
		_ = json.Unmarshal(body, &up)
		g.mu.Lock()
		hold := g.hold
		for _, e := range up.BestEffort {
			if hold != 0 && (e.Task == hold || hold == anyTask) && e.Event == agent.TaskStarted {
				g.hold, g.held, g.heldFor = 0, true, e.Task
				g.mu.Unlock()
				<-r.Context().Done() // the agent is gone: nothing reaches the server
				return
			}
		}
		g.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &statusRecorder{ResponseWriter: w}
		proxy.ServeHTTP(rec, r)
		if rec.status == 0 || rec.status/100 == 2 {
			g.mu.Lock()
			g.reports++
			for _, e := range up.BestEffort {
				if e.Event == agent.TaskStarted {
					g.started[e.Task]++
				}
			}
			g.mu.Unlock()
		}
	}))
	t.Cleanup(g.Close)
	return g
}

// anyTask arms a reportGate for the first task's start it sees.
const anyTask = -1

// holdStart arms the gate for task's start; isHeld says whether it held it yet, and
// heldTask whose start it held.
func (g *reportGate) holdStart(task int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold, g.held = task, false
}

func (g *reportGate) isHeld() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

func (g *reportGate) heldTask() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.heldFor
}

func (g *reportGate) counts(task int64) (started, reports int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started[task], g.reports
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// agentProcess is an agent polling every second in a child process (`clearhouse
// agent`: the test binary running the command line, cliEnv; or the clearhouse-agent
// binary, built), in a process group of its own so
// that a kill takes the commands it runs (Slurm's) with it, as the end of its
// container would.
type agentProcess struct {
	cmd  *exec.Cmd
	log  string
	done <-chan struct{} // closed when the agent ended
}

func (m *slurmMarket) startAgent(server, token string, env ...string) *agentProcess {
	m.t.Helper()
	return startAgentProcess(m.t, []string{"--server", server, "--token", token, "--cluster", "hpc", "--backend", "slurm", "--config", m.config}, env...)
}

// startAgentProcess starts `clearhouse agent <args> --every 1s` with env added to the
// test's environment; the agent is killed when the test ends.
func startAgentProcess(t *testing.T, args []string, env ...string) *agentProcess {
	t.Helper()
	args = append(append([]string{"agent"}, args...), "--every", "1s")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), cliEnv+"="+strings.Join(args, "\x1f")), env...)
	return startProcess(t, cmd)
}

// startProcess starts cmd as an agentProcess: in a process group of its own, its
// output in a log file, killed when the test ends.
func startProcess(t *testing.T, cmd *exec.Cmd) *agentProcess {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log, err := os.CreateTemp(t.TempDir(), "agent-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended, end := context.WithCancel(context.Background())
	a := &agentProcess{cmd: cmd, log: log.Name(), done: ended.Done()}
	go func() { _ = cmd.Wait(); log.Close(); end() }()
	t.Cleanup(a.kill)
	return a
}

// kill sends SIGKILL to the agent's process group and waits for the agent to end.
func (a *agentProcess) kill() {
	select {
	case <-a.done:
		return
	default:
	}
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	<-a.done
}

func (a *agentProcess) output() string {
	out, _ := os.ReadFile(a.log)
	return string(out)
}

// follow keeps the server's clock on the real time, which Slurm's events carry.
func (m *slurmMarket) follow() {
	if d := time.Since(m.clock.Now()); d > 0 {
		m.clock.Advance(d.Truncate(time.Second))
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
	token := m.token("hpc")
	gate := newReportGate(t, m.app.Server.URL())
	m.win("search", 13)
	adsUser, err := m.app.Identity.AddUser(ctx, identity.NewUser{Email: "member@ads.io", Role: identity.RoleMember, TeamID: "ads"})
	if err != nil {
		t.Fatal(err)
	}
	job, err := m.app.Idle.Submit(ctx, adsUser, besteffort.JobSpec{Configuration: map[string]int64{"hpc/cpu": 6}, Tasks: 1,
		Workload: &besteffort.Workload{Slurm: &besteffort.SlurmWorkload{Command: "sleep 600"}}})
	if err != nil {
		t.Fatal(err)
	}
	runs := func() []besteffort.Task {
		v, err := m.app.Idle.Job(ctx, job.ID)
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
	first.kill()
	if r := runs(); len(r) != 1 || r[0].ConfirmedAt != nil {
		t.Fatalf("after the first kill: runs %+v, want one task, its start not confirmed\nagent:\n%s", r, first.output())
	}
	task := runs()[0].ID
	name = fmt.Sprintf("clearhouse-task-%d", task)
	if got := jobs(); len(got) != 1 {
		t.Fatalf("Slurm jobs of task %d after the kill at sbatch: %v, want the one submitted\nagent:\n%s", task, got, first.output())
	}

	// 2. Restarted, and killed with the start event on its way to the server.
	gate.holdStart(task)
	second := m.startAgent(gate.URL, token)
	m.eventually("the restarted agent reporting the task's start (or submitting it again)", func() bool {
		m.follow()
		return gate.isHeld() || len(jobs()) > 1
	})
	second.kill()
	if got := jobs(); len(got) != 1 || !strings.Contains(got[0], "|clearhouse-best-effort|RUNNING|") {
		t.Fatalf("Slurm jobs of task %d after a restart: %v, want the one job, running\nagent:\n%s", task, got, second.output())
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
	_, after := gate.counts(task)
	m.eventually("three more reports", func() bool {
		m.follow()
		_, n := gate.counts(task)
		return n >= after+3
	})
	third.kill()

	got := jobs()
	if len(got) != 1 || !strings.Contains(got[0], "|clearhouse-best-effort|RUNNING|") {
		t.Fatalf("Slurm jobs of task %d in the end: %v, want one, running\nagent:\n%s", task, got, third.output())
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
	if started, _ := gate.counts(task); started != 1 {
		t.Errorf("reports with task %d's start the server accepted: %d, want 1", task, started)
	}
	start := strings.Split(got[0], "|")[3]
	r := runs()
	if len(r) != 1 || r[0].Status != besteffort.TaskRunning || r[0].ConfirmedAt == nil || r[0].ConfirmedAt.Local().Format("2006-01-02T15:04:05") != start {
		t.Errorf("the task on the server: %+v, want running, confirmed at Slurm's start %s", r, start)
	}
	if code, out, errOut := runCLI(t, "", "verify", "--db", m.dsn); code != 0 {
		t.Fatalf("clearhouse verify: exit %d\n%s%s", code, out, errOut)
	}
}
