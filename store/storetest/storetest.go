// Package storetest gives tests a fresh, migrated database with a fixed clock: a
// SQLite file per test, and the same tests on PostgreSQL when the environment
// variable CLEARHOUSE_TEST_POSTGRES holds a URL (each test gets its own schema).
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
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
	file, err := migratedSQLite()
	if err != nil {
		t.Fatalf("storetest: migrating the template database: %v", err)
	}
	path := filepath.Join(t.TempDir(), "clearhouse.db")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return open(t, path)
}

// migrated holds the bytes of a SQLite database migrated once per test binary.
var migrated struct {
	once sync.Once
	file []byte
	err  error
}

// migratedSQLite migrates a SQLite file in a temporary directory once, checkpoints
// its write-ahead log into the file, and returns the file's bytes.
func migratedSQLite() ([]byte, error) {
	migrated.once.Do(func() {
		migrated.file, migrated.err = migrateTemplate()
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

// NewPostgres returns a fresh migrated schema on the PostgreSQL server named by
// CLEARHOUSE_TEST_POSTGRES, dropped when the test ends. The second result is false
// when the variable is unset (in CI that fails the test: see PostgresURL).
func NewPostgres(t testing.TB) (*store.DB, bool) {
	t.Helper()
	base := PostgresURL(t)
	if base == "" {
		return nil, false
	}
	admin, err := store.Open(context.Background(), base)
	if err != nil {
		t.Fatalf("storetest: %s: %v", PostgresEnv, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	if err := admin.Write.Exec("CREATE SCHEMA " + schema).Error; err != nil {
		admin.Close()
		t.Fatalf("storetest: creating schema: %v", err)
	}
	t.Cleanup(func() {
		admin.Write.Exec("DROP SCHEMA " + schema + " CASCADE")
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("storetest: %s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return open(t, u.String()), true
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

// Rewinder snapshots db, a PostgreSQL database from NewPostgres, and returns a
// function that puts it back as it was then: every table's rows (goose's version
// table too) and every sequence's position. A test that needs a freshly migrated
// database many times over (a property test's hundred runs) rewinds one instead:
// a fresh schema runs every migration's DDL, 2 to 5 s a schema on the shared 2-core
// machine, which a rewind replaces with one TRUNCATE and a few small inserts. The
// rewind fails the test if the schema's tables, columns or sequences changed since
// the snapshot (then it could not give back the database the snapshot was of), and
// must not run while anything else uses db.
func Rewinder(t testing.TB, db *store.DB) func() {
	t.Helper()
	return rewinder(t, db, false)
}

// rewinder is Rewinder; truncate makes it truncate as for a user who is not a
// superuser, for its test.
func rewinder(t testing.TB, db *store.DB, truncate bool) func() {
	t.Helper()
	if db.Dialect != store.Postgres {
		t.Fatal("storetest: Rewinder is for PostgreSQL: on SQLite, New copies a migrated file in milliseconds")
	}
	q := db.Write
	var tables, sequences []string
	if err := q.Raw(`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY 1`).Scan(&tables).Error; err != nil {
		t.Fatalf("storetest: listing tables: %v", err)
	}
	if err := q.Raw(`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind = 'S' ORDER BY 1`).Scan(&sequences).Error; err != nil {
		t.Fatalf("storetest: listing sequences: %v", err)
	}
	if len(tables) == 0 {
		t.Fatal("storetest: Rewinder: no tables: is db migrated?")
	}
	shape := func() string {
		var s string
		if err := q.Raw(`SELECT string_agg(concat_ws(' ', c.relname, c.relkind, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod),
				a.attnotnull, a.attidentity, a.attgenerated, pg_get_expr(d.adbin, d.adrelid)), E'\n' ORDER BY c.relname, a.attnum)
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
			LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
			WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'S')`).Scan(&s).Error; err != nil {
			t.Fatalf("storetest: reading the schema's shape: %v", err)
		}
		return s
	}
	was := shape()
	rows := map[string]string{} // table -> its rows as a JSON array, for tables that have rows
	for _, tb := range tables {
		var js string
		if err := q.Raw(fmt.Sprintf(`SELECT coalesce(json_agg(r), '[]')::text FROM %s r`, quoteIdent(tb))).Scan(&js).Error; err != nil {
			t.Fatalf("storetest: reading %s: %v", tb, err)
		}
		if js != "[]" {
			rows[tb] = js
		}
	}
	type position struct {
		LastValue int64
		IsCalled  bool
	}
	positions := map[string]position{}
	for _, s := range sequences {
		var p position
		if err := q.Raw(fmt.Sprintf(`SELECT last_value, is_called FROM %s`, quoteIdent(s))).Scan(&p).Error; err != nil {
			t.Fatalf("storetest: reading sequence %s: %v", s, err)
		}
		positions[s] = p
	}
	// Which tables hold rows, in one query: only those are emptied. A superuser
	// (as the tests' PostgreSQL user is in CI and on the project's machines)
	// deletes their rows with triggers and foreign keys off for the transaction
	// (session_replication_role), which empties every table that held rows, so no
	// reference is left dangling; others truncate them, by CASCADE with the tables
	// referring to them, which creates new files for every table and index
	// truncated (1 to 2 s where the deletes take tens of milliseconds).
	holding := make([]string, len(tables))
	for i, tb := range tables {
		holding[i] = fmt.Sprintf(`SELECT %s AS name WHERE EXISTS (SELECT 1 FROM %s)`, quoteLiteral(tb), quoteIdent(tb))
	}
	nonEmpty := strings.Join(holding, " UNION ALL ")
	var super bool
	if err := q.Raw(`SELECT current_setting('is_superuser') = 'on'`).Scan(&super).Error; err != nil {
		t.Fatalf("storetest: %v", err)
	}
	super = super && !truncate
	return func() {
		t.Helper()
		if now := shape(); now != was {
			t.Fatalf("storetest: the schema changed since Rewinder's snapshot, so a rewind cannot restore it:\nthen:\n%s\nnow:\n%s", was, now)
		}
		err := q.Transaction(func(tx *gorm.DB) error {
			var full []string
			if err := tx.Raw(nonEmpty).Scan(&full).Error; err != nil {
				return err
			}
			if super {
				if err := tx.Exec(`SET LOCAL session_replication_role = replica`).Error; err != nil {
					return err
				}
				for _, tb := range full {
					if err := tx.Exec("DELETE FROM " + quoteIdent(tb)).Error; err != nil {
						return fmt.Errorf("%s: %w", tb, err)
					}
				}
			} else if len(full) > 0 {
				for i, tb := range full {
					full[i] = quoteIdent(tb)
				}
				if err := tx.Exec("TRUNCATE " + strings.Join(full, ", ") + " CASCADE").Error; err != nil {
					return err
				}
			}
			for _, tb := range slices.Sorted(maps.Keys(rows)) {
				if err := tx.Exec(fmt.Sprintf(`INSERT INTO %s OVERRIDING SYSTEM VALUE SELECT * FROM json_populate_recordset(NULL::%[1]s, ?::json)`,
					quoteIdent(tb)), rows[tb]).Error; err != nil {
					return fmt.Errorf("%s: %w", tb, err)
				}
			}
			for _, s := range slices.Sorted(maps.Keys(positions)) {
				p := positions[s]
				if err := tx.Exec(`SELECT setval(?::regclass, ?, ?)`, quoteIdent(s), p.LastValue, p.IsCalled).Error; err != nil {
					return fmt.Errorf("sequence %s: %w", s, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("storetest: rewinding: %v", err)
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
