package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// The bid form says first when no auction takes bids; it refuses a quantity no
// pool could ever supply and a limit below the cost at reserve prices.
func TestBidFormChecksEarly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.market.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddCluster(ctx, exchange.Cluster{ID: "us-east"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 4000, UnitCost: ledger.Dollar, Utilization: 0.8, CurveID: "standard"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "search", Budget: 100_000 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	f.user("mia@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("mia@x.io")
	_, doc := b.get("/orders/new")
	if s := doc.Find("[data-testid=bid-notice]").Text(); !strings.Contains(s, "No auction") {
		t.Errorf("step 1 does not say no auction takes bids: %q", s)
	}
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	_, doc = b.get("/orders/new")
	if doc.Find("[data-testid=bid-notice]").Length() != 0 {
		t.Error("the notice stays while an auction takes bids")
	}
	_, doc = b.get("/orders/new?step=2&q.cpu=9000000000&cluster=us-east")
	if s := doc.Find("[data-testid=error-q\\.cpu]").Text(); !strings.Contains(s, "could ever supply") {
		t.Errorf("9 billion cores: %q", s)
	}
	_, doc = b.get("/orders/new?step=2&q.cpu=99999999999999999999&cluster=us-east")
	if s := doc.Find("[data-testid=error-q\\.cpu]").Text(); strings.Contains(s, "whole number") {
		t.Errorf("a number too large is called not a whole number: %q", s)
	}
	tok := b.csrf("/orders/new?step=2&q.cpu=100&cluster=us-east")
	// A limit of zero: the market's check refuses it (not the form's own), shown
	// beside the limit in the form's words, before any warning and with nothing placed.
	for _, zero := range []url.Values{
		{"csrf_token": {tok}, "q.cpu": {"100"}, "cluster": {"us-east"}, "limit_mode": {"one"}, "limit": {"0"}},
		{"csrf_token": {tok}, "q.cpu": {"100"}, "cluster": {"us-east"}, "limit_mode": {"each"}, "limit.us-east": {"0.00"}},
	} {
		res, doc := b.post("/orders", zero)
		field := "error-limit"
		if zero.Get("limit_mode") == "each" {
			field = "error-limit\\.us-east"
		}
		if s := doc.Find("[data-testid=" + field + "]").Text(); res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(s, "must be more than zero") ||
			doc.Find("[data-testid=reserve-warning]").Length() != 0 {
			t.Errorf("a zero limit (%s): %d, error %q, warnings %d; %q", zero.Get("limit_mode"), res.StatusCode, s, doc.Find("[data-testid=reserve-warning]").Length(), doc.Find(".field-error").Text())
		}
	}
	if vs, _ := f.market.Orders(ctx, exchange.OrderFilter{Team: "search"}); len(vs) != 0 {
		t.Fatalf("a bid with a zero limit was placed: %d orders", len(vs))
	}
	form := url.Values{"csrf_token": {tok}, "q.cpu": {"100"}, "cluster": {"us-east"}, "limit_mode": {"one"}, "limit": {"1.00"}}
	res, doc := b.post("/orders", form)
	warning := doc.Find("[data-testid=reserve-warning]")
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(warning.Text(), "cannot win") || warning.Find("[data-testid=below-reserve-ok]").Length() != 1 {
		t.Errorf("a limit below the cost at reserve: %d %q", res.StatusCode, warning.Text())
	}
	if v, _ := doc.Find("[name=limit]").Attr("value"); v != "1.00" {
		t.Errorf("the limit typed was not kept: %q", v)
	}
	if vs, _ := f.market.Orders(ctx, exchange.OrderFilter{Team: "search"}); len(vs) != 0 {
		t.Errorf("a bid was placed before the member confirmed: %d orders", len(vs))
	}
	form.Set("below_reserve", "accept")
	if res, doc := b.post("/orders", form); res.StatusCode != http.StatusSeeOther {
		t.Errorf("a confirmed bid below the cost at reserve: %d %q", res.StatusCode, doc.Find(".field-error").Text())
	}
	if vs, _ := f.market.Orders(ctx, exchange.OrderFilter{Team: "search"}); len(vs) != 1 {
		t.Errorf("the confirmed bid was not placed: %d orders", len(vs))
	}
}

// A team cannot buy in a form what it offers for sale in the same auction (nor sell
// what it bids for): it would only trade with itself.
func TestFormsRefuseBuyingAndSellingOnePool(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.market.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddCluster(ctx, exchange.Cluster{ID: "us-east"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 4000, UnitCost: ledger.Dollar, Utilization: 0.8, CurveID: "standard"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Budget: 100_000 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	if err := f.market.GrantQuota(ctx, "ads", "us-east/cpu", 500); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	u := f.user("ada@x.io", identity.RoleMember, "ads")
	ask := -100 * ledger.Dollar
	if _, err := f.market.PlaceOrder(ctx, u, exchange.OrderSpec{Team: "ads", Limit: &ask, Bundles: []exchange.Bundle{{"us-east/cpu": -100}}}); err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	b.login("ada@x.io")
	tok := b.csrf("/orders/new?step=2&q.cpu=10&cluster=us-east")
	res, doc := b.post("/orders", url.Values{"csrf_token": {tok}, "q.cpu": {"10"}, "cluster": {"us-east"}, "limit_mode": {"one"}, "limit": {"500"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(doc.Find("[data-testid=error-limit]").Text(), "already sells us-east/cpu") {
		t.Errorf("buying what the team sells: %d %q", res.StatusCode, doc.Find("[data-testid=error-limit]").Text())
	}
	if vs, _ := f.market.Orders(ctx, exchange.OrderFilter{Team: "ads"}); len(vs) != 1 {
		t.Errorf("%d orders, want the offer alone", len(vs))
	}
}

// The orders page names each pool's quantity with its unit.
func TestOrdersShowQuantitiesWithTheirUnits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.market.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddCluster(ctx, exchange.Cluster{ID: "us-east"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []exchange.PoolSpec{
		{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 4000, UnitCost: ledger.Dollar, Utilization: 0.8, CurveID: "standard"},
		{ClusterID: "us-east", Resource: "ram", Unit: "GiB", Capacity: 16000, UnitCost: 250_000, Utilization: 0.8, CurveID: "standard"},
	} {
		if _, err := f.market.AddPool(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "search", Budget: 100_000 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	mia := f.user("mia@x.io", identity.RoleMember, "search")
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	limit := 5_000 * ledger.Dollar
	if _, err := f.market.PlaceOrder(ctx, mia, exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"us-east/cpu": 100, "us-east/ram": 400}}, Limit: &limit}); err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	b.login("mia@x.io")
	_, doc := b.get("/orders")
	if s := doc.Find("main").Text(); !strings.Contains(s, "us-east/cpu +100 cores, us-east/ram +400 GiB") {
		t.Errorf("the order's bundle without units: %q", s)
	}
}
