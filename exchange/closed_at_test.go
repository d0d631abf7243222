package exchange_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// An auction closed early records when it closed and settled, and an auction added
// after it (whose window ends before the first one's was to) comes after it
// everywhere auctions are ordered: price history, stats, the auction list.
func TestAuctionsAreOrderedByWhenTheyClosed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db) // auction 1: [0, 1h)
		first := mk.AuctionID
		bid := func() {
			t.Helper()
			if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"us-east/cpu": 10}}, Limit: money(500)}); err != nil {
				t.Fatal(err)
			}
		}
		bid()
		mk.Clock.Advance(10 * time.Minute)
		early := mk.Clock.Now()
		if _, err := mk.M.Close(ctx, first); err != nil {
			t.Fatal(err)
		}
		a, err := mk.M.Auction(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		if a.ClosedAt == nil || !a.ClosedAt.Equal(early) || a.SettledAt == nil || a.SettledAt.Before(early) || !a.Closed().Equal(early) {
			t.Fatalf("closed early at %s: closed_at %v, settled_at %v", early, a.ClosedAt, a.SettledAt)
		}
		mk.Clock.Advance(10 * time.Minute)
		second, err := mk.M.ScheduleAuction(ctx, mk.Clock.Now(), mk.Clock.Now().Add(30*time.Minute), auction.DefaultParams) // ends at 50m, before 1h
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.Tick(ctx, exchange.Cadence{PreviewEvery: time.Minute}); err != nil {
			t.Fatal(err)
		}
		bid()
		mk.Clock.Advance(30 * time.Minute)
		if _, err := mk.M.Tick(ctx, exchange.Cadence{PreviewEvery: time.Minute}); err != nil { // closes it at the end of its window
			t.Fatal(err)
		}
		b, err := mk.M.Auction(ctx, second.ID)
		if err != nil || b.Status != exchange.AuctionSettled || b.ClosedAt == nil || b.ClosedAt.Before(b.ClosesAt) {
			t.Fatalf("the second auction: %+v, %v", b, err)
		}

		hist, err := mk.M.PriceHistory(ctx, 10)
		if err != nil || len(hist) == 0 {
			t.Fatal(hist, err)
		}
		if hist[0].AuctionID != first || hist[len(hist)-1].AuctionID != second.ID || hist[0].ClosedAt.After(hist[len(hist)-1].ClosedAt) {
			t.Errorf("price history runs %d..%d, want %d (closed first) .. %d", hist[0].AuctionID, hist[len(hist)-1].AuctionID, first, second.ID)
		}
		latest, err := mk.M.PriceHistory(ctx, 1)
		if err != nil || len(latest) == 0 || latest[0].AuctionID != second.ID {
			t.Errorf("the latest prices are from %v, want auction %d", latest, second.ID)
		}
		stats, err := mk.M.Stats(ctx, 10)
		if err != nil || len(stats) != 2 || stats[0].Auction.ID != second.ID {
			t.Errorf("stats newest first: %v, %v", stats, err)
		}
		as, err := mk.M.Auctions(ctx, 10)
		if err != nil || len(as) != 2 || as[0].ID != second.ID {
			t.Errorf("auctions newest first: %v, %v", as, err)
		}
	})
}

// A bid for more units than a pool has is refused, naming the pool's capacity, and
// holds nothing; a bid for the whole pool is accepted.
func TestABidNoPoolCouldSupplyIsRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := newAuctionMarket(t, db)
		before := mk.Balance("search")
		_, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"us-east/ram": 1}, {"us-east/cpu": 1_000_000_000_000}}, Limit: money(500)})
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(clearhouse.ErrorMessage(err), "1,000,000,000,000 cores is more than the pool's whole capacity of 100 cores") {
			t.Fatalf("a bid for 10^12 cores of a 100-core pool: %v", err)
		}
		if mk.Balance("search") != before {
			t.Fatal("the refused bid changed the budget")
		}
		if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"us-east/cpu": 100}}, Limit: money(500)}); err != nil {
			t.Fatalf("a bid for the whole pool: %v", err)
		}
	})
}
