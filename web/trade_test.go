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

// tradeMarket is a market of two clusters (us-east, eu-west) with cpu and ram
// pools, team search holding 50 cores and 200 GiB in us-east, and an open auction;
// it returns a signed-in member of search.
func (f *fixture) tradeMarket() *browser {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.market.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve); err != nil {
		f.t.Fatal(err)
	}
	for _, cl := range []exchange.Cluster{{ID: "us-east"}, {ID: "eu-west", Name: "EU West"}} {
		if _, err := f.market.AddCluster(ctx, cl); err != nil {
			f.t.Fatal(err)
		}
	}
	for _, ps := range []exchange.PoolSpec{
		{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 100},
		{ClusterID: "us-east", Resource: "ram", Unit: "GiB", Capacity: 1000},
		{ClusterID: "eu-west", Resource: "cpu", Unit: "core", Capacity: 100},
		{ClusterID: "eu-west", Resource: "ram", Unit: "GiB", Capacity: 1000},
	} {
		ps.UnitCost, ps.Utilization, ps.CurveID = ledger.Dollar/10, 0.5, "standard"
		if _, err := f.market.AddPool(ctx, ps); err != nil {
			f.t.Fatal(err)
		}
	}
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "search", Budget: 1000 * ledger.Dollar}); err != nil {
		f.t.Fatal(err)
	}
	for pool, q := range map[string]int64{"us-east/cpu": 50, "us-east/ram": 200} {
		if err := f.market.GrantQuota(ctx, "search", pool, q); err != nil {
			f.t.Fatal(err)
		}
	}
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		f.t.Fatal(err)
	}
	f.user("member@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("member@x.io")
	return b
}

func (f *fixture) teamOrders(team string) []exchange.OrderView {
	f.t.Helper()
	vs, err := f.market.Orders(context.Background(), exchange.OrderFilter{Team: team, Limit: 100})
	if err != nil {
		f.t.Fatal(err)
	}
	return vs
}

func TestMoveFormRefusesBadInputInUsersWordsAndSavesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.tradeMarket()
	res, doc := b.get("/orders/move")
	if res.StatusCode != http.StatusOK || doc.Find("[data-testid=move-form]").Length() != 1 {
		t.Fatalf("GET /orders/move: %d", res.StatusCode)
	}
	if h := doc.Find("#f-q\\.cpu ~ .help").Text(); !strings.Contains(h, "us-east: 50 free") {
		t.Errorf("the form does not say what the team holds: %q", h)
	}
	tok := b.csrf("/orders/move")
	cases := []struct {
		form  url.Values
		field string
		want  string
	}{
		{url.Values{"to": {"eu-west"}, "q.cpu": {"10"}, "net": {"pay"}, "amount": {"5"}}, "from", "Choose the cluster to move out of"},
		{url.Values{"from": {"us-east"}, "to": {"us-east"}, "q.cpu": {"10"}, "net": {"pay"}, "amount": {"5"}}, "to", "other than the one you move out of"},
		{url.Values{"from": {"us-east"}, "to": {"eu-west"}, "net": {"pay"}, "amount": {"5"}}, "quantity", "at least one resource"},
		{url.Values{"from": {"us-east"}, "to": {"eu-west"}, "q.cpu": {"51"}, "net": {"pay"}, "amount": {"5"}}, "q.cpu", "only 50 cores of cpu free to sell in us-east"},
		{url.Values{"from": {"eu-west"}, "to": {"us-east"}, "q.cpu": {"1"}, "net": {"pay"}, "amount": {"5"}}, "q.cpu", "only 0 cores"},
		{url.Values{"from": {"us-east"}, "to": {"eu-west"}, "q.cpu": {"ten"}, "net": {"pay"}, "amount": {"5"}}, "q.cpu", "whole number"},
		{url.Values{"from": {"us-east"}, "to": {"eu-west"}, "q.cpu": {"10"}, "net": {"pay"}, "amount": {"lots"}}, "amount", ""},
		{url.Values{"from": {"us-east"}, "to": {"eu-west"}, "q.cpu": {"10"}, "net": {"pay"}, "amount": {"-5"}}, "amount", "without a sign"},
		{url.Values{"from": {"us-east"}, "to": {"eu-west"}, "q.cpu": {"10"}, "buy.cpu": {"lots"}, "net": {"pay"}, "amount": {"5"}}, "buy.cpu", "whole number"},
		{url.Values{"from": {"us-east"}, "to": {"eu-west"}, "buy.cpu": {"10"}, "net": {"pay"}, "amount": {"5"}}, "quantity", "place a bid"},
	}
	for _, tc := range cases {
		tc.form.Set("csrf_token", tok)
		res, doc := b.post("/orders/move", tc.form)
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%v: status %d, want 422", tc.form, res.StatusCode)
			continue
		}
		msg := doc.Find("[data-testid=error-" + strings.ReplaceAll(tc.field, ".", "\\.") + "]").Text()
		if msg == "" || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: error beside %s is %q, want it to say %q", tc.form, tc.field, msg, tc.want)
		}
		if doc.Find("[data-testid=form-errors]").Length() != 1 {
			t.Errorf("%v: no summary saying nothing was saved", tc.form)
		}
	}
	if n := len(f.teamOrders("search")); n != 0 {
		t.Fatalf("bad input saved %d orders", n)
	}
}

