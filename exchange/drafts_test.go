package exchange_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// A draft holds nothing; only its team sees, edits, deletes and places it; placing
// it applies every check of the moment, and it becomes an order exactly once.
func TestDraftsHoldNothingUntilPlacedOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		mia, ada := mk.Users["member@search"], mk.Users["member@ads"]
		before := mk.Balance("search")
		d, err := mk.M.SaveDraft(ctx, mia, 0, exchange.OrderSpec{Team: "search", Limit: money(30), Bundles: []exchange.Bundle{{"us-east/cpu": 10}}})
		if err != nil {
			t.Fatal(err)
		}
		if after := mk.Balance("search"); after != before {
			t.Errorf("a draft changed the budget: %+v -> %+v", before, after)
		}
		if _, err := mk.M.SaveDraft(ctx, mia, 0, exchange.OrderSpec{Team: "search", Limit: money(30), Bundles: []exchange.Bundle{{"no/pool": 1}}}); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			t.Errorf("a draft of an unknown pool: %v", err)
		}
		if _, err := mk.M.SaveDraft(ctx, mia, 0, exchange.OrderSpec{Team: "ads", Limit: money(30), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}}); clearhouse.ErrorCode(err) != clearhouse.EFORBIDDEN {
			t.Errorf("a draft for another team: %v", err)
		}
		if _, err := mk.M.SaveDraft(ctx, ada, d.ID, exchange.OrderSpec{Team: "ads", Limit: money(30), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}}); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			t.Errorf("editing another team's draft: %v", err)
		}
		if _, err := mk.M.PlaceDraft(ctx, ada, d.ID, nil); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			t.Errorf("placing another team's draft: %v", err)
		}
		if err := mk.M.DeleteDraft(ctx, ada, d.ID); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			t.Errorf("deleting another team's draft: %v", err)
		}
		edited, err := mk.M.SaveDraft(ctx, mia, d.ID, exchange.OrderSpec{Team: "search", Limits: []ledger.Money{*money(40), *money(35)},
			Bundles: []exchange.Bundle{{"us-east/cpu": 10}, {"eu-west/cpu": 10}}})
		if err != nil || edited.ID != d.ID || len(edited.Spec.Bundles) != 2 || edited.Spec.Limits[1] != *money(35) {
			t.Fatalf("edited draft %+v, %v", edited, err)
		}
		// Over the budget at placing: refused, and the draft stays.
		big, err := mk.M.SaveDraft(ctx, mia, 0, exchange.OrderSpec{Team: "search", Limit: money(5000), Bundles: []exchange.Bundle{{"us-east/cpu": 10}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.PlaceDraft(ctx, mia, big.ID, nil); clearhouse.ErrorCode(err) != clearhouse.EUNPROCESSABLE {
			t.Errorf("placing a draft over the budget: %v", err)
		}
		o, err := mk.M.PlaceDraft(ctx, mia, d.ID, nil)
		if err != nil || o.Status != exchange.OrderOpen || o.AuctionID == nil || *o.AuctionID != mk.AuctionID {
			t.Fatalf("placing the draft: %+v, %v", o, err)
		}
		if b := mk.Balance("search"); b.Held != *money(40) {
			t.Errorf("held %v after placing, want the draft's largest limit $40", b.Held)
		}
		if _, err := mk.M.PlaceDraft(ctx, mia, d.ID, nil); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			t.Errorf("placing a placed draft again: %v", err)
		}
		ds, err := mk.M.Drafts(ctx, "search")
		if err != nil || len(ds) != 1 || ds[0].ID != big.ID {
			t.Errorf("drafts left %+v, %v; want the refused one", ds, err)
		}
		if err := mk.M.DeleteDraft(ctx, mia, big.ID); err != nil {
			t.Fatal(err)
		}
		if ds, _ := mk.M.Drafts(ctx, "search"); len(ds) != 0 {
			t.Errorf("%d drafts after deleting", len(ds))
		}
		mk.Verify()
	})
}

// Many concurrent placings of one draft, from two servers, place it once.
func TestConcurrentPlacingsOfOneDraftPlaceItOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		other := storetest.Another(t, db)
		second := exchange.NewMarket(other, ledger.New(other, mk.Clock.Now), mk.Clock.Now)
		d, err := mk.M.SaveDraft(ctx, mk.Users["member@search"], 0, exchange.OrderSpec{Team: "search", Limit: money(30), Bundles: []exchange.Bundle{{"us-east/cpu": 10}}})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		placed := 0
		for i := range 12 {
			m := mk.M
			if i%2 == 1 {
				m = second
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := m.PlaceDraft(ctx, mk.Users["member@search"], d.ID, nil)
				switch clearhouse.ErrorCode(err) {
				case "":
					mu.Lock()
					placed++
					mu.Unlock()
				case clearhouse.ENOTFOUND, clearhouse.ECONFLICT: // placed by another
				default:
					t.Errorf("place draft: %v", err)
				}
			}()
		}
		wg.Wait()
		vs, err := mk.M.Orders(ctx, exchange.OrderFilter{Team: "search"})
		if err != nil {
			t.Fatal(err)
		}
		if placed != 1 || len(vs) != 1 {
			t.Errorf("%d placings succeeded, %d orders; want 1 and 1", placed, len(vs))
		}
		mk.Verify()
	})
}

// When an auction opens, the members and owners of each team with drafts are told.
func TestOpeningAnAuctionTellsTeamsWithDrafts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		if _, err := mk.M.SaveDraft(ctx, mk.Users["member@search"], 0, exchange.OrderSpec{Team: "search", Limit: money(30), Bundles: []exchange.Bundle{{"us-east/cpu": 10}}}); err != nil {
			t.Fatal(err)
		}
		mk.Clock.Advance(time.Hour)
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		next, err := mk.M.ScheduleAuction(ctx, mk.Clock.Now().Add(time.Hour), mk.Clock.Now().Add(2*time.Hour), auction.DefaultParams)
		if err != nil {
			t.Fatal(err)
		}
		mk.Clock.Advance(time.Hour)
		if opened, err := mk.M.OpenDue(ctx); err != nil || len(opened) != 1 {
			t.Fatalf("opened %v, %v", opened, err)
		}
		for _, who := range []string{"member@search", "owner@search"} {
			var found bool
			for _, n := range notices(t, mk.Market, who) {
				if n.Kind == exchange.NoticeDraftsReady && n.Ref == "auction:"+strconv.FormatInt(next.ID, 10) && strings.Contains(n.Subject, "1 draft order") {
					found = true
				}
			}
			if !found {
				t.Errorf("%s was not told of the team's draft: %+v", who, notices(t, mk.Market, who))
			}
		}
		for _, n := range notices(t, mk.Market, "member@ads") {
			if n.Kind == exchange.NoticeDraftsReady {
				t.Errorf("a team without drafts was told: %+v", n)
			}
		}
	})
}
