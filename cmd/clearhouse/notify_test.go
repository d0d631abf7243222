package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/mailer/mailertest"
	"github.com/clearhouse/clearhouse/store"
)

// TestNotifySendSendsTheOutboxOnceFromTheCommandLine: the email job as a verb sends
// what is due, and a second run sends nothing.
func TestNotifySendSendsTheOutboxOnceFromTheCommandLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.db")
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	mk := exchangetest.NewAuctionMarket(t, db)
	mk.M.UseEmail(true)
	if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: exchangetest.Money(500), Bundles: []exchange.Bundle{{"us-east/cpu": 10}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
		t.Fatal(err)
	}
	db.Close()

	srv := mailertest.Start(t)
	if code, _, errOut := runCLI(t, "", "notify", "send", "--db", path); code != 2 || !strings.Contains(errOut, "--smtp-addr") {
		t.Fatalf("without a mail server: code %d, %q", code, errOut)
	}
	send := func() string {
		t.Helper()
		code, out, errOut := runCLI(t, "", "notify", "send", "--db", path, "--smtp-addr", srv.Addr, "--smtp-from", "market@example.com")
		if code != 0 {
			t.Fatalf("notify send: code %d, %q", code, errOut)
		}
		return out
	}
	if out := send(); !strings.Contains(out, "2 emails sent") {
		t.Fatalf("first run: %q, want the member's and the owner's", out)
	}
	if out := send(); !strings.Contains(out, "0 emails sent") {
		t.Fatalf("second run: %q, want nothing sent twice", out)
	}
	if n := len(srv.Messages()); n != 2 {
		t.Fatalf("%d messages delivered, want 2", n)
	}
}
