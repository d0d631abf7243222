package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/agentcmd"
	_ "github.com/clearhouse/clearhouse/agent/kubernetes" // for agentBinary, as clearhouse-agent
	"github.com/clearhouse/clearhouse/agent/simulate"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// agentMarket is the production wiring on a fresh SQLite file with a fixed clock:
// clusters us-east (100 cores of us-east/cpu) and eu-west, and team search with a
// member.
type agentMarket struct {
	t      *testing.T
	app    *server.App
	clock  *storetest.Clock
	dsn    string
	member identity.User
}

func newAgentMarket(t *testing.T) *agentMarket {
	t.Helper()
	dsn := storetest.MigratedFile(t)
	cfg := server.Config{Addr: "127.0.0.1:0", DB: dsn, Migrate: true, LoginRate: 100, Tick: time.Hour, PreviewEvery: time.Minute}
	clock := storetest.NewClock(time.Time{})
	app := server.NewApp(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), clock.Now)
	ctx := context.Background()
	if err := app.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		app.Close(ctx)
	})
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(app.Market.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve))
	must(app.Market.AddCluster(ctx, exchange.Cluster{ID: "us-east"}))
	must(app.Market.AddCluster(ctx, exchange.Cluster{ID: "eu-west"}))
	must(app.Market.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 100,
		UnitCost: ledger.Dollar, Utilization: 0.8, CurveID: "standard"}))
	must(app.Market.AddTeam(ctx, exchange.NewTeam{ID: "search", Budget: 1000 * ledger.Dollar}))
	member, err := app.Identity.AddUser(ctx, identity.NewUser{Email: "member@search.io", Role: identity.RoleMember, TeamID: "search"})
	must(member, err)
	return &agentMarket{t: t, app: app, clock: clock, dsn: dsn, member: member}
}

// reserve submits count cores of us-east/cpu for dur inside [now+from, now+to).
func (m *agentMarket) reserve(count int64, dur, from, to time.Duration) fleet.ReservationView {
	m.t.Helper()
	ctx, now := context.Background(), m.clock.Now()
	id, err := m.app.Plan.NewReservation(ctx, m.member)
	if err != nil {
		m.t.Fatal(err)
	}
	v, err := m.app.Plan.Submit(ctx, m.member, id, fleet.Definition{Value: 100 * ledger.Dollar, Requests: []fleet.RequestSpec{{
		Configuration: map[string]int64{"us-east/cpu": 1}, Count: count, Duration: dur, Arrival: now.Add(from), Deadline: now.Add(to)}}})
	if err != nil || v.Status != fleet.ReservationAccepted {
		m.t.Fatalf("reservation of %d cores: %+v, %v", count, v.Reservation, err)
	}
	return v
}

func (m *agentMarket) reservation(id int64) fleet.ReservationView {
	m.t.Helper()
	v, err := m.app.Plan.Reservation(context.Background(), id)
	if err != nil {
		m.t.Fatal(err)
	}
	return v
}

// token issues an agent token for cluster through the command line and returns its
// last line.
func (m *agentMarket) token(cluster string) string {
	m.t.Helper()
	code, out, errOut := runCLI(m.t, "", "agent", "token", "--cluster", cluster, "--db", m.dsn)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) < 2 || !strings.HasPrefix(lines[len(lines)-1], "cha_") {
		m.t.Fatalf("agent token --cluster %s: %d %q %q", cluster, code, out, errOut)
	}
	return lines[len(lines)-1]
}

// loop is the agent's loop against the app for cluster us-east with the token, on the
// simulate backend (the print backend when sim is nil), stamping lines with the
// market's clock.
func (m *agentMarket) loop(token string, sim *agent.Simulation, out, errOut io.Writer) (*agent.Loop, *simulate.Cluster) {
	m.t.Helper()
	client, err := agent.NewClient(m.app.Server.URL(), "us-east", token)
	if err != nil {
		m.t.Fatal(err)
	}
	cluster := simulate.New(out, sim)
	return &agent.Loop{Client: client, Backend: cluster, Out: out, ErrOut: errOut, Now: m.clock.Now, Every: time.Second}, cluster
}

// agent runs `clearhouse agent` against the app for cluster with the token and the
// extra flags, and gives up after 20s so that an agent that fails to stop fails
// the test instead of hanging it.
func (m *agentMarket) agent(cluster, token string, flags ...string) (int, string, string) {
	m.t.Helper()
	return m.runAgent(func(ctx context.Context, args []string, out, errOut io.Writer) int {
		return run(ctx, append([]string{"agent"}, args...), strings.NewReader(""), out, errOut)
	}, cluster, token, flags)
}

