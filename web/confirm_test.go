package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// confirmThrough posts a risky form as its button does, without confirmation: the
// answer must be the confirmation page, and unchanged checks that nothing
// happened. Then it submits the confirmation page's own form (its action and every
// field it carries, as a browser without JavaScript would) and returns the answer.
func (b *browser) confirmThrough(path string, form url.Values, unchanged func()) (*http.Response, *goquery.Document) {
	b.f.t.Helper()
	res, doc := b.post(path, form)
	if res.StatusCode != http.StatusOK || doc.Find("[data-testid=confirm]").Length() != 1 {
		b.f.t.Fatalf("%s without confirmation: %d, want the confirmation page", path, res.StatusCode)
	}
	unchanged()
	if doc.Find("[data-testid=confirm-keep]").Length() != 1 || doc.Find("form [data-testid=confirm-submit].danger").Length() != 1 {
		b.f.t.Fatalf("%s: the confirmation page has no way back or no destructive button", path)
	}
	confirm := doc.Find("[data-testid=confirm] form")
	action, _ := confirm.Attr("action")
	again := url.Values{}
	confirm.Find("input").Each(func(_ int, in *goquery.Selection) {
		name, _ := in.Attr("name")
		v, _ := in.Attr("value")
		again.Add(name, v)
	})
	if again.Get("confirm") != "yes" || again.Get("csrf_token") == "" {
		b.f.t.Fatalf("%s: the confirmation form carries %v", path, again)
	}
	return b.post(action, again)
}

func TestWithdrawingAnOrderAsksFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.tradeMarket()
	ctx := context.Background()
	member, err := f.id.UserByEmail(ctx, "member@x.io")
	if err != nil {
		t.Fatal(err)
	}
	limit := 50 * ledger.Dollar
	o, err := f.market.PlaceOrder(ctx, member, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": 5}}})
	if err != nil {
		t.Fatal(err)
	}
	_, doc := b.get("/orders")
	if doc.Find(fmt.Sprintf("[data-testid=order-%d] form.destructive [data-testid=withdraw].danger", o.ID)).Length() != 1 {
		t.Fatal("the order's Withdraw button is not set apart as destructive")
	}
	tok := b.csrf("/orders")
	status := func() exchange.OrderStatus {
		v, err := f.market.Order(ctx, member, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		return v.Status
	}
	res, _ := b.confirmThrough(fmt.Sprintf("/orders/%d/withdraw", o.ID), url.Values{"csrf_token": {tok}}, func() {
		if s := status(); s != exchange.OrderOpen {
			t.Fatalf("asking to withdraw changed the order to %s", s)
		}
	})
	if res.StatusCode != http.StatusSeeOther || status() != exchange.OrderWithdrawn {
		t.Fatalf("confirmed withdrawal: %d, order %s", res.StatusCode, status())
	}
	if res, _ := b.post(fmt.Sprintf("/orders/%d/withdraw", o.ID), url.Values{"confirm": {"yes"}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("a confirmation without a CSRF token: %d, want 403", res.StatusCode)
	}
}

func TestSavingAPoolAtZeroUnitCostAsksFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("op@x.io", identity.RoleOperator, "")
	b := f.browser()
	b.login("op@x.io")
	ctx := context.Background()
	before, err := f.market.Pool(ctx, "us-east/cpu")
	if err != nil {
		t.Fatal(err)
	}
	tok := b.csrf("/operate/pools/us-east/cpu")
	form := url.Values{"csrf_token": {tok}, "unit": {before.Unit}, "capacity": {fmt.Sprint(before.Capacity)}, "unit_cost": {"0"}, "curve": {before.CurveID}}
	res, doc := b.confirmThrough("/operate/pools/us-east/cpu", form, func() {
		if p, _ := f.market.Pool(ctx, "us-east/cpu"); p.UnitCost != before.UnitCost {
			t.Fatalf("asking changed the unit cost to %d", p.UnitCost)
		}
	})
	if p, _ := f.market.Pool(ctx, "us-east/cpu"); res.StatusCode != http.StatusSeeOther || p.UnitCost != 0 {
		t.Fatalf("confirmed $0 cost: %d, unit cost %d: %s", res.StatusCode, p.UnitCost, doc.Text())
	}
	// A cost above zero saves at once, as before.
	form.Set("unit_cost", "0.02")
	if res, _ := b.post("/operate/pools/us-east/cpu", form); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving a priced pool: %d", res.StatusCode)
	}
	if p, _ := f.market.Pool(ctx, "us-east/cpu"); p.UnitCost != 2*ledger.Cent {
		t.Fatalf("unit cost %d, want 2 cents", p.UnitCost)
	}
	// A new pool at $0 asks too.
	add := url.Values{"csrf_token": {tok}, "cluster": {"us-east"}, "resource": {"gpu"}, "unit": {"card"}, "capacity": {"8"}, "unit_cost": {"0.00"}, "curve": {before.CurveID}}
	res, _ = b.confirmThrough("/operate/pools", add, func() {
		if _, err := f.market.Pool(ctx, "us-east/gpu"); err == nil {
			t.Fatal("asking added the pool")
		}
	})
	if _, err := f.market.Pool(ctx, "us-east/gpu"); res.StatusCode != http.StatusSeeOther || err != nil {
		t.Fatalf("confirmed new pool: %d, %v", res.StatusCode, err)
	}
}
