package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// On an auction where team ads holds 40 of the pool's 100 cores (so 60 are for
// sale), the orders page says each loss as what happened: an order for 80 cores
// could not be filled at any limit (short supply), and an order for 20 cores that
// would have fit lost to its limit at the final prices. The facts behind them are
// the auction's: 60 cores for sale, and the winning order of team search took 50.
func TestOrdersSayShortSupplyAndLimitAsWhatHappened(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.cpuPool()
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Budget: 2000 * ledger.Dollar}); err != nil {
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
	ann := f.user("ann@x.io", identity.RoleMember, "ads")
	place := func(u identity.User, team string, limit ledger.Money, q int64) exchange.Order {
		t.Helper()
		o, err := f.market.PlaceOrder(ctx, u, exchange.OrderSpec{Team: team, Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": q}}})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	won := place(mia, "search", 400*ledger.Dollar, 50)
	priced := place(mia, "search", 100*ledger.Dollar, 20)
	short := place(ann, "ads", 500*ledger.Dollar, 80)
	if _, err := f.market.Close(ctx, 1); err != nil {
		t.Fatal(err)
	}
	outcome := func(who string, o exchange.Order) string {
		t.Helper()
		b := f.browser()
		b.login(who)
		_, doc := b.get("/orders")
		return strings.Join(strings.Fields(doc.Find(fmt.Sprintf("[data-testid=order-%d] [data-testid=outcome]", o.ID)).Text()), " ")
	}
	if s, want := outcome("ann@x.io", short), "lost: bundle 1 needs 80 cores of us-east/cpu; the auction had at most 60 cores for sale: no limit could have won it"; s != want {
		t.Errorf("the short order's outcome\n got %q\nwant %q", s, want)
	}
	if s := outcome("mia@x.io", priced); !strings.HasPrefix(s, "lost: at the final prices its nearest bundle (1) costs $") || !strings.Contains(s, "(20 cores of us-east/cpu at $") ||
		!strings.Contains(s, "above its limit of $100.00") {
		t.Errorf("the priced-out order's outcome %q does not say its limit was below its cost", s)
	}
	if s := outcome("mia@x.io", won); !strings.HasPrefix(s, "got bundle 1") {
		t.Errorf("the winning order's outcome %q", s)
	}
	facts, ran, err := f.market.LossFactsOf(ctx, 1)
	if err != nil || !ran {
		t.Fatalf("LossFactsOf: ran %v, %v", ran, err)
	}
	if got := facts.ForSale["us-east/cpu"]; got != 60 {
		t.Errorf("for sale in us-east/cpu: %d, want 60", got)
	}
	if got := facts.Taken["us-east/cpu"]; len(got) != 1 || got[0] != (exchange.Taker{OrderID: won.ID, Team: "search", Units: 50}) {
		t.Errorf("taken in us-east/cpu: %+v, want order %d of search, 50 cores", got, won.ID)
	}
	// Had order "priced" been within its limit, the reason would name the team's
	// own winning order as what took the units it needed.
	facts.Final = true
	hundred := 100 * ledger.Dollar
	facts.Prices["us-east/cpu"] = 1
	if got, want := exchange.LossReason(exchange.OrderSpec{Team: "search", Limit: &hundred, Bundles: []exchange.Bundle{{"us-east/cpu": 20}}}, facts),
		fmt.Sprintf("bundle 1 was within its limit at the final prices, but your team's own order #%d took 50 cores of the 60 cores of us-east/cpu for sale, leaving 10 cores of the 20 cores it needs: your team's orders competed for the same units", won.ID); got != want {
		t.Errorf("same-team conflict\n got %q\nwant %q", got, want)
	}
	if got, want := exchange.LossReason(exchange.OrderSpec{Team: "ml", Limit: &hundred, Bundles: []exchange.Bundle{{"us-east/cpu": 20}}}, facts),
		"us-east/cpu sold out: bundle 1 was within its limit at the final prices, but other orders took 50 cores of the 60 cores for sale, leaving 10 cores of the 20 cores it needs"; got != want {
		t.Errorf("sold out\n got %q\nwant %q", got, want)
	}
}
