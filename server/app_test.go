package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// The app's own jobs and listeners, from inside the package (the commands' tests in
// cmd/clearhouse drive the app from outside).

func TestMain(m *testing.M) {
	PasswordCost = bcrypt.MinCost
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe to write from several goroutines (logs).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testMarket is an opened app on a fresh SQLite file with a fixed clock, its logs
// kept, and a pool us-east/cpu of 100 cores, team search and a member.
type testMarket struct {
	app    *App
	clock  *storetest.Clock
	member identity.User
	logs   *syncBuffer
}

func newTestMarket(t *testing.T, edit func(*Config)) *testMarket {
	t.Helper()
	cfg := Config{Addr: "127.0.0.1:0", DB: filepath.Join(t.TempDir(), "server.db"), Migrate: true, LoginRate: 100, Tick: time.Hour, PreviewEvery: time.Minute}
	if edit != nil {
		edit(&cfg)
	}
	clock := storetest.NewClock(time.Time{})
	logs := &syncBuffer{}
	app := NewApp(cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), clock.Now)
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
	must(app.Market.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 100,
		UnitCost: ledger.Dollar, Utilization: 0.5, CurveID: "standard"}))
	must(app.Market.AddTeam(ctx, exchange.NewTeam{ID: "search", Budget: 1000 * ledger.Dollar}))
	member, err := app.Identity.AddUser(ctx, identity.NewUser{Email: "member@search.io", Role: identity.RoleMember, TeamID: "search"})
	must(member, err)
	return &testMarket{app: app, clock: clock, member: member, logs: logs}
}

// Close cancels the running jobs (here the start-up catch-up's kind, a tracked
// goroutine) and waits for them before it closes the database: a job that ends on
// cancellation still finds the database open.
func TestCloseCancelsJobsAndClosesTheDatabaseLast(t *testing.T) {
	m := newTestMarket(t, nil)
	started := make(chan struct{}, 1)
	var sawCancel bool
	var queryErr error
	m.app.goJob(func(ctx context.Context) {
		started <- struct{}{}
		<-ctx.Done()
		sawCancel = true
		time.Sleep(50 * time.Millisecond) // a job finishing its last statement
		queryErr = m.app.DB.Read.Exec("SELECT 1").Error
	})
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.app.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !sawCancel || queryErr != nil {
		t.Fatalf("job cancelled: %v; its last query: %v", sawCancel, queryErr)
	}
	if err := m.app.DB.Read.Exec("SELECT 1").Error; err == nil {
		t.Fatal("the database is still open after Close")
	}
	if err := m.app.Ready(context.Background()); err == nil {
		t.Fatal("ready after Close")
	}
}

// A listener that stops serving is reported on Failed (serve then stops with a
// non-zero exit).
func TestFailedListenerIsReported(t *testing.T) {
	m := newTestMarket(t, func(c *Config) { c.MetricsAddr = "127.0.0.1:0" })
	m.app.metricsLn.Close() // the metrics listener fails under the server
	select {
	case err := <-m.app.Failed():
		if err == nil || !strings.Contains(err.Error(), "metrics server") {
			t.Fatalf("Failed delivered %v, want an error naming the metrics server", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server goes on without its metrics listener")
	}
}

// A server has its reservation plan in memory when it reports ready, and the
// plan_follow job brings it up to date with another server's write without a read.
func TestReadyServerHasItsPlanAndFollowsOtherServers(t *testing.T) {
	m := newTestMarket(t, nil)
	ctx := context.Background()
	if err := m.app.Ready(ctx); err != nil {
		t.Fatalf("not ready: %v", err)
	}
	if u := m.app.Plan.Updates(); u.Rebuilt == 0 {
		t.Fatalf("ready, but the plan was never built: %+v", u)
	}
	other := fleet.NewReservations(m.app.DB, m.app.Ledger, m.clock.Now, fleet.DefaultPlanConfig)
	now := m.clock.Now()
	d := fleet.Definition{Value: 10 * ledger.Dollar, Requests: []fleet.RequestSpec{{Configuration: map[string]int64{"us-east/cpu": 1},
		Count: 1, Duration: time.Hour, Arrival: now, Deadline: now.Add(3 * time.Hour)}}}
	if _, err := other.Reserve(ctx, m.member, d); err != nil {
		t.Fatal(err)
	}
	before := m.app.Plan.Updates()
	if err := m.app.runJob(ctx, jobPlan, m.app.followPlan); err != nil {
		t.Fatal(err)
	}
	if after := m.app.Plan.Updates(); after.Replayed+after.Rebuilt <= before.Replayed+before.Rebuilt {
		t.Fatalf("plan_follow after another server's reservation: %+v, then %+v", before, after)
	}
}

// A job that panics fails (counted and logged) with its stack, and the server goes on.
func TestJobPanicIsLoggedWithItsStack(t *testing.T) {
	m := newTestMarket(t, nil)
	err := m.app.runJob(context.Background(), "panicky", func(context.Context) (bool, error) { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("runJob: %v", err)
	}
	logs := m.logs.String()
	if !strings.Contains(logs, `"msg":"job panicked","job":"panicky","panic":"boom","stack":"goroutine`) || !strings.Contains(logs, "TestJobPanicIsLoggedWithItsStack") {
		t.Fatalf("no stack in the logs:\n%s", logs)
	}
	rec := httptest.NewRecorder()
	m.app.metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `clearhouse_job_failures_total{name="panicky"} 1`) {
		t.Fatalf("no failure counted:\n%s", rec.Body.String())
	}
}
