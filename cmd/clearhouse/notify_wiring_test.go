package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// The binary builds one notification service and passes it on: the market tells
// users through the service the app holds (which the reservations, the pages and the
// e-mail job are given too), not through one of its own.
func TestTheAppPassesOneNotificationServiceToTheMarket(t *testing.T) {
	cfg := e2etest.DemoConfig(storetest.MigratedFile(t))
	cfg.Demo = false
	app := server.NewApp(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), storetest.NewClock(time.Time{}).Now)
	if err := app.OpenServices(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.DB.Close() })
	if app.Notices == nil || app.Market.Notices() != app.Notices {
		t.Fatalf("the app's notification service %p, the market's %p: want one, built by the app", app.Notices, app.Market.Notices())
	}
	if app.Notices.EmailOn() {
		t.Error("e-mail is on without a mail server")
	}
}
