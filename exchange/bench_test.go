package exchange_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// benchSettle closes and settles an auction with n open orders from 200 teams
// that all win, on db: the binding run, n captures, quota moves and settlement
// lines, in one transaction. Besides the wall time it reports this process's CPU
// time per close (cpu-s/op; the database server's own, on PostgreSQL, is not in it).
func benchSettle(b *testing.B, open func(testing.TB) *store.DB, n int) {
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		db := open(b)
		big := exchangetest.NewBig(b, db, 200, int64(10*n))
		big.Seed(b, db, n)
		b.StartTimer()
		before := cpuTime()
		run, err := big.M.Close(context.Background(), big.AuctionID)
		cpu += cpuTime() - before
		if err != nil || !run.Converged || run.Orders != n {
			b.Fatalf("close: %+v %v", run, err)
		}
		b.StopTimer()
		rep, err := big.M.SettlementReport(context.Background(), big.AuctionID)
		if err != nil || len(rep.Lines) != n || rep.BuyersPaid != rep.SellersReceived+rep.TreasuryNet {
			b.Fatalf("report: %d lines, %v", len(rep.Lines), err)
		}
		b.ReportMetric(float64(n), "orders/op")
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkSettle closes and settles 10,000 and 100,000 winning orders on SQLite
// and, when CLEARHOUSE_TEST_POSTGRES is set, on PostgreSQL.
func BenchmarkSettle(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("sqlite/%dk", n/1000), func(b *testing.B) { benchSettle(b, storetest.New, n) })
		b.Run(fmt.Sprintf("postgres/%dk", n/1000), func(b *testing.B) {
			if os.Getenv(storetest.PostgresEnv) == "" {
				b.Skip(storetest.PostgresEnv + " is not set")
			}
			benchSettle(b, func(tb testing.TB) *store.DB { db, _ := storetest.NewPostgres(tb); return db }, n)
		})
	}
}
