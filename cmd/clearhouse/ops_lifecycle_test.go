package main

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/migrations"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// newestMigration is the newest migration version this binary embeds.
func newestMigration(t *testing.T) int64 {
	t.Helper()
	return slices.Max(migrationVersions(t))
}

// migrationVersions is the version of every embedded migration (numbers may skip).
func migrationVersions(t *testing.T) []int64 {
	t.Helper()
	fsys, err := migrations.FS(store.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := fsys.(interface {
		ReadDir(string) ([]os.DirEntry, error)
	}).ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var versions []int64
	for _, e := range entries {
		if v, err := strconv.ParseInt(strings.SplitN(e.Name(), "_", 2)[0], 10, 64); err == nil {
			versions = append(versions, v)
		}
	}
	return versions
}

// migrateAsNewerBinary records a migration this binary does not know, as a newer
// release that migrated the database would have.
func migrateAsNewerBinary(t *testing.T, db *store.DB, version int64) {
	t.Helper()
	if err := db.Write.Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, ?)", version, true).Error; err != nil {
		t.Fatal(err)
	}
}

// clearhouse health answers 0 while the server is ready and 1, with the reason,
// when its schema is newer than the binary's; --live still answers 0.
func TestHealthVerbFollowsReadiness(t *testing.T) {
	m := newOpsMarket(t, nil)
	addr := strings.TrimPrefix(m.app.Server.URL(), "http://")
	if code, out, errOut := runCLI(t, "", "health", "--addr", addr); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Fatalf("health on a ready server: %d %q %q", code, out, errOut)
	}
	newer := newestMigration(t) + 1
	migrateAsNewerBinary(t, m.app.DB, newer)
	code, _, errOut := runCLI(t, "", "health", "--addr", addr)
	if code != 1 || !strings.Contains(errOut, "503") || !strings.Contains(errOut, strconv.FormatInt(newer, 10)) {
		t.Fatalf("health on a newer schema: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "health", "--addr", addr, "--live"); code != 0 {
		t.Fatalf("health --live: %d %q", code, errOut)
	}
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	if u, err := probeURL("0.0.0.0:"+port, false); err != nil || u != "http://127.0.0.1:"+port+"/readyz" {
		t.Fatalf("probeURL(0.0.0.0): %q %v", u, err)
	}
}

// A server refuses, whatever --migrate says, a database a newer binary migrated,
// naming both versions; on PostgreSQL too when CLEARHOUSE_TEST_POSTGRES is set.
func TestStartRefusesASchemaNewerThanTheBinary(t *testing.T) {
	newest := newestMigration(t)
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		migrateAsNewerBinary(t, db, newest+1)
		dsn := filepath.Join(t.TempDir(), "x.db")
		if db.Dialect == store.SQLite {
			if err := store.Backup(context.Background(), db, dsn); err != nil {
				t.Fatal(err)
			}
		} else {
			dsn = pgDSNOf(t, db)
		}
		for _, migrate := range []bool{true, false} {
			_, err := server.OpenMigrated(context.Background(), dsn, migrate, discardLog())
			want := []string{strconv.FormatInt(newest+1, 10), strconv.FormatInt(newest, 10), "newer than this binary"}
			for _, w := range want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("--migrate=%v on a newer schema: %v (want it to name %q)", migrate, err, w)
				}
			}
		}
	})
}

// Three replicas starting at once on one fresh PostgreSQL database migrate it once:
// every start succeeds and each migration is recorded once.
func TestThreeReplicasOnPostgresMigrateOnce(t *testing.T) {
	base := storetest.PostgresURL(t)
	if base == "" {
		t.Skip(storetest.PostgresEnv + " is not set")
	}
	dsn := freshPostgresSchema(t, base)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	dbs := make([]*store.DB, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dbs[i], errs[i] = server.OpenMigrated(context.Background(), dsn, true, discardLog())
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	var dup, n int64
	dbs[0].Read.Raw("SELECT COUNT(*) FROM (SELECT version_id FROM goose_db_version GROUP BY version_id HAVING COUNT(*) > 1) d").Scan(&dup)
	dbs[0].Read.Raw("SELECT COUNT(*) FROM goose_db_version WHERE version_id > 0").Scan(&n)
	if want := int64(len(migrationVersions(t))); dup != 0 || n != want {
		t.Fatalf("%d versions recorded twice, %d recorded; want 0 and %d", dup, n, want)
	}
}

// A second interrupt exits at once with 130; the first only starts the shutdown.
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	again := make(chan os.Signal, 1)
	exited := make(chan int, 1)
	var stderr syncBuffer
	go exitOnSecondSignal(ctx, cancel, again, &stderr, func(code int) { exited <- code })
	select {
	case <-exited:
		t.Fatal("exited before any interrupt")
	case <-time.After(20 * time.Millisecond):
	}
	cancel() // the first interrupt
	select {
	case <-exited:
		t.Fatal("exited at the first interrupt")
	case <-time.After(20 * time.Millisecond):
	}
	again <- os.Interrupt
	select {
	case code := <-exited:
		if code != 130 || !strings.Contains(stderr.String(), "second interrupt") {
			t.Fatalf("exit %d, %q", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit at the second interrupt")
	}
}

// freshPostgresSchema returns base with search_path set to a new, empty schema,
// dropped when the test ends.
func freshPostgresSchema(t *testing.T, base string) string {
	t.Helper()
	admin, err := store.Open(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	schema := "ops_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := admin.Write.Exec("CREATE SCHEMA " + schema).Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Write.Exec("DROP SCHEMA " + schema + " CASCADE"); admin.Close() })
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// pgDSNOf is the URL of the PostgreSQL schema storetest made db in.
func pgDSNOf(t *testing.T, db *store.DB) string {
	t.Helper()
	var schema string
	if err := db.Read.Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(os.Getenv(storetest.PostgresEnv))
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
