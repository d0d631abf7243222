package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
)

// The bid form shows, beside each bundle's cost, the units the auction offers and
// those no team holds, warns when fewer are offered than the bundle needs, says
// what a price buys, and refuses more than the pool's whole capacity naming it.
func TestBidFormShowsWhatIsOnOffer(t *testing.T) {
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
	f.user("mia@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("mia@x.io")
	_, doc := b.get("/orders/new?step=2&q.cpu=10&cluster=us-east")
	if s := strings.Join(strings.Fields(doc.Find("[data-testid=availability]").Text()), " "); s != "us-east/cpu: 60 cores offered, 60 of 100 free" {
		t.Errorf("availability %q", s)
	}
	if doc.Find("[data-testid=short]").Length() != 0 {
		t.Error("10 cores of 60 offered is called short")
	}
	if s := doc.Find("[data-testid=what-a-price-buys]").Text(); !strings.Contains(s, "per unit") || !strings.Contains(s, "until it sells") {
		t.Errorf("the form does not say what a price buys: %q", s)
	}
	if s := strings.Join(strings.Fields(doc.Find("[data-testid=bid-advice]").Text()), " "); !strings.Contains(s, "really worth to you") || !strings.Contains(s, "at least your VCG payment and never more than your limit") || !strings.Contains(s, "clock only, you pay the final price per unit") {
		t.Errorf("the bid form does not give the bidding advice that holds: %q", s)
	}
	_, doc = b.get("/orders/new?step=2&q.cpu=80&cluster=us-east")
	if doc.Find("[data-testid=short]").Length() != 1 {
		t.Error("80 cores of 60 offered is not called short")
	}
	_, doc = b.get("/orders/new?step=2&q.cpu=1000000&cluster=us-east")
	if s := doc.Find("#f-q\\.cpu").Closest(".field").Text(); !strings.Contains(s, "1,000,000 cores is more than") || !strings.Contains(s, "100 cores in all") {
		t.Errorf("a million cores of a 100-core pool: %q", strings.Join(strings.Fields(s), " "))
	}
}
