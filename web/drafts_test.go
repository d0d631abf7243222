package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// While no auction takes bids, members save bids, offers and trades as drafts; the
// orders page lists them with edit and delete; once an auction opens, each is
// placed with one click (or all at once) with the checks and holds of that moment.
func TestDraftsArePreparedThenPlacedWhenAnAuctionOpens(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.market.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []string{"us-east", "eu-west"} {
		if _, err := f.market.AddCluster(ctx, exchange.Cluster{ID: cl}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.market.AddPool(ctx, exchange.PoolSpec{ClusterID: cl, Resource: "cpu", Unit: "core", Capacity: 1000, UnitCost: ledger.Dollar, Utilization: 0.5, CurveID: "standard"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "search", Budget: 10_000 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	if err := f.market.GrantQuota(ctx, "search", "us-east/cpu", 100); err != nil {
		t.Fatal(err)
	}
	f.user("mia@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("mia@x.io")

	_, doc := b.get("/orders")
	if !strings.Contains(doc.Find("[data-testid=orders-notice]").Text(), "drafts") || doc.Find("[data-testid=new-bid]").Length() != 1 {
		t.Fatalf("orders page without an auction: %q", doc.Find("[data-testid=orders-notice]").Text())
	}
	_, doc = b.get("/orders/new?step=2&q.cpu=10&cluster=eu-west")
	if doc.Find("[data-testid=bid-submit]").Length() != 0 || doc.Find("[data-testid=bid-draft]").Length() != 1 {
		t.Fatal("step 2 without an auction should offer Save as draft, not Place bid")
	}
	tok := b.csrf("/orders/new?step=2&q.cpu=10&cluster=eu-west")
	res, doc := b.post("/orders", url.Values{"csrf_token": {tok}, "q.cpu": {"10"}, "cluster": {"eu-west"}, "limit_mode": {"one"}, "limit": {"50"}, "action": {"draft"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving a bid draft: %d %q", res.StatusCode, doc.Find("[data-testid=form-errors]").Text())
	}
	if res, _ := b.post("/orders/offer", url.Values{"csrf_token": {tok}, "sell.us-east/cpu": {"20"}, "minimum": {"5"}, "action": {"draft"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving an offer draft: %d", res.StatusCode)
	}
	if res, _ := b.post("/orders/offer", url.Values{"csrf_token": {tok}, "sell.us-east/cpu": {"5"}, "minimum": {"1"}, "action": {"draft"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving a second offer draft: %d", res.StatusCode)
	}
	if vs := f.teamOrders("search"); len(vs) != 0 {
		t.Fatalf("saving drafts placed %d orders", len(vs))
	}
	_, doc = b.get("/orders")
	rows := doc.Find("[data-testid=drafts] tbody tr")
	if rows.Length() != 3 || doc.Find("[data-testid=place-draft]").Length() != 0 {
		t.Fatalf("%d draft rows (want 3), %d place buttons (want none before an auction)", rows.Length(), doc.Find("[data-testid=place-draft]").Length())
	}
	if s := rows.Text(); !strings.Contains(s, "eu-west/cpu +10 cores") || !strings.Contains(s, "us-east/cpu -20 cores") {
		t.Errorf("drafts table %q", s)
	}
	// Edit the bid draft (the oldest, last row): its form comes back filled in.
	bidRow := rows.Last()
	edit, _ := bidRow.Find("[data-testid=edit-draft]").Attr("href")
	_, doc = b.get(edit)
	if v, _ := doc.Find("[name=limit]").Attr("value"); v != "50.00" {
		t.Errorf("editing the bid draft: limit %q, want 50.00", v)
	}
	draft, _ := doc.Find("[name=draft]").Attr("value")
	if res, _ := b.post("/orders", url.Values{"csrf_token": {tok}, "q.cpu": {"12"}, "cluster": {"eu-west"}, "limit_mode": {"one"}, "limit": {"60"}, "action": {"draft"}, "draft": {draft}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving the edited draft: %d", res.StatusCode)
	}
	ds, _ := f.market.Drafts(ctx, "search")
	if len(ds) != 3 || ds[2].Spec.Bundles[0]["eu-west/cpu"] != 12 {
		t.Fatalf("drafts after editing: %+v", ds)
	}
	// Delete the newest offer draft.
	del, _ := rows.First().Find("[data-testid=delete-draft]").Parent().Attr("action")
	if res, _ := b.post(del, url.Values{"csrf_token": {tok}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("deleting a draft: %d", res.StatusCode)
	}
	if res, _ := b.post(del, url.Values{}); res.StatusCode != http.StatusForbidden {
		t.Errorf("a draft deleted without the CSRF token: %d", res.StatusCode)
	}

	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	_, doc = b.get("/orders")
	if doc.Find("[data-testid=place-draft]").Length() != 2 || doc.Find("[data-testid=place-all-drafts]").Length() != 1 {
		t.Fatalf("with an auction open: %d place buttons, %d place-all", doc.Find("[data-testid=place-draft]").Length(), doc.Find("[data-testid=place-all-drafts]").Length())
	}
	place, _ := doc.Find("[data-testid=drafts] tbody tr").Last().Find("[data-testid=place-draft]").Parent().Attr("action")
	if res, _ := b.post(place, url.Values{"csrf_token": {tok}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("placing a draft: %d", res.StatusCode)
	}
	if res, _ := b.post("/drafts/place-all", url.Values{"csrf_token": {tok}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("placing all drafts: %d", res.StatusCode)
	}
	vs := f.teamOrders("search")
	kinds := map[string]int{}
	for _, v := range vs {
		kinds[v.Spec.Kind()]++
	}
	if len(vs) != 2 || kinds["bid"] != 1 || kinds["offer"] != 1 {
		t.Errorf("orders placed from drafts: %v", kinds)
	}
	if ds, _ := f.market.Drafts(ctx, "search"); len(ds) != 0 {
		t.Errorf("%d drafts left after placing them all", len(ds))
	}
	// Another team's member cannot place or delete them (none left here: a made-up id).
	f.user("ada@x.io", identity.RoleMember, "ads")
	other := f.browser()
	other.login("ada@x.io")
	if res, _ := other.post("/drafts/1/delete", url.Values{"csrf_token": {other.csrf("/orders")}}); res.StatusCode != http.StatusNotFound {
		t.Errorf("another team deleting a draft: %d", res.StatusCode)
	}
}
