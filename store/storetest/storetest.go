// Package storetest gives tests a fresh, migrated database with a fixed clock: a
// SQLite file per test, and the same tests on PostgreSQL when the environment
// variable CLEARHOUSE_TEST_POSTGRES holds a URL (each test gets a schema of its own
// while it runs, from a pool of migrated schemas: see NewPostgres).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/migrations"
	"github.com/clearhouse/clearhouse/store"
	"github.com/pressly/goose/v3"
	"gorm.io/gorm"
)

// PostgresEnv names the environment variable holding the PostgreSQL URL for tests.
const PostgresEnv = "CLEARHOUSE_TEST_POSTGRES"

// New returns a fresh migrated SQLite database in t's temporary directory, closed
// when the test ends. It is a copy of a file migrated once per test binary (running
// every migration took about 0.1 s a test, and far more under the race detector);
// opening it runs the migrations again, which finds none pending.
func New(t testing.TB) *store.DB {
	t.Helper()
	return open(t, MigratedFile(t))
}

// MigratedFile returns the path of a new SQLite file in t's temporary directory
// that holds the current schema and no rows, for a test that opens the database
// itself (a server's wiring, a command line, a child process): a copy of the file
// migrated once per test binary, on which store.Migrate (`serve --migrate`,
// `clearhouse migrate`) finds nothing pending. Under the race detector each
// migration of an empty file cost about a second of CPU, most of it in goose's SQL
// parser (a 4 MB scan buffer per line from a sync.Pool, and the race detector's Pool
// drops one Put in four); 0.13 s in a whole run without it. Tests of migration
// itself must still migrate an empty file.
func MigratedFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "clearhouse.db")
	if err := WriteMigrated(path); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return path
}

// WriteMigrated writes a migrated empty SQLite database to the new file path, as
// MigratedFile does, for a template a test binary builds once outside any test
// (a seeded market). It fails when the migration or the write does.
func WriteMigrated(path string) error {
	file, err := migratedSQLite()
	if err != nil {
		return fmt.Errorf("migrating the template database: %w", err)
	}
	return os.WriteFile(path, file, 0o600)
}

// migrated holds the bytes of a SQLite database migrated once per test binary.
var migrated struct {
	once sync.Once
	file []byte
	err  error
}

// migratedSQLite migrates a SQLite file in a temporary directory once, checkpoints
// its write-ahead log into the file, and returns the file's bytes; or reads the
// same file another test binary migrated and kept (see templateKey).
func migratedSQLite() ([]byte, error) {
	migrated.once.Do(func() {
		key := templateKey()
		if file, ok := cachedTemplate(key); ok {
			migrated.file = file
			return
		}
		migrated.file, migrated.err = migrateTemplate()
		if migrated.err == nil {
			keepTemplate(key, migrated.file)
		}
	})
	return migrated.file, migrated.err
}

func migrateTemplate() ([]byte, error) {
	dir, err := os.MkdirTemp("", "clearhouse-storetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "clearhouse.db")
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx, db); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	if err := db.Write.Exec("PRAGMA wal_checkpoint(TRUNCATE)").Error; err != nil {
		return nil, errors.Join(err, db.Close())
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	if st, err := os.Stat(path + "-wal"); err == nil && st.Size() > 0 {
		return nil, errors.New("the closed database left a write-ahead log: a copy of the file alone would miss it")
	}
	return os.ReadFile(path)
}

// PostgresURL returns the PostgreSQL URL of CLEARHOUSE_TEST_POSTGRES, or "" when it is
// unset; a test that needs PostgreSQL skips on "". In CI (the environment variable CI
// set) an unset URL fails the test instead: .ci/run starts a server and sets it, so
// a PostgreSQL test that would skip there means CI lost half its coverage.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" && os.Getenv("CI") != "" {
		t.Fatalf("storetest: CI is set but %s is not: the PostgreSQL half of the tests must run in CI (.ci/run starts a server)", PostgresEnv)
	}
	return base
}

