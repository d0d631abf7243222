package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
)

// The API counts bundles from 1 in bundle_number, as pages and the settlement CSV
// do, and keeps the deprecated bundle_index (from 0) for existing clients.
func TestAPICountsBundlesFromOne(t *testing.T) {
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	owner := f.user("owner@x.io", exchange.RoleOwner, "search")
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
	var settlement struct {
		Lines []struct {
			BundleNumber *int `json:"bundle_number"`
			BundleIndex  int  `json:"bundle_index"`
		} `json:"lines"`
	}
	get(f.token(f.user("fin@x.io", exchange.RoleFinance, "")), "/api/v1/auctions/1/settlement", &settlement)
	if len(settlement.Lines) != 1 || settlement.Lines[0].BundleNumber == nil || *settlement.Lines[0].BundleNumber != 1 || settlement.Lines[0].BundleIndex != 0 {
		t.Errorf("settlement lines %+v, want bundle_number 1 and bundle_index 0", settlement.Lines)
	}
	var order struct {
		Provisional *struct {
			BundleNumber *int `json:"bundle_number"`
			BundleIndex  int  `json:"bundle_index"`
		} `json:"provisional"`
	}
	get(f.token(owner), "/api/v1/orders/"+itoa(int(o.ID)), &order)
	if order.Provisional == nil || order.Provisional.BundleNumber == nil || *order.Provisional.BundleNumber != 1 || order.Provisional.BundleIndex != 0 {
		t.Errorf("order outcome %+v, want bundle_number 1 and bundle_index 0", order.Provisional)
	}
}
