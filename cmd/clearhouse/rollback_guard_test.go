package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// The rollback rule (docs/operating.md): a binary refuses a schema newer than its
// newest migration, at start-up whatever --migrate says and in `clearhouse
// migrate`, unless every newer migration applied there declares in schema_compat
// that this release may run on it; then it starts, ready. A declaration for later
// releases only, or one missing for any newer migration, still refuses. On
// PostgreSQL too when CLEARHOUSE_TEST_POSTGRES is set.
func TestARollbackRunsOnlyOnASchemaThatDeclaresItCompatible(t *testing.T) {
	newest := newestMigration(t)
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		dsnOf := func() string {
			t.Helper()
			if db.Dialect != store.SQLite {
				return pgDSNOf(t, db)
			}
			dsn := filepath.Join(t.TempDir(), "x.db")
			if err := store.Backup(ctx, db, dsn); err != nil {
				t.Fatal(err)
			}
			return dsn
		}
		exec := func(sql string, args ...any) {
			t.Helper()
			if err := db.Write.Exec(sql, args...).Error; err != nil {
				t.Fatal(err)
			}
		}
		refused := func(state string) {
			t.Helper()
			dsn := dsnOf()
			for _, migrate := range []bool{true, false} {
				if got, err := server.OpenMigrated(ctx, dsn, migrate, discardLog()); err == nil || !strings.Contains(err.Error(), "does not declare this release compatible") {
					if got != nil {
						got.Close()
					}
					t.Fatalf("%s, --migrate=%v: %v, want a refusal naming schema_compat", state, migrate, err)
				}
			}
			if code, out, errOut := runCLI(t, "", "migrate", "--db", dsn); code != 1 || !strings.Contains(errOut, strconv.FormatInt(newest, 10)) {
				t.Fatalf("%s: migrate %d %q %q, want 1", state, code, out, errOut)
			}
		}
		migrateAsNewerBinary(t, db, newest+1)
		refused("a newer migration that declares nothing")
		exec("INSERT INTO schema_compat (version, oldest_schema) VALUES (?, ?)", newest+1, newest)
		dsn := dsnOf()
		for _, migrate := range []bool{true, false} {
			got, err := server.OpenMigrated(ctx, dsn, migrate, discardLog())
			if err != nil {
				t.Fatalf("a newer schema declaring this release compatible, --migrate=%v: %v", migrate, err)
			}
			if err := store.CheckSchema(ctx, got); err != nil {
				t.Fatalf("readiness on a declared newer schema: %v", err)
			}
			got.Close()
		}
		if code, out, errOut := runCLI(t, "", "migrate", "--db", dsn); code != 0 {
			t.Fatalf("migrate on a declared newer schema: %d %q %q", code, out, errOut)
		}
		migrateAsNewerBinary(t, db, newest+2)
		exec("INSERT INTO schema_compat (version, oldest_schema) VALUES (?, ?)", newest+2, newest+1)
		refused("a second newer migration that declares only later releases compatible")
	})
}
