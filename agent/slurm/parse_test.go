package slurm

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// The outputs in testdata/ were captured from Slurm 22.05's real daemons
// (scripts/slurm-up.sh) with the commands the backend runs; the job named "odd|name"
// checks that a '|' in a job name cannot shift the fields.

func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseTRES(t *testing.T) {
	for in, want := range map[string]tres{
		"cpu=2,mem=2G,node=1,billing=2":        {"cpu": 2, "mem": 2048, "node": 1, "billing": 2},
		"cpu=2,mem=512M,node=1,billing=2":      {"cpu": 2, "mem": 512, "node": 1, "billing": 2},
		"cpu=1000000000,mem=976562.50G":        {"cpu": 1000000000, "mem": 1000000000},
		"cpu=16,mem=64G,billing=16,gres/gpu=4": {"cpu": 16, "mem": 65536, "billing": 16, "gres/gpu": 4},
		"":                                     {},
		"(null)":                               {},
	} {
		got, err := parseTRES(in)
		if err != nil || !sameTRES(got, want) {
			t.Errorf("parseTRES(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"cpu", "cpu=x", "gres/gpu=2G", "mem=3Q", "cpu=-1"} {
		if got, err := parseTRES(bad); err == nil {
			t.Errorf("parseTRES(%q) = %v: want an error", bad, got)
		}
	}
	if s := (tres{"mem": 8192, "cpu": 2, "gres/gpu": 0}).String(); s != "cpu=2,gres/gpu=0,mem=8192" {
		t.Errorf("String %q", s)
	}
}

func sameTRES(a, b tres) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestParseUnit(t *testing.T) {
	for _, tc := range []struct {
		tres, unit string
		want       int64
	}{{"cpu", "1", 1}, {"cpu", "4", 4}, {"mem", "1G", 1024}, {"mem", "1Gi", 1024}, {"mem", "512M", 512}, {"mem", "1T", 1 << 20}, {"gres/gpu", "1", 1}} {
		if got, err := parseUnit(tc.tres, tc.unit); err != nil || got != tc.want {
			t.Errorf("parseUnit(%s, %s) = %d, %v; want %d", tc.tres, tc.unit, got, err, tc.want)
		}
	}
	for _, bad := range [][2]string{{"cpu", "1Gi"}, {"cpu", "0"}, {"mem", "0G"}, {"mem", "lots"}} {
		if _, err := parseUnit(bad[0], bad[1]); err == nil {
			t.Errorf("parseUnit(%s, %s): want an error", bad[0], bad[1])
		}
	}
}

func TestParseQueue(t *testing.T) {
	jobs, err := parseQueue(testdata(t, "squeue-live.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 6 {
		t.Fatalf("%d jobs, want 6", len(jobs))
	}
	odd := jobs[2]
	if odd.ID != 14 || odd.Name != "odd|name" || odd.State != "PENDING" || odd.Reason != "AssocGrpCpuLimit" || odd.TRES["cpu"] != 2 || !odd.Start.IsZero() {
		t.Errorf("job 14 %+v", odd)
	}
	inres := jobs[4]
	start := time.Date(2026, 11, 26, 19, 52, 20, 0, time.Local).UTC()
	if inres.Reservation != "clearhouse-r41-0" || inres.TRES["gres/gpu"] != 1 || inres.TRES["mem"] != 1024 || !inres.Start.Equal(start) || inres.Account != "capads" {
		t.Errorf("job 15 %+v", inres)
	}
	if jobs[5].QOS != DefaultQOS || jobs[5].Name != "clearhouse-task-5" || jobs[5].Reservation != "" {
		t.Errorf("job 16 %+v", jobs[5])
	}
	if _, err := parseQueue("12|a|b\n"); err == nil {
		t.Error("a short line: want an error")
	}
}

func TestParseAccounting(t *testing.T) {
	jobs, err := parseAccounting(testdata(t, "sacct.txt"))
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, j := range jobs {
		states[j.Name] = j.State
	}
	want := map[string]string{"train": "RUNNING", "odd|name": "PENDING", "inres": "RUNNING", "clearhouse-task-5": "RUNNING", "clearhouse-task-6": "COMPLETED", "clearhouse-task-7": "FAILED"}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("states %v, want %v", states, want)
	}
	if j := jobs[5]; j.End.IsZero() || j.TRES["cpu"] != 1 || !failed(j.State) {
		t.Errorf("job 18 %+v", j)
	}
}

func TestParseAssociationsAndQOS(t *testing.T) {
	rows, err := parseAssociations(testdata(t, "sacctmgr-associations.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0].account != "capads" || rows[0].user != "" || !sameTRES(rows[0].grpTRES, tres{"cpu": 3, "gres/gpu": 1, "mem": 4096}) {
		t.Errorf("rows %+v", rows)
	}
	if !slices.Equal(rows[2].qos, []string{DefaultQOS, "normal"}) {
		t.Errorf("capml's QOS %v", rows[2].qos)
	}
	all, err := parseQOS(testdata(t, "sacctmgr-qos.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if n := all["normal"]; !slices.Equal(n.preempt, []string{DefaultQOS}) || n.preemptMode != "cluster" {
		t.Errorf("normal %+v", n)
	}
	if be := all[DefaultQOS]; be.preemptMode != "cancel" || be.grpTRES["mem"] != 1_000_000_000 || be.grpTRES["cpu"] != 1_000_000_000 {
		t.Errorf("%s %+v", DefaultQOS, be)
	}
}

func TestParseNodesAndReservations(t *testing.T) {
	total, err := parseNodes(testdata(t, "scontrol-nodes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !sameTRES(total, tres{"cpu": 16, "mem": 65536, "billing": 16, "gres/gpu": 4}) {
		t.Errorf("capacity %v", total)
	}
	res, err := parseReservations(testdata(t, "scontrol-reservations.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res["someone-else"]; ok || len(res) != 2 {
		t.Errorf("reservations %v: want Clearhouse's two only", res)
	}
	if r := res["clearhouse-r42-1"]; r.CPUs != 1 || r.Accounts != "capml" || r.End.Sub(r.Start) != time.Hour {
		t.Errorf("clearhouse-r42-1 %+v", r)
	}
}

// fakeSlurm answers the backend's commands with the captured outputs and records
// what it was asked to change. The backend may run commands together: mu guards the
// records while it does.
type fakeSlurm struct {
	t       *testing.T
	mu      sync.Mutex
	changes []string
	calls   []string // every command line
}

func (f *fakeSlurm) Run(_ context.Context, stdin, name string, args ...string) (string, error) {
	line := name + " " + strings.Join(args, " ")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, line)
	switch {
	case strings.Contains(line, "show associations") && slices.Contains(args, "user="):
		var own []string // the accounts' own associations: no user
		for _, l := range strings.SplitAfter(testdata(f.t, "sacctmgr-associations.txt"), "\n") {
			if f := strings.Split(l, "|"); len(f) > 1 && f[1] == "" {
				own = append(own, l)
			}
		}
		return strings.Join(own, ""), nil
	case strings.Contains(line, "show config"):
		return testdata(f.t, "scontrol-config.txt"), nil
	case strings.Contains(line, "show qos"):
		return testdata(f.t, "sacctmgr-qos.txt"), nil
	case strings.Contains(line, "show associations"):
		return testdata(f.t, "sacctmgr-associations.txt"), nil
	case strings.Contains(line, "show nodes"):
		return testdata(f.t, "scontrol-nodes.txt"), nil
	case strings.Contains(line, "show reservations"):
		return testdata(f.t, "scontrol-reservations.txt"), nil
	case name == "squeue" && strings.Contains(line, "--qos="):
		return inStates(testdata(f.t, "squeue-besteffort.txt"), args), nil
	case name == "squeue" && strings.Contains(line, "--states=RUNNING "):
		return testdata(f.t, "squeue-running.txt"), nil
	case name == "squeue":
		return inStates(testdata(f.t, "squeue-live.txt"), args), nil
	case name == "sacct":
		return testdata(f.t, "sacct.txt"), nil
	}
	f.changes = append(f.changes, strings.TrimSpace(line+" "+stdin))
	return "99\n", nil
}

// inStates keeps the lines of a captured squeue output in the states squeue's
// --states argument names, as squeue would have.
func inStates(out string, args []string) string {
	var states string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--states="); ok {
			states = v
		}
	}
	if states == "all" {
		return out
	}
	var keep []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Split(line, "|"); len(f) > 3 && slices.Contains(strings.Split(states, ","), f[3]) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

func openFake(t *testing.T) (*Backend, *fakeSlurm) {
	t.Helper()
	cfg, err := agent.ParseConfig("hpc.yaml", []byte(`cluster: hpc
teams:
  ads: {account: capads}
  ml: {account: capml}
pools:
  hpc/cpu: {tres: cpu, unit: "1"}
  hpc/ram: {tres: mem, unit: "1G"}
  hpc/gpu: {tres: gres/gpu, unit: "1"}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeSlurm{t: t}
	now := time.Date(2026, 11, 26, 19, 53, 0, 0, time.Local)
	b, err := Open(context.Background(), cfg, f, nil, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	return b, f
}

// On the captured cluster (made before best-effort accounts): Open takes the
// best-effort QOS from the team's account and its users, clears the QOS's own limits,
// and creates the best-effort accounts with the agent's user; Measure counts running
// jobs; best-effort tasks are not their team's own usage.
func TestMeasureOnCapturedCluster(t *testing.T) {
	b, f := openFake(t)
	want := []string{
		"sacctmgr --immediate modify qos where name=clearhouse-best-effort set GrpTRES=cpu=-1,gres/gpu=-1,mem=-1",
		"sacctmgr --immediate modify account where name=capml cluster=clearhouse set QOS-=clearhouse-best-effort",
		"sacctmgr --immediate add account clearhouse-be cluster=clearhouse Description=Clearhouse best-effort accounts",
		"sacctmgr --immediate add account clearhouse-be-capads,clearhouse-be-capml parent=clearhouse-be cluster=clearhouse QOS=clearhouse-best-effort DefaultQOS=clearhouse-best-effort Description=Clearhouse best-effort tasks",
		"sacctmgr --immediate add user " + b.agentUser + " account=clearhouse-be-capads,clearhouse-be-capml cluster=clearhouse",
		"sacctmgr --immediate modify user where name=root account=capml cluster=clearhouse set QOS-=clearhouse-best-effort",
	}
	if b.cluster != "clearhouse" || !slices.Equal(f.changes, want) {
		t.Fatalf("cluster %q, changes %q\nwant %q", b.cluster, f.changes, want)
	}
	m, err := b.Measure(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	wantPools := []agent.PoolMeasure{{Pool: "hpc/cpu", Used: 5, Capacity: 16}, {Pool: "hpc/gpu", Used: 1, Capacity: 4}, {Pool: "hpc/ram", Used: 4, Capacity: 64}}
	if !slices.Equal(m.Pools, wantPools) {
		t.Errorf("pools %+v, want %+v", m.Pools, wantPools)
	}
	for _, o := range []agent.OwnerUsage{{Team: "ads", Pool: "hpc/cpu", Units: 3}, {Team: "ads", Pool: "hpc/ram", Units: 3}, {Team: "ads", Pool: "hpc/gpu", Units: 1}, {Team: "ml", Pool: "hpc/cpu", Units: 0}} {
		if !slices.Contains(m.Owners, o) {
			t.Errorf("owners %+v: want %+v", m.Owners, o)
		}
	}
}

// ApplyQuotas writes only the TRES that differ, the team's own account exactly its
// units (its running best-effort work adds nothing) and its best-effort account the
// grant; a first write is no drift; a value that then differs from what it set is.
func TestApplyQuotasOnCapturedCluster(t *testing.T) {
	b, f := openFake(t)
	f.changes = nil
	fixes, err := b.ApplyQuotas(context.Background(), []agent.Quota{{Team: "ads", Pool: "hpc/cpu", Units: 3}, {Team: "ads", Pool: "hpc/ram", Units: 4},
		{Team: "ads", Pool: "hpc/gpu", Units: 2}, {Team: "search", Pool: "hpc/cpu", Units: 9}, {Team: "ml", Pool: "hpc/cpu", BestEffort: 2}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"sacctmgr --immediate modify account where name=capads cluster=clearhouse set GrpTRES=gres/gpu=2",
		"sacctmgr --immediate modify account where name=clearhouse-be-capads,capml cluster=clearhouse set GrpTRES=cpu=0,gres/gpu=0,mem=0",
		"sacctmgr --immediate modify account where name=clearhouse-be-capml cluster=clearhouse set GrpTRES=cpu=2,gres/gpu=0,mem=0",
	}
	var grp []string
	for _, c := range f.changes {
		if strings.Contains(c, "GrpTRES") {
			grp = append(grp, c)
		}
	}
	if !slices.Equal(grp, want) {
		t.Errorf("commands %q\nwant %q", grp, want)
	}
	// No GrpTRES write is drift yet; the captured capml still lists the best-effort QOS
	// that Open took away: as if someone gave it back, which is.
	qosBack := agent.Correction{Team: "ml", Object: "assoc capml QOS", Was: "clearhouse-best-effort,normal", Now: "normal"}
	if !slices.Equal(fixes, []agent.Correction{qosBack}) {
		t.Errorf("corrections %v, want only %v", fixes, qosBack)
	}
	// The captured cluster still shows capads's GPU at 1, not the 2 just set (and the
	// other values as before): as if someone else changed them back.
	fixes, err = b.ApplyQuotas(context.Background(), []agent.Quota{{Team: "ads", Pool: "hpc/cpu", Units: 3}, {Team: "ads", Pool: "hpc/ram", Units: 4},
		{Team: "ads", Pool: "hpc/gpu", Units: 2}, {Team: "ml", Pool: "hpc/cpu", BestEffort: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(fixes, agent.Correction{Team: "ads", Pool: "hpc/gpu", Object: "assoc capads GrpTRES", Was: "gres/gpu=1", Now: "gres/gpu=2"}) {
		t.Errorf("corrections %v: want capads's GPU put back from 1 to 2", fixes)
	}
}

// ApplyQuotas reads the accounts' own associations at every call, and the QOS list
// and the users' associations (slow with many accounts) only every qosCheckEvery or
// when the QOS the accounts use change; a QOS of a user's association that may not
// preempt best-effort jobs is found at that check.
func TestApplyQuotasReadsUsersAssociationsSeldom(t *testing.T) {
	b, f := openFake(t)
	reads := func() (users, qos int) {
		for _, c := range f.calls {
			switch {
			case strings.Contains(c, "show associations") && !strings.Contains(c, " user= "):
				users++
			case strings.Contains(c, "show qos"):
				qos++
			}
		}
		return users, qos
	}
	if users, qos := reads(); users != 1 || qos != 1 {
		t.Fatalf("Open read users' associations %d times and the QOS %d times, want once each: %q", users, qos, f.calls)
	}
	f.calls = nil
	apply := func() {
		t.Helper()
		if _, err := b.ApplyQuotas(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	apply()
	if users, qos := reads(); users != 0 || qos != 0 || !slices.ContainsFunc(f.calls, func(c string) bool { return strings.Contains(c, " user= ") }) {
		t.Fatalf("a poll right after Open: %q, want the accounts' own associations read, nothing else of them", f.calls)
	}
	now := b.now()
	b.now = func() time.Time { return now.Add(qosCheckEvery) }
	f.calls = nil
	apply()
	if users, qos := reads(); users != 1 || qos != 1 {
		t.Fatalf("a poll %s later: %q, want the QOS and the users' associations read again", qosCheckEvery, f.calls)
	}
	f.calls = nil
	b.qosUsed = "other" // as if an account had been given another QOS since
	apply()
	if users, qos := reads(); users != 1 || qos != 1 {
		t.Fatalf("a poll after the accounts' QOS changed: %q, want the QOS and the users' associations read again", f.calls)
	}
}

// SyncTasks: a task with a job is not submitted again, its events come from the job's
// state; a new task is submitted with its configuration; a stopped one is cancelled.
func TestSyncTasksOnCapturedCluster(t *testing.T) {
	b, f := openFake(t)
	f.changes = nil
	script := &agent.Workload{Slurm: &agent.SlurmWorkload{Script: "#!/bin/sh\nsleep 60\n"}}
	run := []agent.Task{
		{ID: 5, Team: "ml", Configuration: map[string]int64{"hpc/cpu": 2}, Workload: script},
		{ID: 6, Team: "ml", Configuration: map[string]int64{"hpc/cpu": 1}, Workload: script},
		{ID: 7, Team: "ml", Configuration: map[string]int64{"hpc/cpu": 1}, Workload: script},
		{ID: 8, Team: "ads", Configuration: map[string]int64{"hpc/cpu": 2, "hpc/ram": 3, "hpc/gpu": 1}, Workload: &agent.Workload{Slurm: &agent.SlurmWorkload{Command: "sleep 60"}}},
	}
	stop := []agent.Task{{ID: 9, Team: "ml"}}
	ev, err := b.SyncTasks(context.Background(), run, stop)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(ev))
	for i, e := range ev {
		got[i] = fmt.Sprintf("%d %s", e.Task, e.Event)
	}
	want := []string{"5 started", "6 started", "6 done", "7 started", "7 failed", "9 stopped"}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	sub := "sbatch --parsable --job-name=clearhouse-task-8 --account=clearhouse-be-capads --qos=clearhouse-best-effort --ntasks=1 --chdir=" + os.TempDir() +
		" --output=%x-%j.out --cpus-per-task=2 --mem=3072M --gres=gpu:1 --wrap=sleep 60"
	if !slices.Equal(f.changes, []string{sub}) {
		t.Errorf("commands %q, want only %q", f.changes, sub)
	}
	if ev, _ := b.SyncTasks(context.Background(), run[:3], nil); len(ev) != 0 {
		t.Errorf("events repeated within a process: %v", ev)
	}
}

// FollowReservations on the captured cluster: reservations that match the plan are
// left alone, a moved one is updated, a dropped one deleted (someone else's never);
// usage comes from the jobs running in a reservation, waiting tasks from those queued.
func TestFollowReservationsOnCapturedCluster(t *testing.T) {
	b, f := openFake(t)
	f.changes = nil
	at := func(clock string) time.Time {
		tm, err := time.ParseInLocation(slurmTime, "2026-11-26T"+clock, time.Local)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UTC()
	}
	running := agent.Job{Reservation: 41, Request: 0, Team: "ads", Configuration: map[string]int64{"hpc/cpu": 1, "hpc/gpu": 1}, Count: 2, Units: 2,
		Start: at("19:50:00"), End: at("20:22:19")}
	waiting := agent.Job{Reservation: 42, Request: 1, Team: "ml", Configuration: map[string]int64{"hpc/cpu": 1}, Count: 1,
		Start: at("21:52:20"), End: at("22:52:20")}
	plan := agent.Plan{Now: at("19:53:00"), Running: []agent.Job{running}, Waiting: []agent.Job{waiting}}
	report, err := b.FollowReservations(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.changes) != 0 {
		t.Errorf("commands %q: the reservations match the plan, want none", f.changes)
	}
	wantUsage := []agent.JobUsage{{Reservation: 41, Pool: "hpc/cpu", Units: 1}, {Reservation: 41, Pool: "hpc/gpu", Units: 1}}
	if !slices.Equal(report.Usage, wantUsage) {
		t.Errorf("usage %+v, want %+v", report.Usage, wantUsage)
	}
	if want := []agent.JobWaiting{{Reservation: 42, Request: 1, Tasks: 1}}; !slices.Equal(report.Waiting, want) {
		t.Errorf("waiting %+v, want %+v", report.Waiting, want)
	}
	if len(report.Starts)+len(report.Ends) != 0 {
		t.Errorf("starts %v, ends %v: want none", report.Starts, report.Ends)
	}

	// The plan moves the running one's end and drops the waiting one.
	running.End = at("20:30:00")
	if _, err := b.FollowReservations(context.Background(), agent.Plan{Now: at("19:53:00"), Running: []agent.Job{running}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"scontrol update ReservationName=clearhouse-r41-0 EndTime=2026-11-26T20:30:00", "scontrol delete ReservationName=clearhouse-r42-1"}
	if !slices.Equal(f.changes, want) {
		t.Errorf("commands %q, want %q", f.changes, want)
	}
}
