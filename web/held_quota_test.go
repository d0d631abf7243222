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

// During an auction in which a team offers quota for sale, the market page's "Held
// by teams" counts the quota set aside, and the scheduler shows it apart from the
// quota usable for reservations: the two figures add up to the market's.
func TestHeldQuotaIsTheSameOnTheMarketAndSchedulePages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.cpuPool()
	ctx := context.Background()
	if err := f.market.GrantQuota(ctx, "search", "us-east/cpu", 60); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	mia := f.user("mia@x.io", identity.RoleMember, "search")
	ask := -ledger.Dollar
	if _, err := f.market.PlaceOrder(ctx, mia, exchange.OrderSpec{Team: "search", Limit: &ask, Bundles: []exchange.Bundle{{"us-east/cpu": -10}}}); err != nil {
		t.Fatal(err)
	}
	f.user("op@x.io", identity.RoleOperator, "")
	b := f.browser()
	b.login("op@x.io")
	_, doc := b.get("/")
	held := strings.TrimSpace(doc.Find("[data-testid='pool-us-east/cpu'] [data-testid=held-by-teams]").Text())
	_, doc = b.get("/operate/schedule")
	row := doc.Find("[data-testid='schedule-row-us-east/cpu']")
	usable := strings.TrimSpace(row.Find("[data-testid=quota-usable]").Text())
	aside := strings.TrimSpace(row.Find("[data-testid=quota-set-aside]").Text())
	if held != "60" || usable != "50 cores" || aside != "10 cores" {
		t.Fatalf("market holds %q; scheduler: %q usable and %q set aside; want 60 = 50 + 10", held, usable, aside)
	}
	if help := doc.Find("[data-testid=quota-help]").Text(); !strings.Contains(help, "Held by teams") {
		t.Errorf("the schedule page does not say how its figures make the market's: %q", help)
	}
}
