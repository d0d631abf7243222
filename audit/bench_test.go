package audit_test

import (
	"context"
	"testing"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// BenchmarkRecord is the cost of one audited change's row: a transaction that only
// appends to the trail (read and lock the head, insert the row, move the head).
// Reported as ms/record; run with CLEARHOUSE_TEST_POSTGRES for the PostgreSQL half.
func BenchmarkRecord(b *testing.B) {
	run := func(b *testing.B, db *store.DB) {
		ctx := audit.WithActor(context.Background(), audit.Actor{Kind: audit.KindUser, UserID: 1, Email: "fin@x.io", Address: "10.0.0.1"})
		e := audit.Event{Action: "budget.grant", Object: "team:ml", Before: map[string]int64{"balance": 0}, After: map[string]int64{"balance": 5_000_000}}
		b.ResetTimer()
		for b.Loop() {
			if err := db.Write.Transaction(func(tx *gorm.DB) error { return audit.Record(ctx, tx, e) }); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/record")
	}
	b.Run("sqlite", func(b *testing.B) { run(b, storetest.New(b)) })
	if db, ok := storetest.NewPostgres(b); ok {
		b.Run("postgres", func(b *testing.B) { run(b, db) })
	}
}
