package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// busyMarket serves a market with an open auction holding n open orders from 100
// teams over 30 pools, and returns the server and an API token of one team owner.
func busyMarket(b *testing.B, n int) (*httptest.Server, string) {
	b.Helper()
	ctx := context.Background()
	db := storetest.New(b)
	clock := storetest.NewClock(storetest.Epoch)
	m := exchange.NewMarket(db, ledger.New(db, clock.Now), clock.Now)
	id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	_, err := m.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve)
	must(err)
	for c := range 3 {
		cl := fmt.Sprintf("c%d", c)
		_, err := m.AddCluster(ctx, exchange.Cluster{ID: cl})
		must(err)
		for r := range 10 {
			_, err := m.AddPool(ctx, exchange.PoolSpec{ClusterID: cl, Resource: fmt.Sprintf("r%d", r), Unit: "unit", Capacity: 1e6,
				UnitCost: ledger.Dollar, Utilization: 0.6, CurveID: "standard"})
			must(err)
		}
	}
	users := make([]identity.User, 100)
	for t := range users {
		team := fmt.Sprintf("team-%03d", t)
		_, err := m.AddTeam(ctx, exchange.NewTeam{ID: team, Budget: 1e9 * ledger.Dollar})
		must(err)
		users[t], err = id.AddUser(ctx, identity.NewUser{Email: team + "@x.io", Role: identity.RoleOwner, TeamID: team})
		must(err)
	}
	_, err = m.ScheduleAuction(ctx, clock.Now(), clock.Now().Add(time.Hour), auction.DefaultParams)
	must(err)
	_, err = m.OpenDue(ctx)
	must(err)
	limit := 100 * ledger.Dollar
	for i := range n {
		u := users[i%len(users)]
		_, err := m.PlaceOrder(ctx, u, exchange.OrderSpec{Team: u.TeamID, Limit: &limit, Bundles: []exchange.Bundle{
			{fmt.Sprintf("c%d/r%d", i%3, i%10): 4, fmt.Sprintf("c%d/r%d", i%3, (i+1)%10): 16},
			{fmt.Sprintf("c%d/r%d", (i+1)%3, i%10): 4, fmt.Sprintf("c%d/r%d", (i+1)%3, (i+1)%10): 16}}})
		must(err)
	}
	if _, err := m.Preview(ctx, 1); err != nil {
		b.Fatal(err)
	}
	token, _, err := id.IssueToken(ctx, users[0].ID, "bench")
	must(err)
	s := web.NewServer(web.Config{LoginRate: 5}, web.Services{Identity: id, Market: m}, slog.New(slog.NewTextHandler(io.Discard, nil)), clock.Now)
	srv := httptest.NewServer(s.Handler())
	b.Cleanup(srv.Close)
	return srv, token
}

func do(b *testing.B, req *http.Request, want int) {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != want {
		b.Fatalf("%s %s: %d", req.Method, req.URL.Path, res.StatusCode)
	}
}

// BenchmarkWithTenThousandOpenOrders measures the market summary page, the market
// API and bid submission while an auction holds 10,000 open orders.
func BenchmarkWithTenThousandOpenOrders(b *testing.B) {
	srv, token := busyMarket(b, 10_000)
	get := func(path string) *http.Request {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return req
	}
	b.Run("market-summary-page", func(b *testing.B) {
		for b.Loop() {
			do(b, get("/"), http.StatusOK)
		}
	})
	b.Run("market-api", func(b *testing.B) {
		for b.Loop() {
			do(b, get("/api/v1/market"), http.StatusOK)
		}
	})
	b.Run("submit-bid", func(b *testing.B) {
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/orders", strings.NewReader(`{"bundles":[{"c0/r1":2},{"c1/r1":2}],"limit":"10"}`))
			req.Header.Set("Authorization", "Bearer "+token)
			do(b, req, http.StatusCreated)
		}
	})
}

// BenchmarkWithAHundredThousandOpenOrders measures the pages and API calls that
// read an open auction holding 100,000 open orders from 200 teams (500 each): the
// market summary (page and API), a flooding team's orders page and team page.
func BenchmarkWithAHundredThousandOpenOrders(b *testing.B) {
	ctx := context.Background()
	db := storetest.New(b)
	big := exchangetest.NewBig(b, db, 200, 1_000_000_000)
	big.Seed(b, db, 100_000)
	if _, err := big.M.Preview(ctx, big.AuctionID); err != nil {
		b.Fatal(err)
	}
	id := identity.NewIdentity(db, big.Clock.Now, bcrypt.MinCost)
	token, _, err := id.IssueToken(ctx, big.Users[0].ID, "bench")
	if err != nil {
		b.Fatal(err)
	}
	s := web.NewServer(web.Config{LoginRate: 5}, web.Services{Identity: id, Market: big.M}, slog.New(slog.NewTextHandler(io.Discard, nil)), big.Clock.Now)
	srv := httptest.NewServer(s.Handler())
	b.Cleanup(srv.Close)
	for _, path := range []string{"/", "/api/v1/market", "/orders", "/team", "/api/v1/orders"} {
		b.Run(strings.Trim(strings.ReplaceAll(path, "/", "-"), "-")+"-", func(b *testing.B) {
			var size int64
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				size, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatalf("%s: %d", path, res.StatusCode)
				}
			}
			b.ReportMetric(float64(size), "bytes/page")
		})
	}
}
