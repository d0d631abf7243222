package exchange_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// placeConcurrently places orders from clients goroutines, each its own team's
// owner, until n are placed, and reports durable placements per second.
func placeConcurrently(b *testing.B, db *store.DB, clients, n int) {
	big := exchangetest.NewBig(b, db, clients, 1_000_000_000)
	ctx := context.Background()
	var next atomic.Int64
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				spec := big.Bid(i*clients + c) // team c's order
				if _, err := big.M.PlaceOrder(ctx, big.Users[c], spec); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "orders/s")
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(n), "cpu-µs/order")
}

// BenchmarkPlaceOrders50Clients places 5,000 orders from 50 concurrent clients on
// SQLite and, when CLEARHOUSE_TEST_POSTGRES is set, on PostgreSQL: each placement
// is durable when PlaceOrder returns.
func BenchmarkPlaceOrders50Clients(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			db := storetest.New(b)
			b.StartTimer()
			placeConcurrently(b, db, 50, 5000)
		}
	})
	b.Run("postgres", func(b *testing.B) {
		if os.Getenv(storetest.PostgresEnv) == "" {
			b.Skip(storetest.PostgresEnv + " is not set")
		}
		for b.Loop() {
			b.StopTimer()
			db, _ := storetest.NewPostgres(b)
			b.StartTimer()
			placeConcurrently(b, db, 50, 5000)
		}
	})
}
