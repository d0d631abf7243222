// Package e2etest is what the end-to-end test packages (e2e/...) share: the
// production wiring (server.App) on a fresh SQLite file or on a copy of the seeded
// demo, one headless Chromium per test binary, a small market with an agent token,
// the invariants checked, and the clearhouse binary built once.
//
// Each test binary (package) has its own Chromium and demo template: its TestMain
// calls Main, which sets bcrypt's minimum cost and stops them after the tests.
package e2etest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// Main runs the package's tests, or the agent when the test binary was started as one
// (StartAgent). Passwords the tests hash (the demo's logins,
// sign-ups) are at bcrypt's minimum cost: at the production cost each hash and each
// sign-in took seconds under the race detector. Sign-in compares at the cost stored
// in the hash, so nothing else changes. After the tests it stops the shared
// Chromium and removes the demo template and the built binary, whichever the tests
// started.
func Main(m *testing.M) {
	runAgentChild()
	server.PasswordCost = bcrypt.MinCost
	code := m.Run()
	closeBrowser()
	removeDemoTemplate()
	removeBinary()
	os.Exit(code)
}

// Quiet is a logger that drops everything.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// StartApp runs the production wiring on a fresh migrated SQLite file
// (storetest.MigratedFile: its start-up migration finds nothing pending) and a free
// port, and closes it when the test ends.
func StartApp(t *testing.T, clock *storetest.Clock) *server.App {
	t.Helper()
	cfg := server.Config{Addr: "127.0.0.1:0", DB: storetest.MigratedFile(t), Migrate: true, LoginRate: 100, Tick: time.Hour, PreviewEvery: time.Minute}
	return Open(t, cfg, clock)
}

// Open runs the production wiring with cfg on clock and closes it when the test ends.
func Open(t *testing.T, cfg server.Config, clock *storetest.Clock) *server.App {
	t.Helper()
	app := server.NewApp(cfg, Quiet(), clock.Now)
	if err := app.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		app.Close(ctx)
	})
	return app
}

// Verify fails the test when any invariant `clearhouse verify` checks is broken on
// the database dsn (server.Verify, which that command runs).
func Verify(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	found, err := server.Verify(ctx, db)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	for _, v := range found {
		t.Errorf("verify: %s", v)
	}
}

// binary is the clearhouse binary Binary built, once per test binary.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

// BinaryEnv names the clearhouse binary make test builds once for every package and
// both passes (a link of the binary costs about 8 s of CPU).
const BinaryEnv = "CLEARHOUSE_TEST_BINARY"

// Binary builds the clearhouse binary (go build, without -race, as it ships) once per
// test binary and returns its path, for tests that run the real command in a child
// process: the crash test kills it, the replica test runs three servers. Where
// BinaryEnv names a file (make test builds it from the tree before the tests), it
// returns that instead.
func Binary(t *testing.T) string {
	t.Helper()
	b := &binary
	b.once.Do(func() {
		if p := os.Getenv(BinaryEnv); p != "" {
			if _, err := os.Stat(p); err != nil {
				b.err = fmt.Errorf("%s: %w", BinaryEnv, err)
			}
			b.path = p
			return
		}
		if b.dir, b.err = os.MkdirTemp("", "clearhouse-bin-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "clearhouse")
		b.out, b.err = exec.Command("go", "build", "-o", b.path, "github.com/clearhouse/clearhouse/cmd/clearhouse").CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("go build ./cmd/clearhouse: %v\n%s", b.err, b.out)
	}
	return b.path
}

func removeBinary() {
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
}
