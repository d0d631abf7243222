package ledger_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
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
