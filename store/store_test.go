package store_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/migrations"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"gorm.io/gorm"
)

func TestDialectFoldersHoldTheSameVersions(t *testing.T) {
	t.Parallel()
	names := func(d string) []string {
		fsys, err := migrations.FS(d)
		if err != nil {
			t.Fatal(err)
		}
		m, err := fs.Glob(fsys, "*.sql")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	lite, pg := names("sqlite"), names("postgres")
	if len(lite) == 0 {
		t.Fatal("no migrations embedded")
	}
	if !slices.Equal(lite, pg) {
		t.Errorf("migration folders disagree:\n sqlite:   %v\n postgres: %v", lite, pg)
	}
}

// columns lists table.column for every table but goose's own. On PostgreSQL in one
// catalog query: gorm's Migrator().ColumnTypes made several for each of the schema's
// tables, 34 to 44 s of this test under -race on the shared machine.
func columns(t *testing.T, db *store.DB) []string {
	t.Helper()
	if db.Dialect == store.Postgres {
		var out []string
		if err := db.Read.Raw(`SELECT c.relname || '.' || a.attname FROM pg_attribute a
			JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname <> 'goose_db_version'
			AND a.attnum > 0 AND NOT a.attisdropped`).Scan(&out).Error; err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	tables, err := db.Read.Migrator().GetTables()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tb := range tables {
		if tb == "goose_db_version" || strings.HasPrefix(tb, "sqlite_") {
			continue
		}
		cols, err := db.Read.Migrator().ColumnTypes(tb)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cols {
			out = append(out, tb+"."+c.Name())
		}
	}
	slices.Sort(out)
	return out
}

func TestDialectsDefineTheSameColumns(t *testing.T) {
	t.Parallel()
	pg, ok := storetest.NewPostgres(t)
	if !ok {
		t.Skip("set " + storetest.PostgresEnv + " to compare the SQLite schema with PostgreSQL's")
	}
	lite := storetest.New(t)
	a, b := columns(t, lite), columns(t, pg)
	if !slices.Equal(a, b) {
		t.Errorf("schemas disagree:\n sqlite only:   %v\n postgres only: %v", minus(a, b), minus(b, a))
	}
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func TestCheckCurrentRefusesAnOldSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = store.CheckCurrent(ctx, db)
	if clearhouse.ErrorCode(err) != clearhouse.ECONFLICT || !strings.Contains(err.Error(), "clearhouse migrate") {
		t.Fatalf("CheckCurrent on an empty database = %v, want ECONFLICT telling to migrate", err)
	}
	st, err := store.Status(ctx, db)
	if err != nil || len(st) == 0 || st[0].Applied {
		t.Fatalf("Status before migrating = %+v, %v", st, err)
	}
	if err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := store.CheckCurrent(ctx, db); err != nil {
		t.Fatalf("CheckCurrent after Migrate = %v", err)
	}
	if err := store.Migrate(ctx, db); err != nil {
		t.Fatalf("second Migrate = %v, want a no-op", err)
	}
}

func TestSQLiteSettings(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	var mode string
	var fk, sync int
	db.Write.Raw("PRAGMA journal_mode").Scan(&mode)
	db.Write.Raw("PRAGMA foreign_keys").Scan(&fk)
	db.Write.Raw("PRAGMA synchronous").Scan(&sync)
	if mode != "wal" || fk != 1 || sync != 2 {
		t.Errorf("journal_mode=%s foreign_keys=%d synchronous=%d, want wal 1 2(FULL)", mode, fk, sync)
	}
	if err := db.Read.Exec("CREATE TABLE nope (x INTEGER)").Error; err == nil {
		t.Error("the read pool accepted a write")
	}
	// A foreign key violation is refused and translated.
	err := db.Write.Exec("INSERT INTO users (email, role, team_id, created_at) VALUES ('a@b.c', 'member', 'ghost', CURRENT_TIMESTAMP)").Error
	if err == nil {
		t.Error("foreign keys are not enforced")
	}
}

func TestConcurrentWritersDoNotFailBusy(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- db.Write.Transaction(func(tx *gorm.DB) error {
					var n int64
					if err := tx.Table("teams").Count(&n).Error; err != nil {
						return err
					}
					return tx.Exec("INSERT INTO teams (id, name, created_at) VALUES (?, ?, CURRENT_TIMESTAMP)",
						"t"+string(rune('a'+i%26))+string(rune('a'+i/26)), "T").Error
				})
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		var n int64
		db.Read.Table("teams").Count(&n)
		if n != 40 {
			t.Errorf("%d teams, want 40", n)
		}
	})
}

func TestOpenRefusesSQLiteOptions(t *testing.T) {
	t.Parallel()
	_, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "x.db")+"?_journal_mode=DELETE")
	if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
		t.Fatalf("got %v, want EINVALID", err)
	}
}

func TestExclusiveRunsOneHolderAtATime(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		inner := false
		ran, err := db.Exclusive(ctx, 42, func() error {
			if db.Dialect == store.Postgres {
				// While the lock is held, a second holder is turned away.
				again, err := db.Exclusive(ctx, 42, func() error { inner = true; return nil })
				if err != nil || again {
					t.Errorf("second Exclusive = %v, %v; want it refused", again, err)
				}
			}
			return nil
		})
		if err != nil || !ran || inner {
			t.Fatalf("Exclusive = %v, %v (inner ran: %v)", ran, err, inner)
		}
		if ran, err := db.Exclusive(ctx, 42, func() error { return nil }); !ran || err != nil {
			t.Fatalf("after release: %v, %v", ran, err)
		}
	})
}
