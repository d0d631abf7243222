package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/demo"
	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// `serve --demo` on a database that already holds the demo says how to get in: the
// demo logins it has and the command that sets a new password, which works. What a
// restart reads of the demo is that the database has a market and which demo logins
// it has, so the database holds the demo's teams and logins, not the whole seeded
// demo (10 s of CPU under -race, for nothing this test reads); demo's
// TestSeedFillsAnEmptyDatabaseOnceAndPrintsTheLogins checks the message after a
// real seed.
func TestDemoRestartSaysHowToSignIn(t *testing.T) {
	t.Parallel()
	cfg := e2etest.DemoConfig(storetest.MigratedFile(t))
	ctx := context.Background()
	first := cfg
	first.Demo = false
	app := server.NewApp(first, slog.New(slog.NewTextHandler(io.Discard, nil)), storetest.NewClock(time.Time{}).Now)
	if err := app.Open(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range demo.Logins() {
		if u.TeamID != "" {
			if _, err := app.Market.Team(ctx, u.TeamID); err != nil {
				if _, err := app.Market.AddTeam(ctx, exchange.NewTeam{ID: u.TeamID, Budget: 1000 * ledger.Dollar}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := app.Identity.AddUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	app.Close(ctx)
	again := server.NewApp(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), storetest.NewClock(time.Time{}).Now)
	var out bytes.Buffer
	again.DemoOut = &out
	if err := again.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer again.Close(ctx)
	msg := out.String()
	for _, want := range []string{"already has a market", "clearhouse user password --db " + cfg.DB + " --email operator@example.com", "owner@search.example.com"} {
		if !strings.Contains(msg, want) {
			t.Errorf("restart message lacks %q:\n%s", want, msg)
		}
	}
	code, printed, errOut := runCLI(t, "", "user", "password", "--db", cfg.DB, "--email", "operator@example.com")
	if code != 0 {
		t.Fatalf("the printed command fails: %d %s", code, errOut)
	}
	_, pw, _ := strings.Cut(printed, "password: ")
	if _, err := again.Identity.Authenticate(ctx, "operator@example.com", strings.TrimSpace(pw)); err != nil {
		t.Fatalf("the new password does not sign in: %v (output %q)", err, printed)
	}
}
