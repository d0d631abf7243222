package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// Closing an auction from the operator's page first says what it will do; only a
// confirmed POST closes it.
func TestCloseAuctionAsksForConfirmation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	owner := f.user("owner@x.io", identity.RoleOwner, "search")
	limit := 50 * ledger.Dollar
	if _, err := f.market.PlaceOrder(ctx, owner, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": 10}}}); err != nil {
		t.Fatal(err)
	}
	gone, err := f.market.PlaceOrder(ctx, owner, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": 5}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.market.WithdrawOrder(ctx, owner, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.Preview(ctx, 1); err != nil {
		t.Fatal(err)
	}
	f.user("op@x.io", identity.RoleOperator, "")
	op := f.browser()
	op.login("op@x.io")
	_, doc := op.get("/operate")
	// One count of orders: the table counts those taking part, as the confirmation
	// does, and names the withdrawn one apart.
	if s := strings.Join(strings.Fields(doc.Find("[data-testid=auction-1] [data-testid=order-count]").Text()), " "); s != "1 + 1 withdrawn or rejected" {
		t.Errorf("operators' order count %q", s)
	}
	if doc.Find("[data-testid=auction-1] form[action='/operate/auctions/1/close']").Length() != 0 {
		t.Fatal("the operator page still closes an auction in one click")
	}
	if doc.Find("[data-testid=auction-1] [data-testid=preview]").Length() != 1 || doc.Find("[data-testid=auction-1] a[data-testid=close]").Length() != 1 {
		t.Fatal("preview and close are not two separate actions")
	}
	res, doc := op.get("/operate/auctions/1/close")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("confirmation page: %d", res.StatusCode)
	}
	if s := doc.Find("[data-testid=close-orders]").Text(); !strings.Contains(s, "1 order takes part") {
		t.Errorf("confirmation does not count the orders: %q", s)
	}
	if s := strings.Join(strings.Fields(doc.Find("[data-testid=close-money]").Text()), " "); !strings.Contains(s, "buyers would pay $") {
		t.Errorf("confirmation does not say what money moves: %q", s)
	}
	tok := op.csrf("/operate/auctions/1/close")
	res, _ = op.post("/operate/auctions/1/close", url.Values{"csrf_token": {tok}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/operate/auctions/1/close" {
		t.Fatalf("unconfirmed close: %d to %q, want the confirmation page", res.StatusCode, res.Header.Get("Location"))
	}
	if a, _ := f.market.Auction(ctx, 1); a.Status != exchange.AuctionOpen {
		t.Fatalf("an unconfirmed close changed the auction to %s", a.Status)
	}
	res, _ = op.post("/operate/auctions/1/close", url.Values{"csrf_token": {tok}, "confirm": {"yes"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("confirmed close: %d", res.StatusCode)
	}
	if a, _ := f.market.Auction(ctx, 1); a.Status != exchange.AuctionSettled {
		t.Fatalf("confirmed close left the auction %s", a.Status)
	}
	res, _ = op.post("/operate/auctions/1/close", url.Values{"confirm": {"yes"}})
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("close without a CSRF token: %d, want 403", res.StatusCode)
	}
}

// New pools start with the curve most pools use; the curve editor previews by POST,
// says why a curve cannot be drawn, and pools and clusters can be removed when
// nothing depends on them.
func TestOperatorCurvesAndRemovals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	if _, err := f.market.SaveCurve(ctx, "gpu", "Scarce accelerators", auction.CurveSpec{Kind: "parametric", K: 8, Threshold: 0.7, Gamma: 2.5}); err != nil {
		t.Fatal(err)
	}
	f.user("op@x.io", identity.RoleOperator, "")
	op := f.browser()
	op.login("op@x.io")
	_, doc := op.get("/operate")
	if v, _ := doc.Find("[data-testid=pool-form] select[name=curve] option[selected]").Attr("value"); v != "standard" {
		t.Errorf("new pools default to curve %q, want standard", v)
	}
	_, doc = op.get("/operate/curves/standard")
	if m, _ := doc.Find("[data-testid=curve-form]").Attr("method"); m != "post" {
		t.Errorf("curve form method %q: a GET would put the CSRF token in the URL", m)
	}
	tok := op.csrf("/operate/curves/standard")
	res, doc := op.post("/operate/curves/standard", url.Values{"csrf_token": {tok}, "action": {"preview"}, "name": {"Standard"}, "kind": {"parametric"}, "k": {"-2"}, "threshold": {"0.8"}, "gamma": {"1"}})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("preview: %d", res.StatusCode)
	}
	if s := doc.Find("[data-testid=chart-empty]").Text(); !strings.Contains(s, "cannot be drawn: k") {
		t.Errorf("an invalid k shows %q, not the reason", s)
	}
	if cv, _ := f.market.Curve(ctx, "standard"); strings.Contains(cv.Spec, "-2") {
		t.Error("preview saved the curve")
	}
	// Removals: refused with the reason while teams hold quota, done when nothing depends.
	if err := f.market.GrantQuota(ctx, "search", "us-east/cpu", 1); err == nil {
		res, _ = op.post("/operate/pools/us-east/cpu/remove", url.Values{"csrf_token": {tok}})
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/operate/pools/us-east/cpu" {
			t.Errorf("refused removal: %d to %q", res.StatusCode, loc)
		}
		if _, err := f.market.Pool(ctx, "us-east/cpu"); err != nil {
			t.Errorf("refused removal removed the pool: %v", err)
		}
	}
	if _, err := f.market.AddCluster(ctx, exchange.Cluster{ID: "eu-west"}); err != nil {
		t.Fatal(err)
	}
	res, _ = op.post("/operate/clusters/eu-west/remove", url.Values{"csrf_token": {tok}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("remove cluster: %d", res.StatusCode)
	}
	if cs, _ := f.market.Clusters(ctx); len(cs) != 1 {
		t.Errorf("clusters after removal: %v", cs)
	}
}
