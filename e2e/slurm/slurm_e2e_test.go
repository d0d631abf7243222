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
	"github.com/clearhouse/clearhouse/agent/slurm/slurmtest"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// slurmMarket is the production wiring with clock at the real time (Slurm runs on it)
// for a cluster "hpc" of 16 cores that a real Slurm cluster (scripts/slurm-up.sh)
// runs: teams search and ads, each a fresh Slurm account, and the agent's config.
type slurmMarket struct {
	*agentMarket
	accounts map[string]string // team -> Slurm account
	config   string
}

func newSlurmMarket(t *testing.T) *slurmMarket {
	t.Helper()
	slurmtest.Require(t)
	dir := t.TempDir()
	dsn := storetest.MigratedFile(t)
	clock := storetest.NewClock(time.Now().UTC().Truncate(time.Second))
	app := e2etest.Open(t, server.Config{Addr: "127.0.0.1:0", DB: dsn, Migrate: true, LoginRate: 100, Tick: time.Hour, PreviewEvery: time.Minute}, clock)
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(app.Market.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve))
	must(app.Market.AddCluster(ctx, exchange.Cluster{ID: "hpc"}))
	must(app.Market.AddPool(ctx, exchange.PoolSpec{ClusterID: "hpc", Resource: "cpu", Unit: "core", Capacity: 16,
		UnitCost: ledger.Dollar, Utilization: 0.8, CurveID: "standard"}))
	must(app.Market.AddTeam(ctx, exchange.NewTeam{ID: "search", Budget: 1000 * ledger.Dollar}))
	must(app.Market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Budget: 1000 * ledger.Dollar}))
	member, err := app.Identity.AddUser(ctx, identity.NewUser{Email: "member@search.io", Role: identity.RoleMember, TeamID: "search"})
	must(member, err)
	m := &slurmMarket{agentMarket: &agentMarket{&e2etest.Market{T: t, App: app, Clock: clock, DSN: dsn, Member: member}}, accounts: map[string]string{}}

	cluster := slurmtest.Cluster()
	suffix := fmt.Sprintf("%x", time.Now().UnixNano()%(1<<30))
	m.accounts["search"], m.accounts["ads"] = "e2esearch"+suffix, "e2eads"+suffix
	slurmtest.AddAccounts(t, []string{m.accounts["search"], m.accounts["ads"]},
		[]string{slurm.BestEffortAccount(m.accounts["search"]), slurm.BestEffortAccount(m.accounts["ads"])})
	m.config = filepath.Join(dir, "hpc.yaml")
	yaml := fmt.Sprintf("cluster: hpc\nteams:\n  search: {account: %s}\n  ads: {account: %s}\npools:\n  hpc/cpu: {tres: cpu, unit: \"1\"}\nslurm: {cluster: %s}\n",
		m.accounts["search"], m.accounts["ads"], cluster)
	if err := os.WriteFile(m.config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *slurmMarket) slurm(name string, args ...string) string {
	m.T.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		m.T.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// agentOnce runs `clearhouse agent --backend slurm --config FILE --once`: a fresh
// agent each time, as after a restart, with nothing of the last run's memory.
func (m *slurmMarket) agentOnce(token string) string {
	m.T.Helper()
	if d := time.Since(m.Clock.Now()); d > 0 {
		m.Clock.Advance(d.Truncate(time.Second)) // the server's clock follows Slurm's
	}
	code, out, errOut := m.Agent("hpc", token, "--backend", "slurm", "--config", m.config, "--once")
	if code != 0 || errOut != "" {
		m.T.Fatalf("agent --backend slurm --once: exit %d\n%s%s", code, out, errOut)
	}
	return out
}

// win runs an auction in which team wins cores of hpc/cpu.
func (m *slurmMarket) win(team string, cores int64) {
	m.T.Helper()
	ctx := context.Background()
	a, err := m.App.Market.ScheduleAuction(ctx, m.Clock.Now(), m.Clock.Now().Add(time.Hour), auction.DefaultParams)
	if err != nil {
		m.T.Fatal(err)
	}
	if _, err := m.App.Market.OpenDue(ctx); err != nil {
		m.T.Fatal(err)
	}
	limit := 500 * ledger.Dollar
	if _, err := m.App.Market.PlaceOrder(ctx, m.Member, exchange.OrderSpec{Team: team, Bundles: []exchange.Bundle{{"hpc/cpu": cores}}, Limit: &limit}); err != nil {
		m.T.Fatal(err)
	}
	if _, err := m.App.Market.Close(ctx, a.ID); err != nil {
		m.T.Fatal(err)
	}
}

func (m *slurmMarket) grpTRES(team string) string {
	return m.slurm("sacctmgr", "--noheader", "--parsable2", "show", "assoc", "where", "account="+m.accounts[team], "user=", "format=GrpTRES")
}

func (m *slurmMarket) jobState(id string) string {
	return m.slurm("squeue", "--noheader", "--states=all", "--jobs="+id, "--Format=State:|,Reason:")
}

// eventually polls cond every 100 ms for up to a minute: Slurm schedules at each
// submission and every few seconds (scripts/slurm-up.sh), and a squeue takes about
// 10 ms.
func (m *slurmMarket) eventually(what string, cond func() bool) {
	m.T.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
	}
	m.T.Fatalf("after a minute: not %s", what)
}

