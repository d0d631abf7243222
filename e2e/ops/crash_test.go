package ops

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/internal/racetest"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// skipCrashShort skips a crash test under -short: it kills the real command twenty
// times on a seeded market. Under -race it skips too: what it tests is durability
// across SIGKILL, each close a child process of one command, and under the detector
// the children's settlements took several times longer; make test runs it without.
func skipCrashShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the crash test kills the real command twenty times")
	}
	racetest.SkipUnderRace(t, "kills of a child process test durability, not concurrency")
}

// crashOrders is the size of the auction the crash test settles: large enough
// that settling takes a while to kill, small enough to repeat twenty times.
const crashOrders = 2000

// crashRun is one kill of `clearhouse auction close` on a copy of a seeded market.
type crashRun struct {
	dsn       string
	auctionID int64
}

// killClose starts `clearhouse auction close` on r and kills it with SIGKILL after
// delay (it may have finished by then). It reports whether the child was killed,
// and how long it ran.
func killClose(t *testing.T, r crashRun, delay time.Duration) (bool, time.Duration) {
	t.Helper()
	cmd := exec.Command(e2etest.Binary(t), "auction", "close", fmt.Sprint(r.auctionID), "--db", r.dsn)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("close exited before the kill: %v", err)
		}
		return false, time.Since(start)
	case <-time.After(delay):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return true, time.Since(start)
	}
}

// afterCrash checks the database a killed close left: every invariant holds, the
// auction is settled whole or not at all, and closing again settles it exactly
// once.
func afterCrash(t *testing.T, r crashRun) exchange.AuctionStatus {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, r.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check := func(when string) {
		t.Helper()
		for _, vs := range verifyEverything(t, db) {
			t.Errorf("%s: violation: %v", when, vs)
		}
	}
	check("after the kill")
	m := exchange.NewMarket(db, ledger.New(db, time.Now), time.Now)
	a, err := m.Auction(ctx, r.auctionID)
	if err != nil {
		t.Fatal(err)
	}
	left := a.Status
	var lines int64
	db.Read.Table("settlement_lines").Where("auction_id = ?", r.auctionID).Count(&lines)
	if (left == exchange.AuctionSettled) != (lines == crashOrders) || (left != exchange.AuctionSettled && lines != 0) {
		t.Fatalf("the kill left the auction %s with %d of %d settlement lines", left, lines, crashOrders)
	}
	if out, err := exec.Command(e2etest.Binary(t), "auction", "close", fmt.Sprint(r.auctionID), "--db", r.dsn).CombinedOutput(); err != nil {
		t.Fatalf("closing again: %v: %s", err, out)
	}
	check("after closing again")
	var runs, entries int64
	db.Read.Table("auction_runs").Where("auction_id = ? AND binding", r.auctionID).Count(&runs)
	db.Read.Table("settlement_lines").Where("auction_id = ?", r.auctionID).Count(&lines)
	db.Read.Table("ledger_entries").Where("ref = ?", fmt.Sprintf("auction:%d", r.auctionID)).Count(&entries)
	if runs != 1 || lines != crashOrders || entries != crashOrders {
		t.Fatalf("after closing again: %d binding runs, %d settlement lines, %d entries; want 1, %d, %d", runs, lines, entries, crashOrders, crashOrders)
	}
	return left
}

func verifyEverything(t *testing.T, db *store.DB) []ledger.Violation {
	t.Helper()
	ctx := context.Background()
	l := ledger.New(db, time.Now)
	var all []ledger.Violation
	for _, check := range []func(context.Context) ([]ledger.Violation, error){
		l.Verify, exchange.NewMarket(db, l, time.Now).Verify,
		fleet.NewReservations(db, l, time.Now, fleet.DefaultPlanConfig).Verify,
	} {
		vs, err := check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, vs...)
	}
	return all
}

// seedCrashMarket fills db with a market whose open auction (its window already
// over) holds crashOrders winning orders, and returns the auction's id.
func seedCrashMarket(t *testing.T, db *store.DB) int64 {
	t.Helper()
	big := exchangetest.NewBig(t, db, 50, 10*crashOrders)
	big.Seed(t, db, crashOrders)
	// Move the window into the past, so the real clock of the child finds it over.
	// Clock only: the final round computes before settlement writes anything (up
	// to ten seconds and as long again for its payments), so with it most kills
	// land before the writes this test is about (all 20 of a run left the auction
	// closing), and these tests took 644 s; without it kills land all along the
	// close (open, closing and settled all left).
	past := time.Now().Add(-2 * time.Hour)
	if err := db.Write.Exec("UPDATE auctions SET opens_at = ?, closes_at = ?, params = ?", past, past.Add(time.Hour), `{"final_round":{"off":true}}`).Error; err != nil {
		t.Fatal(err)
	}
	return big.AuctionID
}