// agentBinary runs clearhouse-agent's command line (agentcmd.Run with every backend,
// as cmd/clearhouse-agent does; this file imports the kubernetes backend) in this
// process, as agent runs `clearhouse agent`'s.
func (m *agentMarket) agentBinary(cluster, token string, flags ...string) (int, string, string) {
	m.t.Helper()
	return m.runAgent(func(ctx context.Context, args []string, out, errOut io.Writer) int {
		return agentcmd.Run(ctx, agentcmd.Options{Path: agentcmd.Binary, Version: version}, args, out, errOut)
	}, cluster, token, flags)
}

// runAgent runs an agent's command line with the server, token and cluster flags and
// the extra flags, and gives up after 20s.
func (m *agentMarket) runAgent(run func(context.Context, []string, io.Writer, io.Writer) int, cluster, token string, flags []string) (int, string, string) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	args := append([]string{"--server", m.app.Server.URL(), "--token", token, "--cluster", cluster}, flags...)
	code := run(ctx, args, &out, &errOut)
	if ctx.Err() != nil {
		m.t.Fatalf("agent %v did not stop by itself", flags)
	}
	return code, out.String(), errOut.String()
}

func TestAgentOnceSimulatedReportsUsageAndWaitingTasks(t *testing.T) {
	m := newAgentMarket(t)
	full := m.reserve(100, time.Hour, 0, time.Hour)   // all 100 cores, now
	later := m.reserve(50, time.Hour, 0, 3*time.Hour) // no room until 10:00
	tok := m.token("us-east")

	code, out, errOut := m.agent("us-east", tok, "--once", "--simulate")
	if code != 0 {
		t.Fatalf("agent --once --simulate: %d\n%s%s", code, out, errOut)
	}
	start := fmt.Sprintf(`09:00:00 start reservation %d request 0: 100 x {"us-east/cpu":1} until 10:00 (team search)`, full.ID)
	waiting := fmt.Sprintf(`09:00:00 waiting: reservation %d request 0 planned 10:00 (team search)`, later.ID)
	if !strings.Contains(out, start) || !strings.Contains(out, waiting) {
		t.Fatalf("output\n%s\nwant the lines\n%s\n%s", out, start, waiting)
	}
	if u := m.reservation(full.ID).Requests[0].UsageByPool(); u["us-east/cpu"] != 100 {
		t.Fatalf("used units of reservation %d: %v, want 100", full.ID, u)
	}
	if w := m.reservation(later.ID).Requests[0].WaitingTasks; w == nil || *w != 50 {
		t.Fatalf("waiting tasks of reservation %d: %v, want 50", later.ID, w)
	}

	// Without --simulate the agent only follows the plan: nothing is reported.
	fresh := m.reserve(10, time.Hour, 2*time.Hour, 3*time.Hour)
	if code, out, errOut = m.agent("us-east", tok, "--once"); code != 0 || !strings.Contains(out, start) {
		t.Fatalf("agent --once: %d\n%s%s", code, out, errOut)
	}
	if v := m.reservation(fresh.ID).Requests[0]; v.Usage != nil || v.WaitingTasks != nil {
		t.Fatalf("a following agent reported for reservation %d: %+v", fresh.ID, v)
	}
	// Each report carried the agent's status: operators see the last backend.
	if vs, err := m.app.Plan.AgentViews(context.Background()); err != nil || len(vs) != 1 || vs[0].Backend != "print" || vs[0].Reports != 2 {
		t.Fatalf("agent status after a simulate and a print run: %+v %v", vs, err)
	}
}

func TestAgentLoopAnnouncesEachJobOnceAndStopsAfterFor(t *testing.T) {
	m := newAgentMarket(t)
	full := m.reserve(100, time.Hour, 0, time.Hour)
	later := m.reserve(50, time.Hour, 0, 3*time.Hour)
	code, out, errOut := m.agent("us-east", m.token("us-east"), "--simulate", "--every", "10ms", "--for", "150ms")
	if code != 0 {
		t.Fatalf("agent --for: %d\n%s%s", code, out, errOut)
	}
	for _, line := range []string{fmt.Sprintf("start reservation %d request 0", full.ID), fmt.Sprintf("waiting: reservation %d request 0", later.ID)} {
		if n := strings.Count(out, line); n != 1 {
			t.Fatalf("%q printed %d times, want once:\n%s", line, n, out)
		}
	}
}

