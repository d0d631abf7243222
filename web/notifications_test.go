package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
)

func TestNotificationsBadgePageAndMarkRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.tradeMarket()
	ctx := context.Background()
	_, doc := b.get("/notifications")
	if doc.Find("[data-testid=no-notifications]").Length() != 1 || doc.Find("[data-testid=unread]").Length() != 0 {
		t.Fatal("a new user has notifications")
	}
	limit := ledger.Money(100 * ledger.Dollar)
	u, err := f.id.UserByEmail(ctx, "member@x.io")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.PlaceOrder(ctx, u, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"eu-west/cpu": 5}}}); err != nil {
		t.Fatal(err)
	}
	a, _, _ := f.market.CurrentAuction(ctx)
	if _, err := f.market.Close(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	_, doc = b.get("/team")
	if s := doc.Find("[data-testid=unread]").Text(); s != "1" {
		t.Fatalf("unread badge %q, want 1", s)
	}
	_, doc = b.get("/notifications")
	items := doc.Find("[data-testid=notifications] li")
	if items.Length() != 1 || !strings.Contains(items.Text(), "1 of 1 orders won") || !strings.Contains(items.Text(), "eu-west/cpu +5") {
		t.Fatalf("notifications %q", items.Text())
	}
	upTo, _ := doc.Find(`input[name=up_to]`).Attr("value")
	if res, _ := b.post("/notifications/read", url.Values{"up_to": {upTo}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("marking read without a CSRF token: %d", res.StatusCode)
	}
	tok := b.csrf("/notifications")
	if res, _ := b.post("/notifications/read", url.Values{"csrf_token": {tok}, "up_to": {"x"}}); res.StatusCode != http.StatusBadRequest && res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a bad up_to: %d", res.StatusCode)
	}
	if res, _ := b.post("/notifications/read", url.Values{"csrf_token": {tok}, "up_to": {upTo}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("marking read: %d", res.StatusCode)
	}
	_, doc = b.get("/notifications")
	if doc.Find("[data-testid=unread]").Length() != 0 || doc.Find("[data-testid=mark-read]").Length() != 0 {
		t.Fatal("still unread after marking read")
	}
}

// A user turns notification emails off and on again from the notifications page;
// the form needs its CSRF token and a known choice.
func TestEmailSettingOnTheNotificationsPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.tradeMarket()
	_, doc := b.get("/notifications")
	if s := doc.Find("[data-testid=email-state]").Text(); !strings.Contains(s, "member@x.io") {
		t.Fatalf("email setting %q, want emails on to the user's address", s)
	}
	if res, _ := b.post("/notifications/email", url.Values{"email": {"off"}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("without a CSRF token: %d", res.StatusCode)
	}
	tok := b.csrf("/notifications")
	if res, _ := b.post("/notifications/email", url.Values{"csrf_token": {tok}, "email": {"maybe"}}); res.StatusCode != http.StatusBadRequest && res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("an unknown choice: %d", res.StatusCode)
	}
	u, err := f.id.UserByEmail(context.Background(), "member@x.io")
	if err != nil || u.EmailOffAt != nil {
		t.Fatalf("a bad request changed the setting: %+v %v", u.EmailOffAt, err)
	}
	if res, _ := b.post("/notifications/email", url.Values{"csrf_token": {tok}, "email": {"off"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("turning email off: %d", res.StatusCode)
	}
	_, doc = b.get("/notifications")
	if s := doc.Find("[data-testid=email-state]").Text(); !strings.Contains(s, "Emails are off") || !strings.Contains(doc.Find("[data-testid=flash]").Text(), "Emails are off") {
		t.Fatalf("after turning off: %q", s)
	}
	if u, _ := f.id.UserByEmail(context.Background(), "member@x.io"); u.EmailOffAt == nil {
		t.Fatal("email is still on")
	}
	if res, _ := b.post("/notifications/email", url.Values{"csrf_token": {tok}, "email": {"on"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("turning email on: %d", res.StatusCode)
	}
	if u, _ := f.id.UserByEmail(context.Background(), "member@x.io"); u.EmailOffAt != nil {
		t.Fatal("email is still off")
	}
}
