package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// Operators set the market's limits on their page; a bad value is named and
// nothing changes.
func TestOperatorsSetTheLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("op@x.io", identity.RoleOperator, "")
	b := f.browser()
	b.login("op@x.io")
	tok := b.csrf("/operate")
	res, doc := b.post("/operate/limits", url.Values{"csrf_token": {tok}, "open_orders": {"0"}, "bundles": {"8"}, "pools": {"4"}})
	if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("[data-testid=error-open_orders]").Length() != 1 {
		t.Fatalf("a zero limit: %d", res.StatusCode)
	}
	if l, _ := f.market.Limits(context.Background()); l != exchange.DefaultLimits {
		t.Fatalf("a refused form changed the limits to %+v", l)
	}
	res, _ = b.post("/operate/limits", url.Values{"csrf_token": {tok}, "open_orders": {"3"}, "bundles": {"8"}, "pools": {"4"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving limits: %d", res.StatusCode)
	}
	if l, _ := f.market.Limits(context.Background()); l != (exchange.Limits{OpenOrdersPerTeam: 3, BundlesPerOrder: 8, PoolsPerBundle: 4}) {
		t.Fatalf("limits %+v", l)
	}
	_, doc = b.get("/operate")
	if v, _ := doc.Find("[data-testid=field-open_orders]").Attr("value"); v != "3" {
		t.Fatalf("the form shows %q", v)
	}
}

// Operators cancel an auction that has not opened, and only such an auction.
func TestOperatorsCancelAScheduledAuction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("op@x.io", identity.RoleOperator, "")
	later, err := f.market.ScheduleAuction(context.Background(), f.clock.Now().Add(24*time.Hour), f.clock.Now().Add(25*time.Hour), auction.DefaultParams)
	if err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	b.login("op@x.io")
	_, doc := b.get("/operate")
	if doc.Find(fmt.Sprintf("[data-testid=auction-%d] [data-testid=cancel]", later.ID)).Length() != 1 ||
		doc.Find("[data-testid=auction-1] [data-testid=cancel]").Length() != 0 {
		t.Fatal("cancel is offered for the wrong auctions")
	}
	tok := b.csrf("/operate")
	res, _ := b.post("/operate/auctions/1/cancel", url.Values{"csrf_token": {tok}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancelling the open auction: %d", res.StatusCode)
	}
	if _, err := f.market.Auction(context.Background(), 1); err != nil {
		t.Fatal("the open auction was cancelled")
	}
	res, _ = b.post(fmt.Sprintf("/operate/auctions/%d/cancel", later.ID), url.Values{"csrf_token": {tok}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancelling: %d", res.StatusCode)
	}
	if _, err := f.market.Auction(context.Background(), later.ID); err == nil {
		t.Fatal("the scheduled auction is still there")
	}
}

// A team's orders page lists 50 orders at a time, newest first, with a link to
// the older ones; the API pages with limit, before and next.
func TestOrderListsArePaginated(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	u := f.user("m@x.io", identity.RoleMember, "search")
	limit := 1 * ledger.Dollar
	for range 120 {
		if _, err := f.market.PlaceOrder(context.Background(), u, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	b := f.browser()
	b.login("m@x.io")
	seen := map[string]bool{}
	path := "/orders"
	for pages := 0; path != ""; pages++ {
		_, doc := b.get(path)
		rows := doc.Find("[data-testid^=order-]")
		if pages < 2 && rows.Length() != 50 || pages == 2 && rows.Length() != 20 || pages > 2 {
			t.Fatalf("page %d has %d orders", pages, rows.Length())
		}
		rows.Each(func(_ int, r *goquery.Selection) {
			id, _ := r.Attr("data-testid")
			if seen[id] {
				t.Fatalf("%s listed twice", id)
			}
			seen[id] = true
		})
		path, _ = doc.Find("[data-testid=pager-next]").Attr("href")
	}
	if len(seen) != 120 {
		t.Fatalf("%d orders listed in all", len(seen))
	}
	tok := f.token(u)
	code, body := f.api(tok, http.MethodGet, "/api/v1/orders?limit=100", "")
	next, _ := body["next"].(string)
	if code != http.StatusOK || len(body["orders"].([]any)) != 100 || !strings.Contains(next, "before=") {
		t.Fatalf("API first page: %d, next %q", code, next)
	}
	code, body = f.api(tok, http.MethodGet, next, "")
	if code != http.StatusOK || len(body["orders"].([]any)) != 20 || body["next"] != nil {
		t.Fatalf("API second page: %d %v", code, body["next"])
	}
	if code, _ := f.api(tok, http.MethodGet, "/api/v1/orders?limit=5000", ""); code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
		t.Fatalf("a limit above the most: %d", code)
	}
}