func TestAgentTokenForAnUnknownClusterFails(t *testing.T) {
	m := newAgentMarket(t)
	code, out, errOut := runCLI(t, "", "agent", "token", "--cluster", "nowhere", "--db", m.dsn)
	if code == 0 || !strings.Contains(errOut, `"nowhere"`) || strings.Contains(out, "cha_") {
		t.Fatalf("agent token for an unknown cluster: %d %q %q", code, out, errOut)
	}
}

func TestAgentRefusedTokenExitsAtOnceWithTheServersMessage(t *testing.T) {
	m := newAgentMarket(t)
	m.reserve(100, time.Hour, 0, time.Hour)
	other := m.token("eu-west")
	for _, tc := range []struct {
		name, token, want string
		flags             []string
	}{
		{"another cluster's token", other, "This agent token is for another cluster.", []string{"--once", "--simulate"}},
		{"another cluster's token, polling", other, "This agent token is for another cluster.", []string{"--every", "10ms"}},
		{"no such token", "cha_not-a-token", "The API token is not valid.", []string{"--every", "10ms", "--simulate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := m.agent("us-east", tc.token, tc.flags...)
			if code == 0 || !strings.Contains(errOut, tc.want) || strings.Contains(out, "start") {
				t.Fatalf("code %d, stdout %q, stderr %q: want a failure saying %q", code, out, errOut, tc.want)
			}
		})
	}
}

func TestAgentRetriesNetworkErrorsUnlessOnce(t *testing.T) {
	gone := httptest.NewServer(nil)
	gone.Close()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"agent", "--server", gone.URL, "--token", "cha_x", "--cluster", "us-east",
		"--every", "10ms", "--for", "100ms"}, strings.NewReader(""), &out, &errOut)
	if code != 0 || strings.Count(errOut.String(), "retrying at the next poll") < 2 {
		t.Fatalf("polling an unreachable server: %d %q %q", code, out.String(), errOut.String())
	}
	code, _, stderr := runCLI(t, "", "agent", "--server", gone.URL, "--token", "cha_x", "--cluster", "us-east", "--once")
	if code == 0 || !strings.Contains(stderr, "clearhouse:") {
		t.Fatalf("--once against an unreachable server: %d %q", code, stderr)
	}
}

func TestAgentFlagsAreValidated(t *testing.T) {
	dir := t.TempDir()
	badConfig, otherConfig := filepath.Join(dir, "bad.yaml"), filepath.Join(dir, "other.yaml")
	for path, body := range map[string]string{
		badConfig:   "cluster: c\nteams:\n  ads: {namespace: ads}\npools:\n  c/cpu: {unit: \"1\"}\n",
		otherConfig: "cluster: d\nteams:\n  ads: {}\npools:\n  d/cpu: {unit: \"1\"}\n",
	} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", "http://x", "--cluster", "c"}, "--token"},
		{[]string{"--server", "x.example.com", "--cluster", "c", "--token", "t"}, "--server"},
		{[]string{"--server", "http://x", "--cluster", "c", "--token", "t", "--fail-rate", "0.5"}, "only with --backend simulate"},
		{[]string{"--server", "http://x", "--cluster", "c", "--token", "t", "--backend", "print", "--seed", "2"}, "only with --backend simulate"},
		{[]string{"--server", "http://x", "--cluster", "c", "--token", "t", "--backend", "print", "--simulate"}, "--simulate means --backend simulate"},
		{[]string{"--server", "http://x", "--cluster", "c", "--token", "t", "--backend", "kubernetes"}, `backend "kubernetes": not built into clearhouse: run clearhouse-agent --backend kubernetes`},
		{[]string{"--server", "http://x", "--cluster", "c", "--token", "t", "--backend", "nope"}, `(known: print, simulate, slurm)`},
		{[]string{"--server", "http://x", "--cluster", "c", "--token", "t", "--config", badConfig}, badConfig + ":3: teams.ads.namespace: unknown key"},
		{[]string{"--server", "http://x", "--cluster", "c", "--token", "t", "--config", otherConfig}, otherConfig + `:1: cluster: "d" must equal --cluster "c"`},
		{[]string{"--server", "http://x", "--cluster", "c", "--token", "t", "--config", otherConfig + ".missing"}, "--config: open"},
		{[]string{"--server", "http://x", "--cluster", "c", "--token", "t", "--simulate", "--finish-early", "2"}, "--finish-early"},
		{[]string{"--server", "http://x", "--cluster", "c", "--token", "t", "--every", "0s"}, "--every"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"agent"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("agent %v: code %d, stderr %q: want 2 naming %s", tc.args, code, errOut, tc.want)
		}
	}
}

