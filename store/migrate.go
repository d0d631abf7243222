package store

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/migrations"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// provider builds goose's migration provider for db's dialect. On PostgreSQL a
// session advisory lock keeps two replicas from migrating at once.
func provider(db *DB) (*goose.Provider, error) {
	fsys, err := migrations.FS(db.Dialect)
	if err != nil {
		return nil, err
	}
	return providerFS(db, fsys)
}

func providerFS(db *DB, fsys fs.FS) (*goose.Provider, error) {
	dialect := goose.DialectSQLite3
	var opts []goose.ProviderOption
	if db.Dialect == Postgres {
		dialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	return goose.NewProvider(dialect, db.SQL(), fsys, opts...)
}

// Migrate applies every pending migration, each in its own transaction. It is safe
// to call on an up-to-date database.
func Migrate(ctx context.Context, db *DB) error {
	p, err := provider(db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Migration is one migration's state.
type Migration struct {
	Version int64
	Name    string
	Applied bool
}

// Status lists every migration the binary knows and whether it has been applied.
func Status(ctx context.Context, db *DB) ([]Migration, error) {
	p, err := provider(db)
	if err != nil {
		return nil, err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	out := make([]Migration, len(st))
	for i, s := range st {
		name := s.Source.Path
		if j := strings.LastIndexByte(name, '/'); j >= 0 {
			name = name[j+1:]
		}
		out[i] = Migration{Version: s.Source.Version, Name: name, Applied: s.State == goose.StateApplied}
	}
	return out, nil
}

// CheckCurrent returns ECONFLICT when the schema is older than the binary, naming
// the first pending migration, so a server refuses to start on an old schema, and
// also when the database is newer than the binary.
func CheckCurrent(ctx context.Context, db *DB) error {
	p, err := provider(db)
	if err != nil {
		return err
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	switch {
	case current < target:
		return clearhouse.Errorf(clearhouse.ECONFLICT,
			"the database schema is at version %d but this binary needs %d: run `clearhouse migrate` (or start with --migrate)", current, target)
	case current > target:
		return checkDeclared(ctx, db, current, target)
	}
	return nil
}

// checkDeclared returns nil when every migration applied to db beyond newest (the
// newest this binary knows) declares in schema_compat that a release whose newest
// migration is newest may run on it, and ECONFLICT naming both versions otherwise:
// the rollback rule of docs/operating.md. A database without schema_compat
// declares nothing.
func checkDeclared(ctx context.Context, db *DB, current, newest int64) error {
	var undeclared int64
	err := db.Read.WithContext(ctx).Raw(`SELECT COUNT(*) FROM goose_db_version g WHERE g.is_applied AND g.version_id > ?
		AND NOT EXISTS (SELECT 1 FROM schema_compat c WHERE c.version = g.version_id AND c.oldest_schema <= ?)`, newest, newest).Scan(&undeclared).Error
	if err == nil && undeclared == 0 {
		return nil
	}
	return clearhouse.Errorf(clearhouse.ECONFLICT,
		"the database schema is at version %d, newer than this binary's %d (the newest migration it knows), and does not declare this release compatible (schema_compat): run the release that migrated it, or restore a backup taken before the upgrade", current, newest)
}

// CheckNotNewer returns ECONFLICT, naming both versions, when the database's schema
// is newer than every migration this binary knows and does not declare this
// release compatible (schema_compat; see checkDeclared): a binary rolled back to
// an older release must not start on the schema a newer one left unless that
// schema says it may (goose itself would ignore the versions it does not know).
func CheckNotNewer(ctx context.Context, db *DB) error {
	p, err := provider(db)
	if err != nil {
		return err
	}
	known := p.ListSources()
	if len(known) == 0 {
		return nil
	}
	newest := known[len(known)-1].Version
	current, err := p.GetDBVersion(ctx) // creates goose's table on an empty database, as Migrate would
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if current > newest {
		return checkDeclared(ctx, db, current, newest)
	}
	return nil
}

// CheckSchema is CheckCurrent for frequent callers (readiness probes): it reads the
// newest applied version through the read pool, taking no lock and not waiting
// for the writer, and returns ECONFLICT naming both versions unless it is the
// newest this binary knows.
func CheckSchema(ctx context.Context, db *DB) error {
	p, err := provider(db)
	if err != nil {
		return err
	}
	known := p.ListSources()
	if len(known) == 0 {
		return nil
	}
	newest := known[len(known)-1].Version
	var current int64
	if err := db.Read.WithContext(ctx).Raw("SELECT COALESCE(MAX(version_id), 0) FROM goose_db_version WHERE is_applied").Scan(&current).Error; err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	switch {
	case current > newest:
		if err := checkDeclared(ctx, db, current, newest); err != nil {
			return err
		}
	case current != newest:
		return clearhouse.Errorf(clearhouse.ECONFLICT, "the database schema is at version %d; this binary's is %d", current, newest)
	}
	return nil
}
