package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// `serve --demo` on a database that already holds the demo says how to get in: the
// demo logins it has and the command that sets a new password, which works.
func TestDemoRestartSaysHowToSignIn(t *testing.T) {
	t.Parallel()
	app, _ := e2etest.StartDemo(t)
	cfg := app.Config()
	ctx := context.Background()
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
