package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// serveOn opens a server on the new SQLite file dsn, as `clearhouse serve` does,
// after writing a migrated empty database there (storetest.WriteMigrated: the
// server's migration then finds nothing pending).
func serveOn(t *testing.T, dsn string) *server.App {
	t.Helper()
	if err := storetest.WriteMigrated(dsn); err != nil {
		t.Fatal(err)
	}
	app := server.NewApp(server.Config{Addr: "127.0.0.1:0", DB: dsn, Migrate: true, LoginRate: 100, Tick: time.Hour, PreviewEvery: time.Minute}, discardLog(), time.Now)
	if err := app.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return app
}

func closeApp(t *testing.T, app *server.App) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := app.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// teamsIn lists the teams of the SQLite database at path.
func teamsIn(t *testing.T, path string) []string {
	t.Helper()
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []string
	if err := db.Read.Table("teams").Order("id").Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	return ids
}

// A backup whose ledger is broken is refused before anything is replaced: restore
// --force exits 1 and the live database is as it was, with no copy left behind. A
// good backup then replaces it, and the database it replaced is kept beside it,
// whole (its WAL folded in).
func TestRestoreVerifiesTheBackupBeforeReplacingTheDatabase(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	app := serveOn(t, live)
	ctx := context.Background()
	if _, err := app.Market.AddTeam(ctx, exchange.NewTeam{ID: "search", Budget: 1000 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	good, broken := filepath.Join(dir, "good.db"), filepath.Join(dir, "broken.db")
	for _, b := range []string{good, broken} {
		if code, out, errOut := runCLI(t, "", "backup", "--db", live, b); code != 0 {
			t.Fatalf("backup: %d %q %q", code, out, errOut)
		}
	}
	bdb, err := store.Open(ctx, broken)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Write.Exec("UPDATE ledger_accounts SET balance = balance + 7 WHERE id = 'treasury'").Error; err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	if _, err := app.Market.AddTeam(ctx, exchange.NewTeam{ID: "ads"}); err != nil { // only in the live database (its WAL)
		t.Fatal(err)
	}
	closeApp(t, app)

	code, out, errOut := runCLI(t, "", "restore", "--db", live, "--force", broken)
	if code != 1 || !strings.Contains(errOut, "invariants are broken") || !strings.Contains(errOut, "was not touched") || !strings.Contains(out, "violation:") {
		t.Fatalf("restore --force of a broken backup: %d %q %q", code, out, errOut)
	}
	if got := teamsIn(t, live); strings.Join(got, ",") != "ads,search" {
		t.Fatalf("the live database after the refused restore: teams %v", got)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "restoring") || strings.Contains(e.Name(), "before-restore") {
			t.Fatalf("the refused restore left %s", e.Name())
		}
	}

	code, out, errOut = runCLI(t, "", "restore", "--db", live, "--force", good)
	if code != 0 || !strings.Contains(out, "every invariant holds") || !strings.Contains(out, "kept as") {
		t.Fatalf("restore --force of a good backup: %d %q %q", code, out, errOut)
	}
	if got := teamsIn(t, live); strings.Join(got, ",") != "search" {
		t.Fatalf("the restored database: teams %v", got)
	}
	asides, _ := filepath.Glob(live + ".before-restore-*")
	if len(asides) != 1 {
		t.Fatalf("kept aside: %v", asides)
	}
	if got := teamsIn(t, asides[0]); strings.Join(got, ",") != "ads,search" {
		t.Fatalf("the database kept aside: teams %v", got)
	}
}

// Restore refuses while a server runs on the database, saying to stop it, and
// changes nothing: the server goes on writing to the file that stays in place. A
// server does not start while a restore holds the database. Once the server has
// stopped, the restore goes through.
func TestRestoreRefusesUnderARunningServer(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	app := serveOn(t, live)
	ctx := context.Background()
	good := filepath.Join(dir, "good.db")
	if code, out, errOut := runCLI(t, "", "backup", "--db", live, good); code != 0 {
		t.Fatalf("backup: %d %q %q", code, out, errOut)
	}
	code, out, errOut := runCLI(t, "", "restore", "--db", live, "--force", good)
	if code != 1 || !strings.Contains(errOut, "in use") || !strings.Contains(errOut, "Stop the server first") {
		t.Fatalf("restore under a running server: %d %q %q", code, out, errOut)
	}
	if _, err := app.Market.AddTeam(ctx, exchange.NewTeam{ID: "search"}); err != nil { // confirmed after the refusal
		t.Fatal(err)
	}
	closeApp(t, app)
	if got := teamsIn(t, live); strings.Join(got, ",") != "search" {
		t.Fatalf("what the server confirmed after the refused restore: teams %v", got)
	}

	release, err := store.LockForRestore(live)
	if err != nil {
		t.Fatal(err)
	}
	if db, err := server.OpenMigrated(ctx, live, true, discardLog()); err == nil || !strings.Contains(err.Error(), "restore") {
		if db != nil {
			db.Close()
		}
		t.Fatalf("a server starting during a restore: %v", err)
	}
	release()

	if code, out, errOut := runCLI(t, "", "restore", "--db", live, "--force", good); code != 0 {
		t.Fatalf("restore once the server stopped: %d %q %q", code, out, errOut)
	}
	if got := teamsIn(t, live); len(got) != 0 {
		t.Fatalf("the restored database: teams %v", got)
	}
}