// NewPostgres returns a freshly migrated schema on the PostgreSQL server named by
// CLEARHOUSE_TEST_POSTGRES, the test's alone until it ends: a schema of the test
// binary's pool, rewound to its state just after migrating when the test that had
// it ended, or a new one migrated when every pooled schema is in use (see
// pgPool). The second result is false when the variable is unset (in CI that
// fails the test: see PostgresURL).
func NewPostgres(t testing.TB) (*store.DB, bool) {
	t.Helper()
	base := PostgresURL(t)
	if base == "" {
		return nil, false
	}
	if err := pgPoolStart(base); err != nil {
		t.Fatalf("storetest: %s: %v", PostgresEnv, err)
	}
	p, err := pgTake()
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	fresh := p.snap == nil
	// Registered before open's, so it runs after the test's connections closed.
	t.Cleanup(func() { pgGiveBack(t, p) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("storetest: %s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", p.schema)
	u.RawQuery = q.Encode()
	db := open(t, u.String())
	if fresh {
		if p.snap, err = takeSnapshot(db.Write); err != nil {
			t.Fatalf("storetest: snapshot of the migrated schema: %v", err)
		}
	}
	return db, true
}

// dsns remembers where each test database lives, for Another.
var dsns sync.Map // *store.DB -> string

func open(t testing.TB, dsn string) *store.DB {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("storetest: open: %v", err)
	}
	t.Cleanup(func() { db.Close(); dsns.Delete(db) })
	if err := migrateFresh(ctx, db); err != nil {
		t.Fatalf("storetest: migrate: %v", err)
	}
	dsns.Store(db, dsn)
	return db
}

// migrateFresh migrates a database no one else uses yet. On PostgreSQL it runs the
// migrations without store.Migrate's session advisory lock: that lock is one per
// server (goose's default lock id), polled every 5 seconds, so every test package
// migrating its schemas at the same time (go test runs packages side by side, and
// parallel tests within one) queued behind the others, and a test lost 5 to 60
// seconds waiting for a lock that protected nothing (each test has a fresh schema of
// its own). store.CheckCurrent then checks the result as a server's start would.
func migrateFresh(ctx context.Context, db *store.DB) error {
	if db.Dialect != store.Postgres {
		return store.Migrate(ctx, db) // no lock on SQLite
	}
	fsys, err := migrations.FS(db.Dialect)
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db.SQL(), fsys)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return err
	}
	return store.CheckCurrent(ctx, db)
}

// Another opens a second connection pool to the database db came from, as a
// second server sharing it would have; closed when the test ends.
func Another(t testing.TB, db *store.DB) *store.DB {
	t.Helper()
	dsn, ok := dsns.Load(db)
	if !ok {
		t.Fatal("storetest: Another needs a database from storetest")
	}
	other, err := store.Open(context.Background(), dsn.(string))
	if err != nil {
		t.Fatalf("storetest: open: %v", err)
	}
	t.Cleanup(func() { other.Close() })
	return other
}

// Each runs fn as a subtest "sqlite" on a fresh SQLite database and, when
// CLEARHOUSE_TEST_POSTGRES is set, as a subtest "postgres" on a fresh schema there.
func Each(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	t.Run(store.SQLite, func(t *testing.T) { fn(t, New(t)) })
	if PostgresURL(t) != "" {
		t.Run(store.Postgres, func(t *testing.T) {
			db, _ := NewPostgres(t)
			fn(t, db)
		})
	}
}

// Clock is a fixed clock that tests move by hand. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Epoch is the instant new clocks start at unless told otherwise.
var Epoch = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// NewClock returns a clock stopped at t (Epoch when t is zero).
func NewClock(t time.Time) *Clock {
	if t.IsZero() {
		t = Epoch
	}
	return &Clock{now: t.UTC()}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t.UTC()
	c.mu.Unlock()
}

// AssertModelsMatchSchema fails the test for every field of each gorm model that
// has no column in the model's table: a model must never rely on AutoMigrate.
func AssertModelsMatchSchema(t *testing.T, db *store.DB, models ...any) {
	t.Helper()
	for _, m := range models {
		stmt := &gorm.Statement{DB: db.Read}
		if err := stmt.Parse(m); err != nil {
			t.Errorf("model %T: %v", m, err)
			continue
		}
		have, err := columnNames(db, stmt.Schema.Table)
		if err != nil {
			t.Errorf("model %T: table %s: %v", m, stmt.Schema.Table, err)
			continue
		}
		if len(have) == 0 {
			t.Errorf("model %T: no table %q", m, stmt.Schema.Table)
			continue
		}
		for _, f := range stmt.Schema.Fields {
			if f.DBName != "" && !have[f.DBName] {
				t.Errorf("model %T: field %s has no column %s.%s", m, f.Name, stmt.Schema.Table, f.DBName)
			}
		}
	}
}

// columnNames is the set of table's column names. On PostgreSQL in one catalog
// query: gorm's Migrator().ColumnTypes makes several (seconds a table under -race on
// the shared machine, where the database holds many tests' schemas).
func columnNames(db *store.DB, table string) (map[string]bool, error) {
	have := map[string]bool{}
	if db.Dialect == store.Postgres {
		var names []string
		if err := db.Read.Raw(`SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
			JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relname = ? AND a.attnum > 0 AND NOT a.attisdropped`, table).Scan(&names).Error; err != nil {
			return nil, err
		}
		for _, n := range names {
			have[n] = true
		}
		return have, nil
	}
	cols, err := db.Read.Migrator().ColumnTypes(table)
	if err != nil {
		return nil, err
	}
	for _, c := range cols {
		have[c.Name()] = true
	}
	return have, nil
}

// quoteIdent quotes a PostgreSQL identifier, quoteLiteral a string.
func quoteIdent(s string) string   { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func quoteLiteral(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }
