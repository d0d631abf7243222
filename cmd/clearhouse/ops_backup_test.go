package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// `clearhouse backup` copies the live SQLite database while orders keep coming and
// an auction settles; `clearhouse restore` puts the copy in place and verify is
// clean; every order confirmed before the backup began is in it.
func TestBackupDuringASettlementUnderOrderTraffic(t *testing.T) {
	m := newOpsMarket(t, nil)
	var mu sync.Mutex
	var confirmed []int64
	var stopped atomic.Bool
	var traffic sync.WaitGroup
	traffic.Add(1)
	go func() { // order traffic until told to stop; refusals once the auction closes are expected
		defer traffic.Done()
		limit := ledger.Dollar / 2
		for {
			if stopped.Load() {
				return
			}
			o, err := m.app.Market.PlaceOrder(context.Background(), m.member, exchange.OrderSpec{Team: "search",
				Bundles: []exchange.Bundle{{"us-east/cpu": 1}}, Limit: &limit})
			if err == nil {
				mu.Lock()
				confirmed = append(confirmed, o.ID)
				mu.Unlock()
			}
		}
	}()
	for {
		mu.Lock()
		n := len(confirmed)
		mu.Unlock()
		if n >= 20 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	settled := make(chan error, 1)
	go func() { _, err := m.app.Market.Close(context.Background(), m.auction.ID); settled <- err }()
	mu.Lock()
	before := append([]int64(nil), confirmed...)
	mu.Unlock()
	backup := filepath.Join(t.TempDir(), "backup.db")
	code, out, errOut := runCLI(t, "", "backup", "--db", m.dsn, backup)
	stopped.Store(true)
	traffic.Wait()
	if err := <-settled; err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("backup: %d %q %q", code, out, errOut)
	}

	restored := filepath.Join(t.TempDir(), "restored.db")
	if code, out, errOut := runCLI(t, "", "restore", "--db", restored, backup); code != 0 || !strings.Contains(out, "every invariant holds") {
		t.Fatalf("restore: %d %q %q", code, out, errOut)
	}
	db, err := store.Open(context.Background(), restored)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []int64
	if err := db.Read.Raw("SELECT id FROM orders").Scan(&ids).Error; err != nil {
		t.Fatal(err)
	}
	have := map[int64]bool{}
	for _, id := range ids {
		have[id] = true
	}
	for _, id := range before {
		if !have[id] {
			t.Fatalf("order %d, confirmed before the backup began, is not in it (%d of %d orders kept)", id, len(ids), len(confirmed))
		}
	}
	if code, out, _ := runCLI(t, "", "verify", "--db", restored); code != 0 {
		t.Fatalf("verify on the restored database: %d %s", code, out)
	}
	t.Logf("%d orders confirmed before the backup, %d in it, %d in all", len(before), len(ids), len(confirmed))
}

// restore refuses, changing nothing, a file that is not a Clearhouse database, a
// backup from a newer schema, and an existing database without --force.
func TestRestoreRefusesWhatItCannotTrust(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "live.db")
	if err := os.WriteFile(target, []byte("the live database"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("not a database at all, just some words"), 0o600)
	empty := filepath.Join(dir, "empty.db")
	if db, err := store.Open(context.Background(), empty); err == nil {
		db.Write.Exec("CREATE TABLE things (id INTEGER)")
		db.Close()
	}
	db := storetest.New(t)
	migrateAsNewerBinary(t, db, newestMigration(t)+1)
	newer := filepath.Join(dir, "newer.db")
	if err := store.Backup(context.Background(), db, newer); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.db")
	if err := store.Backup(context.Background(), storetest.New(t), good); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		file, want string
		force      bool
	}{
		"text":     {text, "refusing", true},
		"empty":    {empty, "not a Clearhouse database", true},
		"newer":    {newer, "newer than this binary", true},
		"no force": {good, "--force", false},
	} {
		args := []string{"restore", "--db", target, c.file}
		if c.force {
			args = append(args, "--force")
		}
		code, _, errOut := runCLI(t, "", args...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: %d %q, want 1 naming %q", name, code, errOut, c.want)
		}
		if b, _ := os.ReadFile(target); string(b) != "the live database" {
			t.Fatalf("%s: the live database changed", name)
		}
	}
	if code, out, errOut := runCLI(t, "", "restore", "--db", target, "--force", good); code != 0 {
		t.Fatalf("restore --force of a good backup: %d %q %q", code, out, errOut)
	}
}

// The PostgreSQL procedure of docs/operating.md: pg_dump --format=custom of a live
// database, pg_restore into an empty one, verify clean and the data there. Runs
// when CLEARHOUSE_TEST_POSTGRES is set and pg_dump is installed; pg_dump's major
// version must be at least the server's.
func TestPostgresDumpAndRestoreProcedure(t *testing.T) {
	base := storetest.PostgresURL(t)
	if base == "" {
		t.Skip(storetest.PostgresEnv + " is not set")
	}
	for _, tool := range []string{"pg_dump", "pg_restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (postgresql-client): %v", tool, err)
		}
	}
	source, target := freshDatabase(t, base), freshDatabase(t, base)
	m := newOpsMarket(t, func(c *server.Config) { c.DB = source })
	m.bid(10, 100*ledger.Dollar)
	if _, err := m.app.Market.Close(context.Background(), m.auction.ID); err != nil {
		t.Fatal(err)
	}
	dumpVersion, _ := exec.Command("pg_dump", "--version").Output()
	var serverVersion string
	m.app.DB.Read.Raw("SHOW server_version").Scan(&serverVersion)
	if major(string(dumpVersion)) < major(serverVersion) {
		t.Fatalf("pg_dump %q is older than the server %q", dumpVersion, serverVersion)
	}
	dump := filepath.Join(t.TempDir(), "clearhouse.dump")
	if out, err := exec.Command("pg_dump", "--format=custom", "--no-owner", "--file", dump, "--dbname", source).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v %s", err, out)
	}
	if out, err := exec.Command("pg_restore", "--no-owner", "--exit-on-error", "--dbname", target, dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v %s", err, out)
	}
	if code, out, errOut := runCLI(t, "", "verify", "--db", target); code != 0 {
		t.Fatalf("verify after pg_restore: %d %s %s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "", "migrate", "--db", target); code != 0 || !strings.Contains(out, "up to date") {
		t.Fatalf("migrate after pg_restore: %d %s", code, out)
	}
	db, err := store.Open(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var status string
	db.Read.Raw("SELECT status FROM auctions WHERE id = ?", m.auction.ID).Scan(&status)
	if status != string(exchange.AuctionSettled) {
		t.Fatalf("restored auction %q", status)
	}
}

// freshDatabase creates an empty database on the server base names and returns
// its URL; dropped when the test ends.
func freshDatabase(t *testing.T, base string) string {
	t.Helper()
	admin, err := store.Open(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("ops_%d", time.Now().UnixNano())
	if err := admin.Write.Exec("CREATE DATABASE " + name).Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Write.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); admin.Close() })
	u, _ := url.Parse(base)
	u.Path = "/" + name
	return u.String()
}

// major is the first number in a version string ("pg_dump (PostgreSQL) 15.20" is 15).
func major(s string) int {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		n, _ := strconv.Atoi(f)
		return n
	}
	return 0
}
