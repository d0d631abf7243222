package e2etest

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/agentcmd"
	"github.com/clearhouse/clearhouse/agent/simulate"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// Market is the production wiring on a fresh migrated SQLite file
// (storetest.MigratedFile) with a fixed clock:
// clusters us-east (100 cores of us-east/cpu) and eu-west, and team search with a
// member. The cluster tests (e2e/kube, e2e/slurm) run their agents against it.
type Market struct {
	T      *testing.T
	App    *server.App
	Clock  *storetest.Clock
	DSN    string // the SQLite file
	Member identity.User
}

// NewMarket opens a Market and closes it when the test ends.
func NewMarket(t *testing.T) *Market {
	t.Helper()
	dsn := storetest.MigratedFile(t)
	cfg := server.Config{Addr: "127.0.0.1:0", DB: dsn, Migrate: true, LoginRate: 100, Tick: time.Hour, PreviewEvery: time.Minute}
	clock := storetest.NewClock(time.Time{})
	app := Open(t, cfg, clock)
	ctx := context.Background()
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
	return &Market{T: t, App: app, Clock: clock, DSN: dsn, Member: member}
}

// Reserve submits count cores of us-east/cpu for dur inside [now+from, now+to).
func (m *Market) Reserve(count int64, dur, from, to time.Duration) fleet.ReservationView {
	m.T.Helper()
	ctx, now := context.Background(), m.Clock.Now()
	id, err := m.App.Plan.NewReservation(ctx, m.Member)
	if err != nil {
		m.T.Fatal(err)
	}
	v, err := m.App.Plan.Submit(ctx, m.Member, id, fleet.Definition{Value: 100 * ledger.Dollar, Requests: []fleet.RequestSpec{{
		Configuration: map[string]int64{"us-east/cpu": 1}, Count: count, Duration: dur, Arrival: now.Add(from), Deadline: now.Add(to)}}})
	if err != nil || v.Status != fleet.ReservationAccepted {
		m.T.Fatalf("reservation of %d cores: %+v, %v", count, v.Reservation, err)
	}
	return v
}

// Reservation is the reservation id as the plan has it now.
func (m *Market) Reservation(id int64) fleet.ReservationView {
	m.T.Helper()
	v, err := m.App.Plan.Reservation(context.Background(), id)
	if err != nil {
		m.T.Fatal(err)
	}
	return v
}

// Token issues an agent token for cluster, as `clearhouse agent token` does.
func (m *Market) Token(cluster string) string {
	m.T.Helper()
	token, _, err := m.App.Identity.IssueAgentToken(context.Background(), cluster, "agent "+cluster)
	if err != nil {
		m.T.Fatalf("agent token for %s: %v", cluster, err)
	}
	return token
}

// Loop is the agent's loop against the app for cluster us-east with the token, on the
// simulate backend (the print backend when sim is nil), stamping lines with the
// market's clock.
func (m *Market) Loop(token string, sim *agent.Simulation, out, errOut io.Writer) (*agent.Loop, *simulate.Cluster) {
	m.T.Helper()
	client, err := agent.NewClient(m.App.Server.URL(), "us-east", token)
	if err != nil {
		m.T.Fatal(err)
	}
	cluster := simulate.New(out, sim)
	return &agent.Loop{Client: client, Backend: cluster, Out: out, ErrOut: errOut, Now: m.Clock.Now, Every: time.Second}, cluster
}

// Verify fails the test when an invariant is broken on the market's database.
func (m *Market) Verify() {
	m.T.Helper()
	Verify(m.T, m.DSN)
}

// Agent runs the cluster agent's command line (agent/agentcmd, as clearhouse-agent
// and `clearhouse agent` run it, with the backends the test binary registers) in
// this process against the app for cluster with the token and the extra flags. It
// gives up after 20s, so that an agent that fails to stop fails the test instead of
// hanging it.
func (m *Market) Agent(cluster, token string, flags ...string) (int, string, string) {
	m.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	args := append([]string{"--server", m.App.Server.URL(), "--token", token, "--cluster", cluster}, flags...)
	code := agentcmd.Run(ctx, agentcmd.Options{Path: agentcmd.Binary}, args, &out, &errOut)
	if ctx.Err() != nil {
		m.T.Fatalf("agent %v did not stop by itself", flags)
	}
	return code, out.String(), errOut.String()
}

// OwnerUsage is the units of pool the last agent report said team's own work uses.
func (m *Market) OwnerUsage(team, pool string) int64 {
	m.T.Helper()
	var u besteffort.IdleUsage
	if err := m.App.DB.Read.Where("team_id = ? AND pool_id = ?", team, pool).Limit(1).Find(&u).Error; err != nil {
		m.T.Fatal(err)
	}
	return u.Units
}
