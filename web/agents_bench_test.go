package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/fleet/fleettest"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
	"golang.org/x/crypto/bcrypt"
)

// BenchmarkThousandAgentsOverHTTP is fleet's BenchmarkThousandAgents through the
// web servers, as an operator sees it: 1,000 agents post their reports to the JSON
// API every 10 s (100 a second, paced, split between the servers), while an
// operator opens /operate/schedule (every pool's load now and one pool's over two
// days) on each server five times a second, for 10 s per iteration, with 10,000
// reservations planned. On SQLite one server; on PostgreSQL (when
// CLEARHOUSE_TEST_POSTGRES is set) two, each with its own connection pool, as two
// replicas. It reports the reports taken per second and the 50th and 99th
// percentiles of a report's and a page's latency, over HTTP on loopback. Run it with
// -benchtime 1x.
func BenchmarkThousandAgentsOverHTTP(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		bz := fleettest.NewBusy(b, storetest.New(b), 10000)
		agentsOverHTTP(b, bz, serveBusy(b, bz, bz.DB, bz.Reservations))
	})
	if os.Getenv(storetest.PostgresEnv) != "" {
		b.Run("postgres", func(b *testing.B) {
			pg, _ := storetest.NewPostgres(b) // a fresh database for each run of the function
			bz := fleettest.NewBusy(b, pg, 10000)
			other := storetest.Another(b, bz.DB)
			agentsOverHTTP(b, bz, serveBusy(b, bz, bz.DB, bz.Reservations),
				serveBusy(b, bz, other, fleet.NewReservations(other, ledger.New(other, bz.Clock.Now), bz.Clock.Now, fleet.DefaultPlanConfig)))
		})
	}
}

// serveBusy serves the busy plan's market from db with r as its reservation service.
func serveBusy(b *testing.B, bz fleettest.Busy, db *store.DB, r *fleet.Reservations) *httptest.Server {
	b.Helper()
	svc := web.Services{Identity: identity.NewIdentity(db, bz.Clock.Now, bcrypt.MinCost),
		Market: exchange.NewMarket(db, ledger.New(db, bz.Clock.Now), bz.Clock.Now), Reservations: r}
	s := web.NewServer(web.Config{LoginRate: 5}, svc, slog.New(slog.NewTextHandler(io.Discard, nil)), bz.Clock.Now)
	srv := httptest.NewServer(s.Handler())
	b.Cleanup(srv.Close)
	return srv
}

// apiReport is a fleet.AgentReport as an agent posts it (web.APIUpdates).
func apiReport(b *testing.B, rep fleet.AgentReport) []byte {
	type capacity struct {
		Pool  string    `json:"pool"`
		From  time.Time `json:"from"`
		To    time.Time `json:"to"`
		Units int64     `json:"units"`
	}
	type usage struct {
		Reservation int64  `json:"reservation"`
		Request     int    `json:"request"`
		Pool        string `json:"pool"`
		Units       int64  `json:"units"`
	}
	var body struct {
		Capacity []capacity         `json:"capacity"`
		Usage    []usage            `json:"usage"`
		Agent    web.APIAgentStatus `json:"agent"`
	}
	for _, c := range rep.Capacity {
		body.Capacity = append(body.Capacity, capacity{Pool: c.Pool, From: c.From, To: c.To, Units: c.Units})
	}
	for _, u := range rep.Usage {
		body.Usage = append(body.Usage, usage{Reservation: u.Reservation, Request: u.Request, Pool: u.Pool, Units: u.Units})
	}
	body.Agent = web.APIAgentStatus{Backend: "simulate", Version: "bench"}
	out, err := json.Marshal(body)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

func agentsOverHTTP(b *testing.B, bz fleettest.Busy, servers ...*httptest.Server) {
	const agents, every, span, pagesPerServer = 1000, 10 * time.Second, 10 * time.Second, 5
	ctx := context.Background()
	op, err := bz.Identity.AddUser(ctx, identity.NewUser{Email: "operator@x.io", Role: identity.RoleOperator})
	if err != nil {
		b.Fatal(err)
	}
	opToken, _, err := bz.Identity.IssueToken(ctx, op.ID, "bench")
	if err != nil {
		b.Fatal(err)
	}
	agentToken, _, err := bz.Identity.IssueAgentToken(ctx, fleettest.Cluster, "bench")
	if err != nil {
		b.Fatal(err)
	}
	reps := make([][]byte, 16)
	for i := range reps {
		reps[i] = apiReport(b, fleettest.Report(b, bz.Reservations, bz.Clock, i))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	call := func(method, url, token string, body []byte) (time.Duration, error) {
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return 0, &statusError{method, url, res.StatusCode}
		}
		return time.Since(start), nil
	}
	page := func(srv *httptest.Server) (time.Duration, error) {
		return call(http.MethodGet, srv.URL+"/operate/schedule", opToken, nil)
	}
	// Every server has its plan in memory before the window opens, as a running
	// server has (its first read builds it from every reservation, once).
	for _, srv := range servers {
		if _, err := page(srv); err != nil {
			b.Fatal(err)
		}
	}
	var mu sync.Mutex
	var reportLat, pageLat []time.Duration
	taken := 0
	b.ResetTimer()
	for range b.N {
		stop := make(chan struct{})
		var readers sync.WaitGroup
		for _, srv := range servers {
			readers.Go(func() {
				tick := time.NewTicker(time.Second / pagesPerServer)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					d, err := page(srv)
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					pageLat = append(pageLat, d)
					mu.Unlock()
				}
			})
		}
		var senders sync.WaitGroup
		tick := time.NewTicker(every / agents)
		end := time.After(span)
	pace:
		for i := 0; ; i++ {
			select {
			case <-end:
				break pace
			case <-tick.C:
			}
			senders.Go(func() {
				url := servers[i%len(servers)].URL + "/api/v1/clusters/" + fleettest.Cluster + "/updates"
				d, err := call(http.MethodPost, url, agentToken, reps[i%len(reps)])
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				reportLat = append(reportLat, d)
				taken++
				mu.Unlock()
			})
		}
		tick.Stop()
		senders.Wait()
		close(stop)
		readers.Wait()
	}
	b.ReportMetric(float64(taken)/b.Elapsed().Seconds(), "reports/s")
	b.ReportMetric(percentileMS(reportLat, 0.5), "report-p50-ms")
	b.ReportMetric(percentileMS(reportLat, 0.99), "report-p99-ms")
	b.ReportMetric(percentileMS(pageLat, 0.5), "page-p50-ms")
	b.ReportMetric(percentileMS(pageLat, 0.99), "page-p99-ms")
	b.ReportMetric(float64(len(pageLat))/b.Elapsed().Seconds(), "pages/s")
}

type statusError struct {
	method, url string
	status      int
}

func (e *statusError) Error() string {
	return e.method + " " + e.url + ": " + http.StatusText(e.status)
}

// percentileMS is the p-th percentile of ds in milliseconds (0 for none).
func percentileMS(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[min(int(p*float64(len(ds))), len(ds)-1)].Microseconds()) / 1000
}
