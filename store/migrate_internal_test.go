package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// openAt returns an empty SQLite database and, with CLEARHOUSE_TEST_POSTGRES, an
// empty PostgreSQL schema, each migrated to version.
func openAt(t *testing.T, version int64) map[string]*DB {
	t.Helper()
	ctx := context.Background()
	dbs := map[string]*DB{}
	lite, err := Open(ctx, filepath.Join(t.TempDir(), "old.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	dbs[SQLite] = lite
	base := os.Getenv("CLEARHOUSE_TEST_POSTGRES")
	if base == "" && os.Getenv("CI") != "" {
		t.Fatal("CI is set but CLEARHOUSE_TEST_POSTGRES is not: the PostgreSQL half must run in CI (storetest.PostgresURL's rule)")
	}
	if base != "" {
		admin, err := Open(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "t_" + hex.EncodeToString(b[:])
		if err := admin.Write.Exec("CREATE SCHEMA " + schema).Error; err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Write.Exec("DROP SCHEMA " + schema + " CASCADE"); admin.Close() })
		u, _ := url.Parse(base)
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		pg, err := Open(ctx, u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Close() })
		dbs[Postgres] = pg
	}
	for _, db := range dbs {
		p, err := provider(db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.UpTo(ctx, version); err != nil {
			t.Fatalf("%s: migrating to %d: %v", db.Dialect, version, err)
		}
	}
	return dbs
}

// Migration 00014 rebuilds ledger_entries on SQLite to add the best-effort reason: a
// ledger with entries, a reversal, postings, holds and hold parts comes through it
// with every row, key, index and foreign key as it was, the AUTOINCREMENT sequence
// kept, and foreign keys still enforced. Down refuses while a best-effort entry
// exists and changes nothing.
func TestMigration14KeepsTheLedgerAndAddsTheBestEffortReason(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for dialect, db := range openAt(t, 13) {
		t.Run(dialect, func(t *testing.T) {
			w := db.Write
			now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
			exec := func(sql string, args ...any) {
				t.Helper()
				if err := w.Exec(sql, args...).Error; err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			exec(`INSERT INTO ledger_accounts (id, kind, balance, held, created_at) VALUES ('team:a', 'team', 60, 10, ?), ('grants', 'grants', -100, 0, ?), ('treasury', 'treasury', 40, 0, ?)`, now, now, now)
			exec(`INSERT INTO ledger_entries (id, idem_key, fingerprint, reason, ref, memo, posted_at) VALUES
				(1, 'g1', 'f1', 'grant', '', 'grant', ?), (2, 'c1', 'f2', 'reservation', 'best-effort:7', 'capture of hold 1 (best-effort:7)', ?),
				(3, 'x', 'f3', 'adjustment', '', 'oops', ?), (4, 'r3', 'f4', 'reversal', 'entry:3', 'undo', ?), (5, 's1', 'f5', 'settlement', 'auction:1', '', ?)`, now, now, now, now, now)
			exec(`UPDATE ledger_entries SET reverses = 3 WHERE id = 4`)
			exec(`INSERT INTO ledger_postings (entry_id, account_id, amount) VALUES (1, 'team:a', 100), (1, 'grants', -100),
				(2, 'team:a', -30), (2, 'treasury', 30), (3, 'team:a', -5), (3, 'treasury', 5), (4, 'team:a', 5), (4, 'treasury', -5),
				(5, 'team:a', -10), (5, 'treasury', 10)`)
			exec(`INSERT INTO ledger_holds (id, idem_key, account_id, amount, ref, status, captured, released, entry_id, created_at) VALUES
				(1, 'h1', 'team:a', 30, 'best-effort:7', 'captured', 30, 0, 2, ?), (2, 'h2', 'team:a', 10, 'order:1', 'active', 0, 0, NULL, ?)`, now, now)
			exec(`INSERT INTO ledger_hold_parts (hold_id, idem_key, fingerprint, captured, released, entry_id, created_at) VALUES (1, 'p1', 'fp', 30, 0, 2, ?)`, now)
			if dialect == Postgres { // explicit ids do not move the identity
				exec(`SELECT setval(pg_get_serial_sequence('ledger_entries', 'id'), 5)`)
			}
			if dialect == SQLite {
				// An entry whose id was taken and rolled forward: the next id must not reuse it.
				exec(`INSERT INTO ledger_entries (id, idem_key, fingerprint, reason, posted_at) VALUES (9, 'gone', 'f', 'grant', ?)`, now)
				exec(`DELETE FROM ledger_entries WHERE id = 9`)
			}
			type row struct {
				ID                                int64
				IdemKey, Fingerprint, Reason, Ref string
				Memo                              string
				Reverses                          *int64
			}
			read := func() []row {
				var rs []row
				if err := w.Raw(`SELECT id, idem_key, fingerprint, reason, ref, memo, reverses FROM ledger_entries ORDER BY id`).Scan(&rs).Error; err != nil {
					t.Fatal(err)
				}
				return rs
			}
			before := read()
			p, err := provider(db)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpTo(ctx, 14); err != nil {
				t.Fatalf("migrating to 14: %v", err)
			}
			after := read()
			if len(after) != len(before) {
				t.Fatalf("%d entries after, %d before", len(after), len(before))
			}
			for i := range before {
				b, a := before[i], after[i]
				if b.ID != a.ID || b.IdemKey != a.IdemKey || b.Reason != a.Reason || b.Ref != a.Ref || b.Memo != a.Memo || (b.Reverses == nil) != (a.Reverses == nil) ||
					b.Reverses != nil && *b.Reverses != *a.Reverses {
					t.Fatalf("entry %d changed: %+v -> %+v", b.ID, b, a)
				}
			}
			var n int64
			w.Raw(`SELECT count(*) FROM ledger_postings p JOIN ledger_entries e ON e.id = p.entry_id`).Scan(&n)
			if n != 10 {
				t.Fatalf("%d postings join their entries, want 10", n)
			}
			w.Raw(`SELECT count(*) FROM ledger_holds h JOIN ledger_entries e ON e.id = h.entry_id`).Scan(&n)
			if n != 1 {
				t.Fatalf("%d holds join their entries, want 1", n)
			}
			if dialect == SQLite {
				var fk, idx int64
				w.Raw(`PRAGMA foreign_keys`).Scan(&fk)
				w.Raw(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'ledger_entries_posted' AND tbl_name = 'ledger_entries'`).Scan(&idx)
				var bad []map[string]any
				w.Raw(`PRAGMA foreign_key_check`).Scan(&bad)
				if fk != 1 || idx != 1 || len(bad) != 0 {
					t.Fatalf("after the rebuild: foreign_keys=%d, index %d, violations %v", fk, idx, bad)
				}
				var leftover int64
				w.Raw(`SELECT count(*) FROM sqlite_schema WHERE name LIKE 'ledger_entries_%' AND name <> 'ledger_entries_posted'`).Scan(&leftover)
				if leftover != 0 {
					t.Fatalf("%d leftover objects of the rebuild", leftover)
				}
			}
			// Foreign keys still hold: a posting of no entry and a reversal of no entry are refused.
			if err := w.Exec(`INSERT INTO ledger_postings (entry_id, account_id, amount) VALUES (99, 'team:a', 1)`).Error; err == nil {
				t.Fatal("a posting of no entry was accepted")
			}
			if err := w.Exec(`UPDATE ledger_entries SET reverses = 99 WHERE id = 5`).Error; err == nil {
				t.Fatal("a reversal of no entry was accepted")
			}
			if err := w.Exec(`INSERT INTO ledger_entries (idem_key, fingerprint, reason, posted_at) VALUES ('bad', 'f', 'gift', ?)`, now).Error; err == nil {
				t.Fatal("an unknown reason was accepted")
			}
			// Down works while no entry uses the new reason, and Up again.
			if _, err := p.Down(ctx); err != nil {
				t.Fatalf("down: %v", err)
			}
			if err := w.Exec(`INSERT INTO ledger_entries (idem_key, fingerprint, reason, posted_at) VALUES ('be0', 'f', 'best-effort', ?)`, now).Error; err == nil {
				t.Fatal("version 13 accepted the best-effort reason")
			}
			if _, err := p.UpTo(ctx, 14); err != nil {
				t.Fatalf("up again: %v", err)
			}
			var id int64
			if err := w.Raw(`INSERT INTO ledger_entries (idem_key, fingerprint, reason, ref, posted_at) VALUES ('be1', 'f', 'best-effort', 'best-effort:8', ?) RETURNING id`, now).Scan(&id).Error; err != nil {
				t.Fatalf("the best-effort reason: %v", err)
			}
			if id <= 5 || dialect == SQLite && id <= 9 {
				t.Fatalf("the new entry got id %d, reusing an earlier one", id)
			}
			if _, err := p.Down(ctx); err == nil {
				t.Fatal("down with a best-effort entry succeeded")
			}
			if v, err := p.GetDBVersion(ctx); err != nil || v != 14 {
				t.Fatalf("after the refused down the version is %d (%v)", v, err)
			}
			if len(read()) != len(before)+1 {
				t.Fatal("the refused down changed the entries")
			}
			if err := w.Exec(`INSERT INTO ledger_entries (idem_key, fingerprint, reason, posted_at) VALUES ('be2', 'f', 'best-effort', ?)`, now).Error; err != nil {
				t.Fatalf("after the refused down: %v", err)
			}
		})
	}
}
