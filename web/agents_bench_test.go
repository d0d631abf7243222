package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	apiv1 "github.com/clearhouse/clearhouse/api/v1"
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

// apiReport is a fleet.AgentReport as an agent posts it (apiv1.Updates).
func apiReport(b *testing.B, rep fleet.AgentReport) []byte {
	body := apiv1.Updates{Agent: &apiv1.AgentStatus{Backend: "simulate", Version: "bench"}}
	for _, c := range rep.Capacity {
		body.Capacity = append(body.Capacity, apiv1.CapacityChange{Pool: c.Pool, From: c.From, To: c.To, Units: c.Units})
	}
	for _, u := range rep.Usage {
		body.Usage = append(body.Usage, apiv1.JobUsage{Reservation: u.Reservation, Request: u.Request, Pool: u.Pool, Units: u.Units})
	}
	out, err := json.Marshal(body)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

func agentsOverHTTP(b *testing.B, bz fleettest.Busy, servers ...*httptest.Server) {
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
	call := func(method, url, token string, body []byte) error {
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %s: %s", method, url, res.Status)
		}
		return nil
	}
	// Every server has its plan in memory before the window opens, as a running
	// server has (its first read builds it from every reservation, once).
	var pages []func() error
	for _, srv := range servers {
		page := func() error { return call(http.MethodGet, srv.URL+"/operate/schedule", opToken, nil) }
		if err := page(); err != nil {
			b.Fatal(err)
		}
		pages = append(pages, page)
	}
	report := func(i int) error {
		url := servers[i%len(servers)].URL + "/api/v1/clusters/" + fleettest.Cluster + "/updates"
		return call(http.MethodPost, url, agentToken, reps[i%len(reps)])
	}
	b.ResetTimer()
	var m fleettest.Measured
	for range b.N {
		fleettest.ThousandAgents.Run(b, &m, report, pages...)
	}
	m.ReportMetrics(b)
}
