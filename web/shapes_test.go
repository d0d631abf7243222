package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
)

func TestOperatorsDefineServiceShapes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.tradeMarket()
	f.user("op@x.io", identity.RoleOperator, "")
	b := f.browser()
	b.login("op@x.io")
	res, doc := b.get("/operate/shapes")
	if res.StatusCode != http.StatusOK || doc.Find("[data-testid=no-shapes]").Length() != 1 {
		t.Fatalf("shapes page: %d", res.StatusCode)
	}
	tok := b.csrf("/operate/shapes")
	if res, _ := b.post("/operate/shapes", url.Values{"id": {"storage"}, "name": {"storage server"}, "q.cpu": {"4"}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("a shape without a CSRF token: %d, want 403", res.StatusCode)
	}
	for _, tc := range []struct {
		form  url.Values
		field string
		want  string
	}{
		{url.Values{"id": {"Storage Server"}, "name": {"storage server"}, "q.cpu": {"4"}}, "id", "lower-case"},
		{url.Values{"id": {"storage"}, "q.cpu": {"4"}}, "name", "give the shape a name"},
		{url.Values{"id": {"storage"}, "name": {"storage server"}}, "items", "at least one resource"},
		{url.Values{"id": {"storage"}, "name": {"storage server"}, "q.cpu": {"four"}}, "q\\.cpu", "whole number"},
	} {
		tc.form.Set("csrf_token", tok)
		res, doc := b.post("/operate/shapes", tc.form)
		if msg := doc.Find("[data-testid=error-" + tc.field + "]").Text(); res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: %d, error %q, want %q", tc.form, res.StatusCode, msg, tc.want)
		}
	}
	if ss, _ := f.market.Shapes(context.Background()); len(ss) != 0 {
		t.Fatalf("bad forms saved %d shapes", len(ss))
	}
	res, _ = b.post("/operate/shapes", url.Values{"csrf_token": {tok}, "id": {"storage"}, "name": {"storage server"}, "q.cpu": {"4"}, "q.ram": {"16"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving a shape: %d", res.StatusCode)
	}
	_, doc = b.get("/operate/shapes")
	if s := doc.Find("[data-testid=shape-storage]").Text(); !strings.Contains(s, "4 core cpu, 16 GiB ram") {
		t.Fatalf("the shape's row: %q", s)
	}
	if res, _ := b.confirmThrough("/operate/shapes/storage/delete", url.Values{"csrf_token": {tok}}, func() {
		if ss, _ := f.market.Shapes(context.Background()); len(ss) != 1 {
			t.Fatalf("asking to remove the shape left %d shapes", len(ss))
		}
	}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("removing the shape: %d", res.StatusCode)
	}
	if ss, _ := f.market.Shapes(context.Background()); len(ss) != 0 {
		t.Fatalf("%d shapes after removing the only one", len(ss))
	}
}

func TestBidInServiceUnitsBecomesCoveringBundlesPerCluster(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.tradeMarket()
	if _, err := f.market.SaveShape(context.Background(), exchange.Shape{ID: "web", Name: "web server", Items: map[string]int64{"cpu": 2, "ram": 8}}); err != nil {
		t.Fatal(err)
	}
	_, doc := b.get("/orders/new")
	if doc.Find(`[data-testid=field-shape] option[value=web]`).Length() != 1 {
		t.Fatal("step one does not offer the shape")
	}
	res, doc := b.get("/orders/new?step=2&shape=web&count=0x")
	if res.StatusCode != http.StatusOK || !strings.Contains(doc.Find("[data-testid=error-count]").Text(), "How many web servers") {
		t.Fatalf("a bad count: %d %q", res.StatusCode, doc.Find("[data-testid=error-count]").Text())
	}
	_, doc = b.get("/orders/new?step=2&shape=web&count=10&q.cpu=1&cluster=us-east&cluster=eu-west")
	if s := doc.Find("[data-testid=shape-summary]").Text(); !strings.Contains(s, "10 × web server = 20 core cpu, 80 GiB ram") {
		t.Fatalf("summary %q", s)
	}
	rows := doc.Find("[data-testid=bundles] tbody tr")
	if rows.Length() != 2 || !strings.Contains(rows.Text(), "eu-west/cpu +21 cores, eu-west/ram +80 GiB") || !strings.Contains(rows.Text(), "us-east/cpu +21 cores, us-east/ram +80 GiB") {
		t.Fatalf("covering bundles: %q", rows.Text())
	}
	form := url.Values{"csrf_token": {b.csrf("/orders/new")}, "shape": {"web"}, "count": {"10"}, "q.cpu": {"1"}, "cluster": {"us-east", "eu-west"}, "limit_mode": {"one"}, "limit": {"100"}}
	if res, _ := b.post("/orders", form); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("placing the bid: %d", res.StatusCode)
	}
	os := f.teamOrders("search")
	if len(os) != 1 || len(os[0].Spec.Bundles) != 2 || os[0].Spec.Bundles[0]["eu-west/ram"] != 80 || os[0].Spec.Bundles[1]["us-east/cpu"] != 21 {
		t.Fatalf("orders %+v, want one XOR bid of the two covering bundles", os)
	}
}
