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
	f.settleOneBid(1550, 500, exchange.Bundle{"us-east/ram": 1200})
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

// settleOneBid adds a us-east/ram pool of ramCapacity GiB beside cpuPool's, and
// settles auction 1 with one order of mia@x.io (a member of search) for bundle at
// a limit of limitDollars; it returns mia.
func (f *fixture) settleOneBid(ramCapacity int64, limitDollars int64, bundle exchange.Bundle) identity.User {
	f.t.Helper()
	f.cpuPool()
	ctx := context.Background()
	if _, err := f.market.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "ram", Unit: "GiB", Capacity: ramCapacity, UnitCost: 100_000, Utilization: 0.8, CurveID: "standard"}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		f.t.Fatal(err)
	}
	mia := f.user("mia@x.io", identity.RoleMember, "search")
	limit := ledger.Money(limitDollars) * ledger.Dollar
	if _, err := f.market.PlaceOrder(ctx, mia, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{bundle}}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.market.Close(ctx, 1); err != nil {
		f.t.Fatal(err)
	}
	return mia
}
