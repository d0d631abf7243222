package store

import (
	"context"
	"testing"
	"time"
)

// Migration 00027 rebuilds ledger_entries on SQLite (as 00014 did) to add the
// holding reason and adds the holding-charge tables: entries and their postings
// come through it, foreign keys hold, Down works while no holding entry exists and
// is refused, changing nothing, once one does.
func TestMigration27KeepsTheLedgerAndAddsTheHoldingReason(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for dialect, db := range openAt(t, 26) {
		t.Run(dialect, func(t *testing.T) {
			w := db.Write
			now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			exec := func(sql string, args ...any) {
				t.Helper()
				if err := w.Exec(sql, args...).Error; err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			exec(`INSERT INTO ledger_accounts (id, kind, balance, held, created_at) VALUES ('team:a', 'team', 90, 0, ?), ('grants', 'grants', -100, 0, ?), ('treasury', 'treasury', 10, 0, ?)`, now, now, now)
			exec(`INSERT INTO ledger_entries (id, idem_key, fingerprint, reason, ref, memo, posted_at) VALUES
				(1, 'g1', 'f1', 'grant', '', 'grant', ?), (2, 'b1', 'f2', 'best-effort', 'best-effort:7', 'capture', ?)`, now, now)
			exec(`INSERT INTO ledger_postings (entry_id, account_id, amount) VALUES (1, 'team:a', 100), (1, 'grants', -100), (2, 'team:a', -10), (2, 'treasury', 10)`)
			if dialect == Postgres {
				exec(`SELECT setval(pg_get_serial_sequence('ledger_entries', 'id'), 2)`)
			}
			p, err := provider(db)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpTo(ctx, 27); err != nil {
				t.Fatalf("migrating to 27: %v", err)
			}
			var n int64
			w.Raw(`SELECT count(*) FROM ledger_postings p JOIN ledger_entries e ON e.id = p.entry_id`).Scan(&n)
			if n != 4 {
				t.Fatalf("%d postings join their entries, want 4", n)
			}
			if dialect == SQLite {
				var bad []map[string]any
				w.Raw(`PRAGMA foreign_key_check`).Scan(&bad)
				var fk int64
				w.Raw(`PRAGMA foreign_keys`).Scan(&fk)
				if fk != 1 || len(bad) != 0 {
					t.Fatalf("after the rebuild: foreign_keys=%d, violations %v", fk, bad)
				}
			}
			if err := w.Exec(`INSERT INTO ledger_postings (entry_id, account_id, amount) VALUES (99, 'team:a', 1)`).Error; err == nil {
				t.Fatal("a posting of no entry was accepted")
			}
			if _, err := p.Down(ctx); err != nil {
				t.Fatalf("down: %v", err)
			}
			if err := w.Exec(`INSERT INTO ledger_entries (idem_key, fingerprint, reason, posted_at) VALUES ('h0', 'f', 'holding', ?)`, now).Error; err == nil {
				t.Fatal("version 26 accepted the holding reason")
			}
			if _, err := p.UpTo(ctx, 27); err != nil {
				t.Fatalf("up again: %v", err)
			}
			exec(`INSERT INTO ledger_entries (idem_key, fingerprint, reason, ref, posted_at) VALUES ('h1', 'f', 'holding', 'pool:x/cpu', ?)`, now)
			if _, err := p.Down(ctx); err == nil {
				t.Fatal("down with a holding entry succeeded")
			}
			if v, err := p.GetDBVersion(ctx); err != nil || v != 27 {
				t.Fatalf("after the refused down the version is %d (%v)", v, err)
			}
			if err := w.Raw(`SELECT count(*) FROM holding_charges`).Scan(&n).Error; err != nil {
				t.Fatalf("the refused down dropped holding_charges: %v", err)
			}
		})
	}
}
