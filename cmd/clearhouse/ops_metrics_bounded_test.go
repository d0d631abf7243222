package main

import (
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/server"
)

// scrapeText reads /metrics as text: its size in bytes and its series (the lines
// that are samples, one per bucket of a histogram).
func (m *opsMarket) scrapeText() (int, int) {
	m.t.Helper()
	code, body := get(m.t, m.app.Server.URL()+"/metrics", testMetricsToken)
	if code != http.StatusOK {
		m.t.Fatalf("GET /metrics: %d", code)
	}
	series := 0
	for _, line := range strings.Split(body, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			series++
		}
	}
	return len(body), series
}

// randomToken is n letters: a method Go's client and server both accept.
func randomToken(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"[r.IntN(52)]
	}
	return string(b)
}

// Anyone can send any method to any path, unauthenticated: 1,000 requests with
// invented methods (up to 200 letters long) on invented paths, agent report routes
// of invented clusters included, add a handful of series to /metrics, not one per
// request, and every method label is a standard method or OTHER.
func TestMetricsStayBoundedUnderInventedMethodsAndPaths(t *testing.T) {
	m := newOpsMarket(t, nil)
	base := m.app.Server.URL()
	size0, series0 := m.scrapeText()
	r := rand.New(rand.NewPCG(36, 6))
	paths := []string{"/", "/orders", "/api/v1/orders", "/metrics", "/readyz"}
	for i := range 1000 {
		path := paths[i%len(paths)]
		switch i % 4 {
		case 1:
			path = "/" + randomToken(r, 1+r.IntN(60))
		case 2:
			path = "/api/v1/clusters/" + randomToken(r, 1+r.IntN(60)) + "/updates"
		}
		method := randomToken(r, 1+r.IntN(200))
		if i%10 == 0 {
			method = http.MethodPost // a real method on the agent route with no token
		}
		req, err := http.NewRequest(method, base+path, strings.NewReader(`{"pools":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	size, series := m.scrapeText()
	t.Logf("/metrics before: %d bytes, %d series; after 1,000 invented requests: %d bytes, %d series", size0, series0, size, series)
	// Each (method, route, status) the requests can reach is a histogram of 14
	// series; a few such combinations are expected, 1,000 are not.
	if series > series0+10*14 {
		t.Errorf("series grew from %d to %d", series0, series)
	}
	if size > size0+64<<10 {
		t.Errorf("/metrics grew from %d to %d bytes", size0, size)
	}
	fams := m.scrape()
	standard := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "OTHER"}
	for _, mt := range fams["clearhouse_http_request_duration_seconds"].GetMetric() {
		for _, l := range mt.GetLabel() {
			if l.GetName() == "method" && !slices.Contains(standard, l.GetValue()) {
				t.Errorf("method label %.40q", l.GetValue())
			}
			if l.GetName() == "route" && strings.Contains(l.GetValue(), "/api/v1/clusters/") && l.GetValue() != agentReportRoutePattern {
				t.Errorf("route label %q is a raw path", l.GetValue())
			}
		}
	}
	if f := fams["clearhouse_agent_reports_total"]; f != nil {
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "cluster" && l.GetValue() != "us-east" {
					t.Errorf("an agent report counted for invented cluster %q", l.GetValue())
				}
			}
		}
	}
}

const agentReportRoutePattern = "/api/v1/clusters/:cluster/updates"

// alertCounter finds, in an alert's expression, a counter taken increase() of with
// its equality matchers: increase(name{k="v",...}[...]).
var alertCounter = regexp.MustCompile(`increase\((clearhouse_[a-z_]+_total)(?:\{([^}]*)\})?\[`)

// Every counter an alert rule takes increase() of exists at 0 on a fresh server, for
// every label value the rule names and, for a rule by (name), every scheduled job:
// a counter born at its first failure has no earlier sample, and increase() does
// not see that failure (deploy/prometheus/clearhouse-alerts.test.yml shows both).
func TestMetricsAlertedCountersExistAtZeroFromStart(t *testing.T) {
	rules, err := os.ReadFile("../../deploy/prometheus/clearhouse-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	uses := alertCounter.FindAllStringSubmatch(string(rules), -1)
	if len(uses) < 2 {
		t.Fatalf("the alerts take increase() of %d counters; want the auction closes and job failures at least", len(uses))
	}
	m := newOpsMarket(t, nil)
	fams := m.scrape()
	for _, u := range uses {
		name, want := u[1], map[string]string{}
		for _, kv := range strings.Split(u[2], ",") {
			if k, v, ok := strings.Cut(strings.TrimSpace(kv), `="`); ok {
				want[k] = strings.TrimSuffix(v, `"`)
			}
		}
		if _, ok := value(fams, name, want); !ok {
			t.Errorf("a fresh server has no %s with labels %v", name, want)
		}
		if name == "clearhouse_job_failures_total" {
			for _, job := range server.JobNames() {
				if v, ok := value(fams, name, map[string]string{"name": job}); !ok || v != 0 {
					t.Errorf("%s{name=%q} = %v (present %v), want 0", name, job, v, ok)
				}
			}
		}
	}
	m.want(fams, "clearhouse_auction_closes_total", map[string]string{"outcome": "failed"}, 0)
	m.want(fams, "clearhouse_auction_closes_total", map[string]string{"outcome": "settled"}, 0)
}
