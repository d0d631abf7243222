package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
)

// SQLitePath returns the file a SQLite DSN names, and false for PostgreSQL URLs
// and private in-memory databases.
func SQLitePath(dsn string) (string, bool) {
	dsn = strings.TrimSpace(dsn)
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return "", false
	}
	path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "file:")
	if path == "" || path == ":memory:" {
		return "", false
	}
	return path, true
}

// Backup writes a consistent copy of a live SQLite database to dest with VACUUM
// INTO: one read transaction, so the copy is the database as of one commit, while
// other processes keep writing (WAL). It occupies db's writer connection while it
// copies: call it on a DB of its own (as `clearhouse backup` does), not a server's. dest must not exist. Returns EINVALID on
// PostgreSQL (use pg_dump) and ECONFLICT when dest exists.
func Backup(ctx context.Context, db *DB, dest string) error {
	if db.Dialect != SQLite {
		return clearhouse.Errorf(clearhouse.EINVALID, "backup: this copies SQLite databases; back up PostgreSQL with pg_dump (see docs/operating.md)")
	}
	if _, err := os.Stat(dest); err == nil {
		return clearhouse.Errorf(clearhouse.ECONFLICT, "backup: %s exists; give a new file", dest)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// The writer's connection, as the read pool is query-only; VACUUM INTO takes only
	// a read transaction on the source, so other processes' writers go on (WAL).
	if err := db.Write.WithContext(ctx).Exec("VACUUM INTO ?", dest).Error; err != nil {
		return fmt.Errorf("backup to %s: %w", dest, err)
	}
	return nil
}

// BackupBeforeMigrate copies the SQLite file at path to path.pre-v<N>-<time>.bak
// when it holds a schema (version N > 0) with migrations pending, and returns the
// copy's name ("" when there was nothing to back up).
func BackupBeforeMigrate(ctx context.Context, db *DB, path string) (string, error) {
	p, err := provider(db)
	if err != nil {
		return "", err
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return "", err
	}
	if current == 0 || current >= target {
		return "", nil
	}
	dest := fmt.Sprintf("%s.pre-v%d-%s.bak", path, current, time.Now().UTC().Format("20060102T150405Z"))
	if err := Backup(ctx, db, filepath.Clean(dest)); err != nil {
		return "", err
	}
	return dest, nil
}