// crashes kills `clearhouse auction close` at random moments of its run, n times,
// each on a fresh copy of the seeded market (fresh does the copying), and checks
// each database it leaves.
func crashes(t *testing.T, n int, fresh func(i int) crashRun) {
	// How long an uninterrupted close takes (the faster of two: the first run on a
	// fresh server warms its caches), so kills land all along it. A close that ends
	// before its kill shortens it: the machine got faster (the crash tests run side
	// by side, and beside make test's race pass), and kills must still land inside.
	span := time.Hour
	for i := range 2 {
		killed, took := killClose(t, fresh(-1-i), time.Hour)
		if killed {
			t.Fatal("the uninterrupted close was killed")
		}
		span = min(span, took)
	}
	first := span
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	states := map[exchange.AuctionStatus]int{}
	killed := 0
	for i := range n {
		r := fresh(i)
		wasKilled, took := killClose(t, r, time.Duration(rng.Int64N(int64(span))))
		if wasKilled {
			killed++
		} else {
			span = min(span, took)
		}
		states[afterCrash(t, r)]++
	}
	t.Logf("an uninterrupted close took %v (%v at the end); %d of %d runs killed; left: %v",
		first.Round(time.Millisecond), span.Round(time.Millisecond), killed, n, states)
	if killed < n/2 || states[exchange.AuctionSettled] == n {
		t.Fatalf("the kills did not land inside settlement: %d killed, left %v", killed, states)
	}
}

// Killing `clearhouse auction close` with SIGKILL at random moments, 20 times on
// SQLite, leaves no partial settlement: every invariant holds after each kill, and
// closing again settles the auction exactly once.
func TestKilledSettlementLeavesNothingPartialOnSQLite(t *testing.T) {
	skipCrashShort(t)
	t.Parallel() // beside the PostgreSQL half, which mostly waits on its server
	dir := t.TempDir()
	seed := storetest.MigratedFile(t)
	db, err := store.Open(context.Background(), seed)
	if err != nil {
		t.Fatal(err)
	}
	id := seedCrashMarket(t, db)
	if err := db.Write.Exec("PRAGMA wal_checkpoint(TRUNCATE)").Error; err != nil {
		t.Fatal(err)
	}
	db.Close()
	blob, err := os.ReadFile(seed)
	if err != nil {
		t.Fatal(err)
	}
	crashes(t, 20, func(i int) crashRun {
		path := filepath.Join(dir, fmt.Sprintf("run%d.db", i))
		if err := os.WriteFile(path, blob, 0o600); err != nil {
			t.Fatal(err)
		}
		return crashRun{dsn: path, auctionID: id}
	})
}

// The same 20 kills on PostgreSQL, each on a database copied from a seeded
// template.
func TestKilledSettlementLeavesNothingPartialOnPostgres(t *testing.T) {
	skipCrashShort(t)
	t.Parallel()
	base := storetest.PostgresURL(t)
	if base == "" {
		t.Skip(storetest.PostgresEnv + " is not set: the PostgreSQL half of the crash test needs a server")
	}
	ctx := context.Background()
	admin, err := store.Open(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	prefix := fmt.Sprintf("crash_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	dsn := func(name string) string {
		u, _ := url.Parse(base)
		u.Path = "/" + name
		return u.String()
	}
	var made []string
	create := func(name, template string) {
		q := "CREATE DATABASE " + name
		if template != "" {
			q += " TEMPLATE " + template
		}
		if err := admin.Write.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
		made = append(made, name)
	}
	t.Cleanup(func() {
		for _, name := range made {
			admin.Write.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		}
	})
	seed := prefix + "_seed"
	create(seed, "")
	db, err := store.Open(ctx, dsn(seed))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	id := seedCrashMarket(t, db)
	db.Close()
	crashes(t, 20, func(i int) crashRun {
		name := fmt.Sprintf("%s_%d", prefix, i+2) // i is -2 and -1 for the uninterrupted runs
		create(name, seed)
		return crashRun{dsn: dsn(name), auctionID: id}
	})
}
