package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// The API counts bundles from 1 in bundle_number, as pages and the settlement CSV
// do, and keeps the deprecated bundle_index (from 0) for existing clients.
func TestAPICountsBundlesFromOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	owner := f.user("owner@x.io", identity.RoleOwner, "search")
	limit := 50 * ledger.Dollar
	o, err := f.market.PlaceOrder(ctx, owner, exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"us-east/cpu": 10}}, Limit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.Close(ctx, 1); err != nil {
		t.Fatal(err)
	}
	get := func(token, path string, into any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, res.StatusCode, raw)
		}
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var settlement apiv1.Settlement
	get(f.token(f.user("fin@x.io", identity.RoleFinance, "")), "/api/v1/auctions/1/settlement", &settlement)
	if len(settlement.Lines) != 1 || settlement.Lines[0].BundleNumber != 1 || settlement.Lines[0].BundleIndex != 0 {
		t.Errorf("settlement lines %+v, want bundle_number 1 and bundle_index 0", settlement.Lines)
	}
	var order apiv1.Order
	get(f.token(owner), "/api/v1/orders/"+itoa(int(o.ID)), &order)
	if order.Provisional == nil || order.Provisional.BundleNumber != 1 || order.Provisional.BundleIndex != 0 {
		t.Errorf("order outcome %+v, want bundle_number 1 and bundle_index 0", order.Provisional)
	}
	// The order's outcome names the payment rule its settlement line names.
	if order.Provisional == nil || order.Provisional.PaymentRule == "" || len(settlement.Lines) != 1 ||
		order.Provisional.PaymentRule != settlement.Lines[0].PaymentRule {
		t.Errorf("order outcome %+v, settlement lines %+v: want the same non-empty payment_rule", order.Provisional, settlement.Lines)
	}
	// And the same VCG payment, where the rule is a core payment (none otherwise).
	if order.Provisional != nil && len(settlement.Lines) == 1 && order.Provisional.VCGPayment != settlement.Lines[0].VCGPayment {
		t.Errorf("order outcome's vcg_payment %q, the settlement line's %q: want the same", order.Provisional.VCGPayment, settlement.Lines[0].VCGPayment)
	}
}

// The API places a bid whose limit is below the cost at reserve prices, and warns
// that it cannot win; a bid that can win gets no warning.
func TestAPIWarnsOfALimitBelowReserve(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	token := f.token(f.user("mia@x.io", identity.RoleMember, "search"))
	place := func(limit string) (int, []string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/v1/orders", strings.NewReader(`{"bundles":[{"us-east/cpu":10}],"limit":"`+limit+`"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out apiv1.PlacedOrder
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, out.Warnings
	}
	if code, w := place("0.01"); code != http.StatusCreated || len(w) != 1 || !strings.Contains(w[0], "cannot win") {
		t.Errorf("a limit below reserve: %d %q", code, w)
	}
	if code, w := place("500"); code != http.StatusCreated || len(w) != 0 {
		t.Errorf("a limit above reserve: %d %q", code, w)
	}
}

// A pool that ends above reserve with units unsold (a bid larger than its supply
// raised the price and then dropped out) is explained on the auction page. Team
// ads holds 40 of the pool's 100 cores, so 60 are on offer and a bid for 90 (which
// the pool could supply, so it is accepted) is larger than the supply.
func TestAuctionPageExplainsAPoolUnsoldAboveReserve(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.cpuPool()
	ctx := context.Background()
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "ads"}); err != nil {
		t.Fatal(err)
	}
	if err := f.market.GrantQuota(ctx, "ads", "us-east/cpu", 40); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	mia := f.user("mia@x.io", identity.RoleMember, "search")
	limit := 180 * ledger.Dollar // 90 cores, of the 60 on offer, for at most $2 each
	if _, err := f.market.PlaceOrder(ctx, mia, exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"us-east/cpu": 90}}, Limit: &limit}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.Preview(ctx, 1); err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	b.login("mia@x.io")
	_, doc := b.get("/auctions/1")
	if s := doc.Find("[data-testid=price-notes]").Text(); !strings.Contains(s, "Why is us-east/cpu") || !strings.Contains(s, "60 cores unsold") {
		t.Errorf("price notes: %q", s)
	}
}
