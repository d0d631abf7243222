package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"gorm.io/gorm"
)

// TestStatementsStayPreparedAcrossTransactions runs one statement in a grouped
// write, then again in later ones: from the second batch on it is the statement
// prepared once on the writer, and a failing one still rolls back only its own write.
func TestStatementsStayPreparedAcrossTransactions(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Write.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL UNIQUE CHECK (v >= 0))").Error; err != nil {
		t.Fatal(err)
	}
	const q = "INSERT INTO t (v) VALUES (?) RETURNING id"
	var cached []bool
	for i := range 3 {
		err := db.Grouped(ctx, func(tx *gorm.DB) error {
			s, _ := cachedStmt(tx, q)
			cached = append(cached, s != nil)
			var id int64
			return ScanRow(tx, q, []any{i}, &id)
		})
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if want := []bool{false, true, true}; !equal(cached, want) {
		t.Errorf("prepared in writes 1 to 3: %v, want %v", cached, want)
	}
	// A unique key's violation is translated as gorm translates it, and leaves nothing.
	for range 2 {
		err = db.Grouped(ctx, func(tx *gorm.DB) error {
			_, err := Exec(tx, "INSERT INTO t (v) VALUES (?)", 1)
			return err
		})
		if !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Errorf("repeated value: %v, want gorm.ErrDuplicatedKey", err)
		}
	}
	var n int64
	if err := db.Write.Raw("SELECT COUNT(*) FROM t").Row().Scan(&n); err != nil || n != 3 {
		t.Errorf("rows: %d (%v), want 3", n, err)
	}
	var id int64
	if err := ScanRow(db.Write, "SELECT id FROM t WHERE v = ?", []any{99}, &id); err != sql.ErrNoRows {
		t.Errorf("no row: %v, want sql.ErrNoRows", err)
	}
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
