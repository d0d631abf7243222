package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A SQLite database with a schema and migrations pending is copied beside itself
// before migrating; the copy holds the old version and every row. An up-to-date or
// empty database is not copied.
func TestBackupBeforeMigrateCopiesTheOldSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, err := BackupBeforeMigrate(ctx, db, path); err != nil || got != "" {
		t.Fatalf("an empty database: %q %v", got, err)
	}
	p, err := provider(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := db.Write.Exec("INSERT INTO teams (id, name, created_at) VALUES ('search', 'Search', CURRENT_TIMESTAMP)").Error; err != nil {
		t.Fatal(err)
	}
	backup, err := BackupBeforeMigrate(ctx, db, path)
	if err != nil || !strings.HasPrefix(backup, path+".pre-v3-") {
		t.Fatalf("backup %q, %v", backup, err)
	}
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if got, err := BackupBeforeMigrate(ctx, db, path); err != nil || got != "" {
		t.Fatalf("an up-to-date database: %q %v", got, err)
	}
	old, err := Open(ctx, backup)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	var version, teams int64
	old.Read.Raw("SELECT MAX(version_id) FROM goose_db_version").Scan(&version)
	old.Read.Raw("SELECT COUNT(*) FROM teams").Scan(&teams)
	if version != 3 || teams != 1 {
		t.Fatalf("backup at version %d with %d teams", version, teams)
	}
	if err := Backup(ctx, db, backup); err == nil {
		t.Fatal("Backup overwrote an existing file")
	}
	if _, err := os.Stat(backup); err != nil {
		t.Fatal(err)
	}
}