// TestAgentSimulatedEndsReachTheServer steps a simulated agent poll by poll
// while the market's clock moves: a job that finishes early or fails is reported
// ended at its moment, and the server settles it.
func TestAgentSimulatedEndsReachTheServer(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		failRate, finishEarly float64
		how                   string
	}{
		{"finishes early", 0, 1, "finished early"},
		{"fails", 1, 0, "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newAgentMarket(t)
			job := m.reserve(40, time.Hour, 0, time.Hour)
			var out, errOut bytes.Buffer
			a, cluster := m.loop(m.token("us-east"), &agent.Simulation{Seed: 7, FailRate: tc.failRate, FinishEarly: tc.finishEarly, Use: 1}, &out, &errOut)
			ctx := context.Background()
			if err := a.Poll(ctx); err != nil {
				t.Fatal(err)
			}
			endAt := cluster.EndOf(agent.JobKey{Reservation: job.ID})
			if endAt.IsZero() || !endAt.After(m.clock.Now()) || !endAt.Before(m.clock.Now().Add(time.Hour)) {
				t.Fatalf("the simulated end %v is not inside the job's hour", endAt)
			}
			m.clock.Advance(59*time.Minute + 59*time.Second)
			if err := a.Poll(ctx); err != nil {
				t.Fatal(err)
			}
			m.clock.Advance(time.Second) // the job's planned end: it leaves the plan, with no stop line
			if err := a.Poll(ctx); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("09:59:59 end reservation %d request 0: %s at %s, planned until 10:00\n09:59:59 server: ended reservation %d\n",
				job.ID, tc.how, agent.Clock(endAt), job.ID)
			if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "stop") || errOut.Len() > 0 {
				t.Fatalf("output\n%s%s\nwant\n%s", out.String(), errOut.String(), want)
			}
			v := m.reservation(job.ID)
			if v.Status != fleet.ReservationDone || v.Requests[0].EndedAt == nil || !v.Requests[0].EndedAt.Equal(endAt) {
				t.Fatalf("reservation after the end: status %s, ended %v, want done at %v", v.Status, v.Requests[0].EndedAt, endAt)
			}
			if failed := strings.Contains(v.Note, "failed"); failed != (tc.failRate == 1) {
				t.Fatalf("note %q after a simulated %s", v.Note, tc.how)
			}
		})
	}
}

// The agent's help names its backends and points at the config file's documentation.
func TestAgentHelpDescribesBackendsAndConfig(t *testing.T) {
	code, out, errOut := runCLI(t, "", "agent", "--help")
	for _, want := range []string{"--backend string", "print, simulate", "--config string", "docs/agent-config.md", "FILE:LINE: rule"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("agent --help: %d, missing %q\n%s%s", code, want, out, errOut)
		}
	}
}

// A backend that cannot be opened when clearhouse-agent starts (here a kubeconfig that
// is not there yet) is tried again with backoff, and operators see why on the agent's status;
// --once tries once.
func TestAgentRetriesABackendThatCannotOpenAndReportsIt(t *testing.T) {
	m := newAgentMarket(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "us-east.yaml")
	missing := filepath.Join(dir, "kubeconfig")
	body := fmt.Sprintf("cluster: us-east\nteams:\n  search: {namespaces: [search]}\npools:\n  us-east/cpu: {resource: cpu, unit: \"1\"}\nkubernetes: {kubeconfig: %s}\n", missing)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	token := m.token("us-east")
	code, _, errOut := m.agentBinary("us-east", token, "--backend", "kubernetes", "--config", config, "--every", "10ms", "--for", "300ms")
	if code == 0 || strings.Count(errOut, "open the backend: kubernetes: kubeconfig "+missing) < 2 || !strings.Contains(errOut, "trying again in") {
		t.Fatalf("an agent whose backend cannot open: code %d, stderr %q; want several attempts, then a failure", code, errOut)
	}
	views, err := m.app.Plan.AgentViews(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || views[0].Backend != "kubernetes" || len(views[0].Errors) == 0 ||
		!strings.Contains(views[0].Errors[0], "open the backend: kubernetes: kubeconfig "+missing) {
		t.Fatalf("operators see %+v; want the kubernetes agent's open error", views)
	}
	code, _, errOut = m.agentBinary("us-east", token, "--backend", "kubernetes", "--config", config, "--once")
	if code == 0 || strings.Contains(errOut, "trying again") {
		t.Fatalf("--once with a backend that cannot open: code %d, stderr %q; want one attempt", code, errOut)
	}
}
