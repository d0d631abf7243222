package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store/storetest"
)

const testMetricsToken = "metrics-token-0123456789abcdef"

// opsMarket is the production wiring on a fresh SQLite file with a fixed clock and
// a metrics token: cluster us-east with 100 cores, team search with a member, and
// an auction open from now for an hour.
type opsMarket struct {
	t       *testing.T
	app     *server.App
	clock   *storetest.Clock
	dsn     string
	member  identity.User
	auction exchange.Auction
	logs    *syncBuffer
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

func newOpsMarket(t *testing.T, edit func(*server.Config)) *opsMarket {
	t.Helper()
	dsn := storetest.MigratedFile(t)
	cfg := server.Config{Addr: "127.0.0.1:0", DB: dsn, Migrate: true, LoginRate: 100, Tick: time.Hour, PreviewEvery: time.Minute,
		MetricsToken: testMetricsToken}
	if edit != nil {
		edit(&cfg)
	}
	clock := storetest.NewClock(time.Time{})
	logs := &syncBuffer{}
	app := server.NewApp(cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), clock.Now)
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
	a, err := app.Market.ScheduleAuction(ctx, clock.Now(), clock.Now().Add(time.Hour), auction.DefaultParams)
	must(a, err)
	must(app.Market.OpenDue(ctx))
	return &opsMarket{t: t, app: app, clock: clock, dsn: dsn, member: member, auction: a, logs: logs}
}

// bid places an order for cores of us-east/cpu at most limit dollars.
func (m *opsMarket) bid(cores int64, limit ledger.Money) exchange.Order {
	m.t.Helper()
	o, err := m.app.Market.PlaceOrder(context.Background(), m.member, exchange.OrderSpec{Team: "search",
		Bundles: []exchange.Bundle{{"us-east/cpu": cores}}, Limit: &limit})
	if err != nil {
		m.t.Fatal(err)
	}
	return o
}

