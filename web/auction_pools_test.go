package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// The auction page's pools table counts units one way: the operator's supply and
// what it sold both group thousands (1,550 and 1,200), as every count does.
func TestAuctionPoolsCountUnitsAlike(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.cpuPool()
	ctx := context.Background()
	if _, err := f.market.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "ram", Unit: "GiB", Capacity: 1550, UnitCost: 100_000, Utilization: 0.2, CurveID: "standard"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	mia := f.user("mia@x.io", identity.RoleMember, "search")
	limit := 500 * ledger.Dollar
	if _, err := f.market.PlaceOrder(ctx, mia, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/ram": 1200}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.Close(ctx, 1); err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	b.login("mia@x.io")
	_, doc := b.get("/auctions/1")
	ram := doc.Find(`[data-testid="auction-pool-us-east/ram"]`)
	supply := strings.TrimSpace(ram.Find("[data-testid=operator-supply]").Text())
	sold := strings.TrimSpace(ram.Find("[data-testid=operator-sold]").Text())
	if supply != "1,550" || sold != "1,200" {
		t.Errorf("ram: operator supply %q, sold %q; want 1,550 and 1,200", supply, sold)
	}
}
