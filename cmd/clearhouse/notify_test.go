package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/mailer/mailertest"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// TestNotifySendSendsTheOutboxOnceFromTheCommandLine: the email job as a verb sends
// what is due, and a second run sends nothing.
func TestNotifySendSendsTheOutboxOnceFromTheCommandLine(t *testing.T) {
	path := storetest.MigratedFile(t)
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	mk := exchangetest.NewAuctionMarket(t, db)
	mk.M.Notices().UseEmail(true)
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

// TestEmailOptOutThroughTheSMTPServer: through a real SMTP exchange, a member who
// turned email off gets the settlement in the app and no email; their owner gets
// it by email with the link to the setting; a member whose order an owner
// rejected is told by email too.
func TestEmailOptOutThroughTheSMTPServer(t *testing.T) {
	path := storetest.MigratedFile(t)
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	mk := exchangetest.NewAuctionMarket(t, db)
	mk.M.Notices().UseEmail(true)
	if err := mk.M.Notices().SetEmailNotifications(ctx, mk.Users["member@search"].ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: exchangetest.Money(500), Bundles: []exchange.Bundle{{"us-east/cpu": 10}}}); err != nil {
		t.Fatal(err)
	}
	waiting, err := mk.Order("member@ml", exchange.OrderSpec{Team: "ml", Limit: exchangetest.Money(400), Bundles: []exchange.Bundle{{"eu-west/cpu": 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mk.M.DecideOrder(ctx, mk.Users["owner@ml"], waiting.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
		t.Fatal(err)
	}
	if ns, err := mk.M.Notices().Notifications(ctx, mk.Users["member@search"].ID, 10); err != nil || len(ns) != 1 {
		t.Fatalf("the opted-out member has %d notifications in the app, %v; want the settlement", len(ns), err)
	}
	db.Close()

	srv := mailertest.Start(t)
	code, out, errOut := runCLI(t, "", "notify", "send", "--db", path, "--smtp-addr", srv.Addr, "--smtp-from", "market@example.com", "--public-url", "https://market.example.com/")
	if code != 0 {
		t.Fatalf("notify send: code %d, %q %q", code, out, errOut)
	}
	to := map[string]string{}
	for _, m := range srv.Messages() {
		to[strings.Join(m.To, ",")] = m.Data
	}
	if _, ok := to[mk.Users["member@search"].Email]; ok {
		t.Fatal("an email went to a member who turned email off")
	}
	owner := to[mk.Users["owner@search"].Email]
	if !strings.Contains(owner, "settled") || !strings.Contains(owner, "To stop these emails: https://market.example.com/notifications#email-settings") {
		t.Fatalf("the owner's email:\n%s", owner)
	}
	if m := to[mk.Users["member@ml"].Email]; !strings.Contains(m, fmt.Sprintf("Order #%d rejected", waiting.ID)) || !strings.Contains(m, "#email-settings") {
		t.Fatalf("ml's member's email:\n%s\nall: %v", m, to)
	}
}