func TestMoveFormPricesThenPlacesOneTradeBetweenClusters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.tradeMarket()
	tok := b.csrf("/orders/move")
	form := url.Values{"csrf_token": {tok}, "from": {"us-east"}, "to": {"eu-west"}, "q.cpu": {"10"}, "q.ram": {"40"}, "net": {"receive"}, "amount": {"1.50"}}
	form.Set("action", "price")
	res, doc := b.post("/orders/move", form)
	est := doc.Find("[data-testid=move-estimate]").Text()
	if res.StatusCode != http.StatusOK || !strings.Contains(est, "us-east/cpu: sell 10 cores") || !strings.Contains(est, "eu-west/ram: buy 40 GiB") {
		t.Fatalf("pricing: %d, estimate %q", res.StatusCode, est)
	}
	if v, _ := doc.Find("[data-testid=net-receive]").Attr("checked"); v != "checked" && doc.Find("[data-testid=net-receive][checked]").Length() != 1 {
		t.Error("pricing lost the chosen direction")
	}
	if n := len(f.teamOrders("search")); n != 0 {
		t.Fatalf("pricing placed %d orders", n)
	}
	form.Del("action")
	res, _ = b.post("/orders/move", form)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("placing the trade: %d", res.StatusCode)
	}
	os := f.teamOrders("search")
	if len(os) != 1 {
		t.Fatalf("%d orders, want 1", len(os))
	}
	o := os[0]
	want := exchange.Bundle{"us-east/cpu": -10, "us-east/ram": -40, "eu-west/cpu": 10, "eu-west/ram": 40}
	if len(o.Spec.Bundles) != 1 || o.Spec.Bundles[0].String() != want.String() {
		t.Fatalf("bundles %v, want one: %v", o.Spec.Bundles, want)
	}
	if o.Spec.Kind() != "trade" || o.Spec.Limit == nil || *o.Spec.Limit != -ledger.Money(1_500_000) {
		t.Fatalf("kind %s, limit %v: want a trade that receives at least $1.50", o.Spec.Kind(), o.Spec.Limit)
	}
	_, doc = b.get("/orders")
	if s := doc.Find("[data-testid=orders]").Text(); !strings.Contains(s, "eu-west/cpu +10") || !strings.Contains(s, "us-east/cpu -10") {
		t.Errorf("orders page does not show the trade: %q", s)
	}
	// The quota is set aside: 41 more cores are more than is free.
	form.Set("q.cpu", "41")
	res, doc = b.post("/orders/move", form)
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(doc.Find("[data-testid=error-q\\.cpu]").Text(), "only 40 cores") {
		t.Fatalf("a second move of the same quota: %d %q", res.StatusCode, doc.Find("[data-testid=error-q\\.cpu]").Text())
	}
}

