package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

func TestSearchSaysWhereAShapeCanBeHadCheapestFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.tradeMarket()
	ctx := context.Background()
	if _, err := f.market.SaveShape(ctx, exchange.Shape{ID: "web", Name: "web server", Items: map[string]int64{"cpu": 2, "ram": 8}}); err != nil {
		t.Fatal(err)
	}
	res, doc := b.get("/search")
	if res.StatusCode != http.StatusOK || doc.Find("[data-testid=search-results]").Length() != 0 || doc.Find("[data-testid=form-errors]").Length() != 0 {
		t.Fatalf("an empty search: %d", res.StatusCode)
	}
	res, doc = b.get("/search?shape=web&count=x")
	if res.StatusCode != http.StatusOK || !strings.Contains(doc.Find("[data-testid=error-count]").Text(), "whole number") {
		t.Fatalf("a bad count: %q", doc.Find("[data-testid=error-count]").Text())
	}
	// search holds 50 of us-east's 100 cores: 25 web servers fit there, 50 in eu-west.
	_, doc = b.get("/search?shape=web&count=30")
	rows := doc.Find("[data-testid=search-results] tbody tr")
	if rows.Length() != 2 {
		t.Fatalf("%d result rows, want one per cluster", rows.Length())
	}
	east, west := doc.Find("[data-testid=result-us-east]").Text(), doc.Find("[data-testid=result-eu-west]").Text()
	if !strings.Contains(east, "us-east/cpu +60 cores, us-east/ram +240 GiB") || !strings.Contains(east, "only 25 of 30 units") {
		t.Errorf("us-east: %q", east)
	}
	if !strings.Contains(west, "enough for 50 units") || !strings.Contains(west, "per web server") || !strings.Contains(west, "50% used") {
		t.Errorf("eu-west: %q", west)
	}
	href, _ := doc.Find("[data-testid=search-bid]").Attr("href")
	if !strings.Contains(href, "shape=web") || !strings.Contains(href, "cluster=eu-west") || strings.Contains(href, "cluster=us-east") {
		t.Errorf("bid link %q: want the requirement and only the clusters with enough", href)
	}
	_, doc = b.get(href)
	if s := doc.Find("[data-testid=bundles]").Text(); !strings.Contains(s, "eu-west/cpu +60 cores") || doc.Find("[data-testid=bundles] .pool-id").Length() != 2 {
		t.Errorf("the bid link's step two: %q", s)
	}
	// Quota a team offers in the open auction is available too, at its asking price.
	ask := -ledger.Dollar
	if _, err := f.market.PlaceOrder(ctx, f.user("seller@x.io", identity.RoleMember, "search"), exchange.OrderSpec{Team: "search", Limit: &ask, Bundles: []exchange.Bundle{{"us-east/cpu": -20}}}); err != nil {
		t.Fatal(err)
	}
	_, doc = b.get("/search?shape=web&count=30")
	east = doc.Find("[data-testid=result-us-east]").Text()
	if !strings.Contains(east, "enough for 35 units") {
		t.Errorf("us-east with 20 cores on offer: %q", east)
	}
	if s := doc.Find("[data-testid=result-us-east] [data-testid=on-offer]").Text(); !strings.Contains(s, "20 core cpu from $0.05 per core") {
		t.Errorf("what is on offer: %q", s)
	}
}

func TestHelpIsLinkedFromEveryPageAndHasWorkedExamples(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.tradeMarket()
	for _, page := range []string{"/", "/orders", "/orders/move", "/search", "/team"} {
		_, doc := b.get(page)
		if href, _ := doc.Find("[data-testid=help-link]").Attr("href"); href != "/help" {
			t.Errorf("%s has no help link", page)
		}
	}
	res, doc := b.get("/help")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/help: %d", res.StatusCode)
	}
	if n := doc.Find("[data-testid=examples] h3").Length(); n < 4 {
		t.Errorf("%d worked examples, want at least 4", n)
	}
	doc.Find("[data-testid=help-toc] a").Each(func(_ int, a *goquery.Selection) {
		href, _ := a.Attr("href")
		if doc.Find(href).Length() != 1 {
			t.Errorf("the contents link %s leads nowhere", href)
		}
	})
}
