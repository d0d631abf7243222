package exchange_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"golang.org/x/crypto/bcrypt"
)

// BigMarket builds a market with an open auction and n open bids that all win:
// 100 teams each bid for n/100 orders of a few units in one of ten pools with room for
// all of them.
func bigMarket(tb testing.TB, db *store.DB, n int) (*exchange.Market, int64) {
	tb.Helper()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Epoch)
	m := exchange.NewMarket(db, ledger.New(db, clock.Now), clock.Now)
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	_, err := m.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve)
	must(err)
	_, err = m.AddCluster(ctx, exchange.Cluster{ID: "big"})
	must(err)
	for p := range 10 {
		_, err := m.AddPool(ctx, exchange.PoolSpec{ClusterID: "big", Resource: fmt.Sprintf("r%d", p), Unit: "unit",
			Capacity: int64(n) * 10, UnitCost: int64(ledger.Dollar), Utilization: 0.5, CurveID: "standard"})
		must(err)
	}
	id := exchange.NewIdentity(db, clock.Now, bcrypt.MinCost)
	users := make([]exchange.User, 100)
	for t := range users {
		team := fmt.Sprintf("team-%03d", t)
		_, err := m.AddTeam(ctx, exchange.NewTeam{ID: team, Budget: 1_000_000 * ledger.Dollar})
		must(err)
		users[t], err = id.AddUser(ctx, exchange.NewUser{Email: team + "@x.io", Role: exchange.RoleOwner, TeamID: team})
		must(err)
	}
	a, err := m.ScheduleAuction(ctx, clock.Now(), clock.Now().Add(time.Hour), auction.DefaultParams)
	must(err)
	_, err = m.OpenDue(ctx)
	must(err)
	limit := 50 * ledger.Dollar
	for i := range n {
		u := users[i%len(users)]
		_, err := m.PlaceOrder(ctx, u, exchange.OrderSpec{Team: u.TeamID, Limit: &limit,
			Bundles: []exchange.Bundle{{fmt.Sprintf("big/r%d", i%10): int64(1 + i%5)}, {fmt.Sprintf("big/r%d", (i+1)%10): int64(1 + i%5)}}})
		must(err)
	}
	return m, a.ID
}

// BenchmarkSettle closes and settles an auction with 10,000 winning orders on
// SQLite: the binding run, 10,000 captures, quota moves and settlement lines, in one
// transaction.
func BenchmarkSettle(b *testing.B) {
	const n = 10_000
	for b.Loop() {
		b.StopTimer()
		db := storetest.New(b)
		m, id := bigMarket(b, db, n)
		b.StartTimer()
		run, err := m.Close(context.Background(), id)
		if err != nil || !run.Converged {
			b.Fatalf("close: %+v %v", run, err)
		}
		b.StopTimer()
		rep, err := m.SettlementReport(context.Background(), id)
		if err != nil || len(rep.Lines) != n || rep.BuyersPaid != rep.SellersReceived+rep.TreasuryNet {
			b.Fatalf("report: %d lines, %v", len(rep.Lines), err)
		}
		won := 0
		for _, l := range rep.Lines {
			if l.BundleIndex >= 0 {
				won++
			}
		}
		b.ReportMetric(float64(won), "winners/op")
		b.StartTimer()
	}
}