func TestOfferFormOffersSeveralPoolsInOneOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.tradeMarket()
	res, doc := b.get("/orders/offer")
	if res.StatusCode != http.StatusOK || doc.Find("[data-testid=offer-pools] tbody tr").Length() != 2 {
		t.Fatalf("offer page: %d, %d pool rows, want 2", res.StatusCode, doc.Find("[data-testid=offer-pools] tbody tr").Length())
	}
	tok := b.csrf("/orders/offer")
	for _, tc := range []struct {
		form  url.Values
		field string
		want  string
	}{
		{url.Values{"minimum": {"5"}}, "pools", "at least one pool"},
		{url.Values{"sell.us-east/cpu": {"60"}, "minimum": {"5"}}, "sell\\.us-east\\/cpu", "only 50 cores free to offer in us-east/cpu"},
		{url.Values{"sell.us-east/cpu": {"10"}, "minimum": {"-1"}}, "minimum", "cannot be negative"},
		{url.Values{"sell.us-east/cpu": {"10"}}, "minimum", "Enter an amount"},
	} {
		tc.form.Set("csrf_token", tok)
		res, doc := b.post("/orders/offer", tc.form)
		if msg := doc.Find("[data-testid=error-" + tc.field + "]").Text(); res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: %d, error %q, want %q", tc.form, res.StatusCode, msg, tc.want)
		}
	}
	if n := len(f.teamOrders("search")); n != 0 {
		t.Fatalf("bad offers saved %d orders", n)
	}
	res, _ = b.post("/orders/offer", url.Values{"csrf_token": {tok}, "sell.us-east/cpu": {"30"}, "sell.us-east/ram": {"100"}, "minimum": {"12.50"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("multi-pool offer: %d", res.StatusCode)
	}
	os := f.teamOrders("search")
	if len(os) != 1 || len(os[0].Spec.Bundles) != 1 {
		t.Fatalf("orders %+v, want one order of one bundle", os)
	}
	if got, want := os[0].Spec.Bundles[0].String(), (exchange.Bundle{"us-east/cpu": -30, "us-east/ram": -100}).String(); got != want || *os[0].Spec.Limit != -ledger.Money(12_500_000) {
		t.Fatalf("bundle %s limit %v, want %s for at least $12.50", got, os[0].Spec.Limit, want)
	}
	// What is offered is no longer free to offer.
	_, doc = b.get("/orders/offer")
	if s := doc.Find("[data-testid=offer-pools]").Text(); !strings.Contains(s, "20 core") || !strings.Contains(s, "100 GiB") {
		t.Errorf("free quota after the offer: %q", s)
	}
}

// Each side of a move may have its own quantity: sell 10 cores and 40 GiB in
// us-east, buy 6 cores and no memory in eu-west.
func TestMoveFormTakesAQuantityPerSide(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.tradeMarket()
	tok := b.csrf("/orders/move")
	form := url.Values{"csrf_token": {tok}, "from": {"us-east"}, "to": {"eu-west"}, "q.cpu": {"10"}, "buy.cpu": {"6"}, "q.ram": {"40"}, "buy.ram": {"0"},
		"net": {"receive"}, "amount": {"0.10"}}
	if res, doc := b.post("/orders/move", form); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("placing the trade: %d %q", res.StatusCode, doc.Find("[data-testid=form-errors]").Text())
	}
	os := f.teamOrders("search")
	want := exchange.Bundle{"us-east/cpu": -10, "us-east/ram": -40, "eu-west/cpu": 6}
	if len(os) != 1 || len(os[0].Spec.Bundles) != 1 || os[0].Spec.Bundles[0].String() != want.String() {
		t.Fatalf("orders %v, want one with %v", os, want)
	}
}
