// Package audittest reads the audit trail the way the audited packages' tests do:
// the number of the newest row before an action, and the rows the action added.
package audittest

import (
	"context"
	"testing"

	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/store"
)

// Mark is the number of the trail's newest row (0 when it is empty): the rows an
// action adds are After it.
func Mark(t testing.TB, db *store.DB) int64 {
	t.Helper()
	rows, err := audit.NewTrail(db).List(context.Background(), audit.Filter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		return 0
	}
	return rows[0].Seq
}

// After is every row numbered after seq, oldest first.
func After(t testing.TB, db *store.DB, seq int64) []audit.Row {
	t.Helper()
	rows, err := audit.NewTrail(db).List(context.Background(), audit.Filter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Row
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Seq > seq {
			out = append(out, rows[i])
		}
	}
	return out
}
