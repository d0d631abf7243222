package ledger_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"gorm.io/gorm"
)

// benchDBs runs fn on SQLite and, when configured, PostgreSQL.
func benchDBs(b *testing.B, fn func(b *testing.B, db *store.DB)) {
	b.Run("sqlite", func(b *testing.B) { fn(b, storetest.New(b)) })
	if db, ok := storetest.NewPostgres(b); ok {
		b.Run("postgres", func(b *testing.B) { fn(b, db) })
	}
}

func benchLedger(b *testing.B, db *store.DB) *ledger.Ledger {
	ctx := context.Background()
	l := ledger.New(db, time.Now)
	for _, a := range []ledger.AccountID{ledger.Treasury, ledger.Grants, search} {
		if err := l.OpenAccount(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := l.Post(ctx, ledger.NewEntry{Key: fmt.Sprintf("fund-%d", time.Now().UnixNano()), Reason: ledger.ReasonGrant,
		Postings: []ledger.Posting{{ledger.Grants, -1e9 * ledger.Dollar}, {search, 1e9 * ledger.Dollar}}}); err != nil {
		b.Fatal(err)
	}
	return l
}

var benchSeq atomic.Int64

// BenchmarkPlaceHold places durable holds on one budget from concurrent callers
// (GOMAXPROCS x 4 goroutines).
func BenchmarkPlaceHold(b *testing.B) {
	benchDBs(b, func(b *testing.B, db *store.DB) {
		l := benchLedger(b, db)
		ctx := context.Background()
		b.SetParallelism(4)
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := l.PlaceHold(ctx, fmt.Sprintf("bh-%d", benchSeq.Add(1)), search, ledger.Dollar, "order"); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "holds/s")
	})
}

// BenchmarkPost posts two-posting entries from concurrent callers.
func BenchmarkPost(b *testing.B) {
	benchDBs(b, func(b *testing.B, db *store.DB) {
		l := benchLedger(b, db)
		ctx := context.Background()
		b.SetParallelism(4)
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, err := l.Post(ctx, ledger.NewEntry{Key: fmt.Sprintf("bp-%d", benchSeq.Add(1)), Reason: ledger.ReasonAdjustment,
					Postings: []ledger.Posting{{search, -1}, {ledger.Treasury, 1}}})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "entries/s")
	})
}

// BenchmarkApply captures 5,000 holds (every fourth one released instead) in one
// Apply inside a transaction, as settlement does; it reports this process's CPU time
// per Apply (cpu-ms/op), which a loaded machine moves far less than the wall time.
func BenchmarkApply(b *testing.B) {
	const n = 5_000
	benchDBs(b, func(b *testing.B, db *store.DB) {
		l := benchLedger(b, db)
		ctx := context.Background()
		var cpu time.Duration
		for b.Loop() {
			b.StopTimer()
			ids := make(chan int64, n)
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for range n / 8 {
						h, err := l.PlaceHold(ctx, fmt.Sprintf("bh-%d", benchSeq.Add(1)), search, ledger.Dollar, "order")
						if err != nil {
							b.Error(err)
							return
						}
						ids <- h.ID
					}
				})
			}
			wg.Wait()
			close(ids)
			var batch ledger.Batch
			for id := range ids {
				key := fmt.Sprintf("ba-%d", benchSeq.Add(1))
				if id%4 == 3 {
					batch.Releases = append(batch.Releases, ledger.Release{Key: key, HoldID: id})
					continue
				}
				batch.Captures = append(batch.Captures, ledger.Capture{Key: key, HoldID: id, Amount: ledger.Dollar / 2,
					To: ledger.Treasury, Reason: ledger.ReasonSettlement, Ref: "auction:1"})
			}
			b.StartTimer()
			before := cpuTime()
			err := db.Write.Transaction(func(tx *gorm.DB) error {
				_, err := l.WithTx(tx).Apply(ctx, batch)
				return err
			})
			cpu += cpuTime() - before
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	})
}