// The real server, the real agent (`clearhouse agent --backend slurm`) and real Slurm
// daemons: a settlement sets the account's GrpTRES within one poll; a job beyond the
// team's quota waits for that reason and starts after the team buys more; running
// jobs' TRES are the measured utilization and owners' usage; a reservation becomes a
// Slurm reservation whose job runs in it and whose end the server hears; every agent
// run is a fresh agent (a restart) and creates nothing twice; `clearhouse verify`
// finds nothing wrong.
func TestSlurmAgentEndToEnd(t *testing.T) {
	m := newSlurmMarket(t)
	ctx := context.Background()
	token := m.Token("hpc")

	m.win("search", 2)
	out := m.agentOnce(token)
	if got := m.grpTRES("search"); got != "cpu=2" {
		t.Fatalf("search's GrpTRES after the settlement and one poll %q, want cpu=2\n%s", got, out)
	}
	if got := m.grpTRES("ads"); got != "cpu=0" {
		t.Errorf("ads holds nothing: GrpTRES %q, want cpu=0", got)
	}

	sbatch := func(args ...string) string {
		return m.slurm("sbatch", append([]string{"--parsable", "--chdir=" + os.TempDir(), "--output=/dev/null", "--mem=100M"}, args...)...)
	}
	first := sbatch("--account="+m.accounts["search"], "--cpus-per-task=2", "--wrap=sleep 300")
	m.eventually("the first job running", func() bool { return m.jobState(first) == "RUNNING|None" })
	second := sbatch("--account="+m.accounts["search"], "--cpus-per-task=1", "--wrap=sleep 300")
	m.eventually("the second job waiting for search's CPU limit", func() bool { return m.jobState(second) == "PENDING|AssocGrpCpuLimit" })

	m.agentOnce(token)
	var usage []besteffort.IdleUsage
	if err := m.App.DB.Read.Where("pool_id = ?", "hpc/cpu").Order("team_id").Find(&usage).Error; err != nil {
		t.Fatal(err)
	}
	if len(usage) != 2 || usage[0].TeamID != "ads" || usage[0].Units != 0 || usage[1].TeamID != "search" || usage[1].Units != 2 {
		t.Errorf("owners' usage on the server %+v: want ads 0, search 2", usage)
	}
	if u, err := m.App.Market.Utilization(ctx); err != nil || u["hpc/cpu"] <= 0 || u["hpc/cpu"] == 0.8 {
		t.Errorf("measured utilization of hpc/cpu %v (%v): want what runs, not the stored 0.8", u, err)
	}

	m.win("search", 1)
	m.agentOnce(token)
	if got := m.grpTRES("search"); got != "cpu=3" {
		t.Fatalf("search's GrpTRES after buying a third core %q, want cpu=3", got)
	}
	m.eventually("the second job running after search bought more", func() bool { return m.jobState(second) == "RUNNING|None" })
	m.slurm("scancel", first, second)

	// A reservation of 2 cores for 30 minutes, now.
	res := m.reserveOn("hpc/cpu", 2, 30*time.Minute)
	out = m.agentOnce(token)
	name := fmt.Sprintf("clearhouse-r%d-0", res.ID)
	show := m.slurm("scontrol", "--oneliner", "show", "reservation", name)
	if !strings.Contains(show, "TRES=cpu=2") || !strings.Contains(show, "Accounts="+m.accounts["search"]) {
		t.Fatalf("Slurm reservation %s: %s\nagent:\n%s", name, show, out)
	}
	// The 2 cores fit in search's 3: the reservation is free and does not raise the
	// limit (the one rule, issue 37), where the agent once wrote 3 + 2.
	if got := m.grpTRES("search"); got != "cpu=3" {
		t.Errorf("GrpTRES with a reservation inside the quota running %q, want cpu=3 (3 held, nothing reserved beyond them)", got)
	}
	// The job runs until the test lets it end (a file appears), so that the poll sees
	// it running however loaded the machine, and then completes.
	release := filepath.Join(t.TempDir(), "release")
	inRes := sbatch("--account="+m.accounts["search"], "--reservation="+name, "--cpus-per-task=2", "--wrap=until [ -e "+release+" ]; do sleep 0.1; done")
	m.eventually("the job running in its reservation", func() bool { return m.jobState(inRes) == "RUNNING|None" })
	m.agentOnce(token)
	if u := m.Reservation(res.ID).Requests[0].UsageByPool(); u["hpc/cpu"] != 2 {
		t.Errorf("the reservation's usage on the server %v, want 2 cores", u)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m.eventually("the reservation's job ended", func() bool { return strings.HasPrefix(m.jobState(inRes), "COMPLETED") || m.jobState(inRes) == "" })
	// The agent learns a reservation's end from slurmctld (squeue lists an ended job
	// for MinJobAge) or accounting (sacct): once the end is known, one poll of a fresh
	// agent, which never saw the job run, reports it.
	m.eventually("accounting knowing the job's end", func() bool {
		state, end, _ := strings.Cut(m.slurm("sacct", "--noheader", "--parsable2", "--allocations", "--jobs="+inRes, "--format=State,End"), "|")
		return state == "COMPLETED" && end != "" && end != "Unknown"
	})
	out = m.agentOnce(token)
	if v := m.Reservation(res.ID); v.Status != fleet.ReservationDone {
		t.Errorf("reservation %d after its job ended: %s, want done (its end reported); server's clock %s, request %+v, sacct:\n%s\nagent:\n%s", res.ID, v.Status, m.Clock.Now().Format(time.RFC3339Nano), v.Requests[0],
			m.slurm("sacct", "--noheader", "--parsable2", "--allocations", "--jobs="+inRes, "--format=JobID,State,Start,End,Reservation,Account"), out)
	}
	m.agentOnce(token) // the plan no longer has it: the Slurm reservation goes
	if out, _ := exec.Command("scontrol", "--oneliner", "show", "reservation", name).CombinedOutput(); !strings.Contains(string(out), "not found") {
		t.Errorf("Slurm reservation %s after the end: %s", name, out)
	}

	m.Verify()
}

// reserveOn submits a reservation of cores of pool for dur, starting in the slot that
// runs now.
func (m *slurmMarket) reserveOn(pool string, cores int64, dur time.Duration) fleet.ReservationView {
	m.T.Helper()
	m.Clock.Set(time.Now().UTC().Truncate(5 * time.Minute)) // at the slot's start, so the plan runs it now
	ctx, now := context.Background(), m.Clock.Now()
	id, err := m.App.Plan.NewReservation(ctx, m.Member)
	if err != nil {
		m.T.Fatal(err)
	}
	v, err := m.App.Plan.Submit(ctx, m.Member, id, fleet.Definition{Value: 100 * ledger.Dollar, Requests: []fleet.RequestSpec{{
		Configuration: map[string]int64{pool: 1}, Count: cores, Duration: dur, Arrival: now, Deadline: now.Add(2 * dur)}}})
	if err != nil || v.Status != fleet.ReservationAccepted {
		m.T.Fatalf("reservation of %d cores: %+v, %v", cores, v.Reservation, err)
	}
	return v
}

// A best-effort task of team ads (which holds nothing) runs as a Slurm job under ads's
// best-effort account in Clearhouse's QOS; its start reaches the server; the agent restarted three
// times leaves one job and the first start; search, which holds the cores, runs a job
// that needs them: Slurm preempts the task and the server hears it stopped; clearhouse
// verify is clean.
func TestSlurmBestEffortTaskRunsAsAJobAcrossRestarts(t *testing.T) {
	m := newSlurmMarket(t)
	ctx := context.Background()
	token := m.Token("hpc")
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
	view := func() besteffort.JobView {
		v, err := m.App.Idle.Job(ctx, job.ID)
		if err != nil || len(v.Runs) != 1 {
			t.Fatalf("job: %d runs, %v", len(v.Runs), err)
		}
		return v
	}
	m.eventually("the task started on the server", func() bool {
		m.agentOnce(token)
		v, err := m.App.Idle.Job(ctx, job.ID)
		return err == nil && len(v.Runs) == 1
	})
	name := fmt.Sprintf("clearhouse-task-%d", view().Runs[0].ID)
	jobs := func() []string {
		// This test's account only: an earlier run's task 1 (numbers start again in each
		// test's database) may still be listed under its own account.
		return strings.Fields(m.slurm("squeue", "--noheader", "--states=all", "--name="+name, "--account="+slurm.BestEffortAccount(m.accounts["ads"]), "--Format=JobID:|,Account:|,QOS:|,State:"))
	}
	m.eventually("the task's job running in Slurm and its start confirmed", func() bool {
		m.agentOnce(token)
		return view().Runs[0].ConfirmedAt != nil
	})
	if got := jobs(); len(got) != 1 || !strings.HasSuffix(got[0], "|"+slurm.BestEffortAccount(m.accounts["ads"])+"|clearhouse-best-effort|RUNNING") {
		t.Fatalf("Slurm jobs named %s: %v, want one running under %s in clearhouse-best-effort", name, got, slurm.BestEffortAccount(m.accounts["ads"]))
	}
	confirmed := *view().Runs[0].ConfirmedAt
	for range 3 { // three fresh agents: a kill and restart each
		m.agentOnce(token)
	}
	if got := jobs(); len(got) != 1 {
		t.Fatalf("Slurm jobs named %s after restarts: %v, want one", name, got)
	}
	if v := view(); v.Runs[0].Status != besteffort.TaskRunning || !v.Runs[0].ConfirmedAt.Equal(confirmed) || v.Tasks != 1 {
		t.Fatalf("after restarts: task %s confirmed %v (first %v), %d tasks", v.Runs[0].Status, v.Runs[0].ConfirmedAt, confirmed, v.Tasks)
	}

	// search needs its 13 cores; 10 are free: Slurm preempts the task.
	owner := m.slurm("sbatch", "--parsable", "--chdir="+os.TempDir(), "--output=/dev/null", "--mem=100M",
		"--account="+m.accounts["search"], "--cpus-per-task=13", "--wrap=sleep 300")
	m.eventually("search's job running", func() bool { return m.jobState(owner) == "RUNNING|None" })
	if got := jobs(); len(got) != 1 || !strings.HasSuffix(got[0], "|PREEMPTED") {
		t.Fatalf("Slurm jobs named %s after search's job started: %v, want the one PREEMPTED", name, got)
	}
	m.eventually("the server hearing the task stopped", func() bool {
		m.agentOnce(token)
		return view().Runs[0].Status != besteffort.TaskRunning
	})
	if got := jobs(); len(got) != 1 {
		t.Errorf("Slurm jobs named %s after the preemption: %v, want still one (nothing resubmitted)", name, got)
	}
	m.Verify()
}
