package ledger

import (
	"context"

	"gorm.io/gorm"
)

// grouped runs fn as one write of the ledger: in the caller's transaction when the
// ledger has one, else as a grouped write of the store (on SQLite, concurrent
// writes share one commit; see store.DB.Grouped).
func (l *Ledger) grouped(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if l.tx != nil {
		return l.tx.Transaction(fn)
	}
	return l.db.Grouped(ctx, fn)
}