// get requests path on the app with a bearer token (none when empty).
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// scrape reads /metrics with the metrics token and parses it as Prometheus does.
func (m *opsMarket) scrape() map[string]*dto.MetricFamily {
	m.t.Helper()
	code, body := get(m.t, m.app.Server.URL()+"/metrics", testMetricsToken)
	if code != http.StatusOK {
		m.t.Fatalf("GET /metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		m.t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value is the value of the series of family name whose labels include want
// (counter, gauge, or a histogram's count), and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
next:
	for _, mt := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range mt.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case mt.Counter != nil:
			return mt.Counter.GetValue(), true
		case mt.Gauge != nil:
			return mt.Gauge.GetValue(), true
		case mt.Histogram != nil:
			return float64(mt.Histogram.GetSampleCount()), true
		case mt.Untyped != nil:
			return mt.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func (m *opsMarket) want(fams map[string]*dto.MetricFamily, name string, labels map[string]string, want float64) {
	m.t.Helper()
	got, ok := value(fams, name, labels)
	if !ok || got != want {
		m.t.Errorf("%s%v = %v (present: %v), want %v", name, labels, got, ok, want)
	}
}

// A close, a settlement, a failing job and an agent report each move their series
// in /metrics, parsed as Prometheus parses it.
func TestMetricsFollowACloseASettlementAFailingJobAndAnAgentReport(t *testing.T) {
	m := newOpsMarket(t, nil)
	ctx := context.Background()
	m.bid(10, 100*ledger.Dollar)
	m.bid(5, 50*ledger.Dollar)
	before := m.scrape()
	m.want(before, "clearhouse_open_orders", map[string]string{"status": "open"}, 2)
	m.want(before, "clearhouse_auction_closes_total", map[string]string{"outcome": "settled"}, 0) // at 0 from start, not absent

	m.clock.Advance(time.Hour) // the window has ended: the tick closes and settles
	if err := m.app.RunTick(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := m.app.Market.Auction(ctx, m.auction.ID)
	if err != nil || a.Status != exchange.AuctionSettled {
		t.Fatalf("auction %+v, %v", a, err)
	}
	var paid int64
	if err := m.app.DB.Read.Raw("SELECT COALESCE(SUM(payment), 0) FROM settlement_lines WHERE payment > 0").Scan(&paid).Error; err != nil || paid <= 0 {
		t.Fatalf("paid %d, %v", paid, err)
	}
	after := m.scrape()
	m.want(after, "clearhouse_auction_closes_total", map[string]string{"outcome": "settled"}, 1)
	m.want(after, "clearhouse_auction_close_rounds", nil, 1)
	m.want(after, "clearhouse_auction_final_round_gap_ratio", nil, 1) // the final round runs by default
	m.want(after, "clearhouse_auction_close_duration_seconds", nil, 1)
	m.want(after, "clearhouse_auction_pools_cleared_total", nil, 1)
	m.want(after, "clearhouse_settlement_duration_seconds", nil, 1)
	m.want(after, "clearhouse_settlement_winners_total", nil, 2)
	m.want(after, "clearhouse_settlement_paid_dollars_total", nil, float64(paid)/1e6)
	m.want(after, "clearhouse_open_orders", map[string]string{"status": "open"}, 0)
	m.want(after, "clearhouse_auction_last_settled_timestamp_seconds", nil, float64(m.clock.Now().Unix()))
	m.want(after, "clearhouse_job_runs_total", map[string]string{"name": "market_tick"}, 2) // the start-up catch-up and this one
	m.want(after, "clearhouse_job_last_success_timestamp_seconds", map[string]string{"name": "market_tick"}, float64(m.clock.Now().Unix()))
	if _, ok := value(after, "clearhouse_plan_update_duration_seconds", map[string]string{"rebuilt": "true"}); !ok {
		t.Error("no plan update recorded after a settlement moved quota")
	}

	// A failing run: the tick on a context that has ended.
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.app.RunTick(dead); err == nil {
		t.Fatal("a tick on an ended context succeeded")
	}
	failed := m.scrape()
	m.want(failed, "clearhouse_job_failures_total", map[string]string{"name": "market_tick"}, 1)
	m.want(failed, "clearhouse_job_runs_total", map[string]string{"name": "market_tick"}, 3)
	m.want(failed, "clearhouse_job_last_success_timestamp_seconds", map[string]string{"name": "market_tick"}, float64(m.clock.Now().Unix()))
	if !strings.Contains(m.logs.String(), `"msg":"job failed","job":"market_tick"`) {
		t.Errorf("the failure is not logged:\n%s", m.logs.String())
	}

	// An agent report.
	token, _, err := m.app.Identity.IssueAgentToken(ctx, "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, m.app.Server.URL()+"/api/v1/clusters/us-east/updates", strings.NewReader(`{"pools":[{"pool":"us-east/cpu","used":40}],
		"agent":{"backend":"kubernetes","corrections":[{"object":"ResourceQuota ads/clearhouse","was":"1","now":"2"}],"errors":["apply quotas: boom"]}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("agent report: %v %v", res, err)
	}
	res.Body.Close()
	reportedAt := m.clock.Now()
	m.clock.Advance(90 * time.Second)
	reported := m.scrape()
	m.want(reported, "clearhouse_agent_drift_corrections_total", map[string]string{"cluster": "us-east"}, 1)
	m.want(reported, "clearhouse_agent_last_error_timestamp_seconds", map[string]string{"cluster": "us-east"}, float64(reportedAt.Unix()))
	m.want(reported, "clearhouse_agent_reports_total", map[string]string{"cluster": "us-east", "outcome": "ok"}, 1)
	m.want(reported, "clearhouse_agent_last_seen_age_seconds", map[string]string{"cluster": "us-east"}, 90)
	m.want(reported, "clearhouse_http_request_duration_seconds",
		map[string]string{"method": "POST", "route": "/api/v1/clusters/:cluster/updates", "status": "200"}, 1)
	for _, name := range []string{"go_goroutines", "clearhouse_build_info", "go_sql_open_connections", "clearhouse_email_outbox_pending",
		"clearhouse_auctions_overdue", "clearhouse_verify_violations"} {
		if _, ok := reported[name]; !ok {
			t.Errorf("no %s in /metrics", name)
		}
	}
}

// The metrics token reads /metrics and opens nothing else; /metrics refuses
// requests without it, and a user's API token.
func TestMetricsTokenOpensOnlyMetrics(t *testing.T) {
	m := newOpsMarket(t, nil)
	base := m.app.Server.URL()
	for _, path := range []string{"/", "/orders", "/operate", "/finance", "/api/v1/market", "/api/v1/orders", "/api/v1/auctions",
		"/api/v1/clusters/us-east/allocation", "/api/v1/ledger/trial-balance", "/notifications"} {
		if code, body := get(t, base+path, testMetricsToken); code != http.StatusUnauthorized {
			t.Errorf("GET %s with the metrics token: %d %.200s", path, code, body)
		}
	}
	userToken, _, err := m.app.Identity.IssueToken(context.Background(), m.member.ID, "script")
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"", userToken, testMetricsToken + "x"} {
		if code, _ := get(t, base+"/metrics", token); code != http.StatusUnauthorized {
			t.Errorf("GET /metrics with %q: %d, want 401", token, code)
		}
	}
	if code, body := get(t, base+"/metrics", testMetricsToken); code != http.StatusOK || !strings.Contains(body, "clearhouse_build_info") {
		t.Errorf("GET /metrics with the metrics token: %d", code)
	}
}

// Without a metrics token /metrics does not exist on the main address; on
// --metrics-addr it answers without authentication.
func TestMetricsAddrServesWithoutAuth(t *testing.T) {
	m := newOpsMarket(t, func(c *server.Config) { c.MetricsToken, c.MetricsAddr = "", "127.0.0.1:0" })
	if code, _ := get(t, m.app.Server.URL()+"/metrics", ""); code != http.StatusNotFound {
		t.Errorf("/metrics on the main address without a token configured: %d, want 404", code)
	}
	code, body := get(t, m.app.MetricsURL(), "")
	if code != http.StatusOK || !strings.Contains(body, "clearhouse_http_request_duration_seconds") {
		t.Errorf("GET %s: %d %.300s", m.app.MetricsURL(), code, body)
	}
}
