package main

import (
	"testing"

	"github.com/clearhouse/clearhouse/store/storetest"
)

// migratedFile returns the path of a fresh SQLite file that already holds the
// current schema: a copy of storetest's template, migrated once per test binary.
// A server opened on it with Migrate set finds nothing pending, as `serve --migrate`
// on an up-to-date database does. The fixtures that only need a market use it
// instead of migrating an empty file: under the race detector each fresh migration
// cost about a second of CPU, most of it in goose's SQL parser (a 4 MB scan buffer
// per line from a sync.Pool, which the race detector's Pool drops one Put in four;
// 0.13 s in a whole run without it). The tests of migration itself still migrate
// empty files (migrate_test.go, rollback_guard_test.go and the CLI tests that start
// with `clearhouse migrate`).
func migratedFile(t *testing.T) string {
	t.Helper()
	db := storetest.New(t)
	var path string
	if err := db.Read.Raw("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&path).Error; err != nil || path == "" {
		t.Fatalf("the migrated copy's file: %q, %v", path, err)
	}
	if err := db.Close(); err != nil { // the app opens it alone, as serve would
		t.Fatal(err)
	}
	return path
}
