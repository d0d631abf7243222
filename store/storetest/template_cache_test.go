package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/clearhouse/clearhouse/store"
)

// The template kept for the next test binaries is a current database: a copy of it
// has every migration applied, as the binary's own template has.
func TestTheKeptTemplateIsCurrent(t *testing.T) {
	t.Parallel()
	key := templateKey()
	if key == "" {
		t.Fatal("no template key: the test runs in the module's tree, whose go.mod, store sources and migrations it should read")
	}
	if key != templateKey() {
		t.Fatal("the template key changes between calls")
	}
	if _, err := migratedSQLite(); err != nil {
		t.Fatal(err)
	}
	kept, ok := cachedTemplate(key)
	if !ok {
		t.Fatalf("no template kept in %s under %s", templateCacheDir(), key)
	}
	path := filepath.Join(t.TempDir(), "kept.db")
	if err := os.WriteFile(path, kept, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := store.CheckCurrent(ctx, db); err != nil {
		t.Fatalf("the kept template is not current: %v", err)
	}
	st, err := store.Status(ctx, db)
	if err != nil || len(st) == 0 {
		t.Fatalf("status of the kept template: %v, %v", st, err)
	}
	for _, m := range st {
		if !m.Applied {
			t.Errorf("the kept template lacks migration %d %s", m.Version, m.Name)
		}
	}
}

// The key changes with any migration's name or text, an added one, and ignores
// test files and other extensions.
func TestTheTemplateKeyFollowsTheMigrations(t *testing.T) {
	t.Parallel()
	sum := func(fsys fstest.MapFS, ext string) string {
		t.Helper()
		h := sha256.New()
		if err := hashFiles(h, fsys, ext); err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	base := fstest.MapFS{"00001_a.sql": {Data: []byte("CREATE TABLE a (id INTEGER);")}, "README": {Data: []byte("x")}}
	same := fstest.MapFS{"00001_a.sql": {Data: []byte("CREATE TABLE a (id INTEGER);")}, "README": {Data: []byte("changed")}}
	if sum(base, ".sql") != sum(same, ".sql") {
		t.Error("a file that is not a migration changed the key")
	}
	for name, other := range map[string]fstest.MapFS{
		"text":    {"00001_a.sql": {Data: []byte("CREATE TABLE a (id BIGINT);")}},
		"name":    {"00002_a.sql": {Data: []byte("CREATE TABLE a (id INTEGER);")}},
		"another": {"00001_a.sql": {Data: []byte("CREATE TABLE a (id INTEGER);")}, "00002_b.sql": {Data: []byte("CREATE TABLE b (id INTEGER);")}},
	} {
		if sum(base, ".sql") == sum(other, ".sql") {
			t.Errorf("a migration's %s changed and the key did not", name)
		}
	}
	src := fstest.MapFS{"store.go": {Data: []byte("package store")}}
	withTest := fstest.MapFS{"store.go": {Data: []byte("package store")}, "store_test.go": {Data: []byte("package store")}}
	if sum(src, ".go") != sum(withTest, ".go") {
		t.Error("a test file changed the key")
	}
	if err := hashFiles(sha256.New(), fstest.MapFS{"README": {}}, ".sql"); err == nil {
		t.Error("no migrations hashed without an error")
	}
}
