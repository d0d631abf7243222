package exchange_test

import (
	"context"
	"testing"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

type closeRecorder struct{ got []exchange.CloseStats }

func (r *closeRecorder) AuctionClosed(st exchange.CloseStats) { r.got = append(r.got, st) }

// The observer hears of a binding close once, after it commits, with its winners,
// what they paid and the pools cleared; a repeated close reports nothing.
func TestCloseObserverHearsEachBindingCloseOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		rec := &closeRecorder{}
		mk.M.ObserveCloses(rec)
		if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(400),
			Bundles: []exchange.Bundle{{"eu-west/cpu": 100}}}); err != nil {
			t.Fatal(err)
		}
		run, err := mk.M.Close(ctx, mk.AuctionID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		if len(rec.got) != 1 {
			t.Fatalf("heard %d closes, want 1", len(rec.got))
		}
		var paid int64
		db.Read.Raw("SELECT COALESCE(SUM(payment), 0) FROM settlement_lines WHERE auction_id = ? AND payment > 0", mk.AuctionID).Scan(&paid)
		var pools int64
		db.Read.Raw("SELECT COUNT(*) FROM auction_pools WHERE auction_id = ?", mk.AuctionID).Scan(&pools)
		st := rec.got[0]
		if !st.Settled || st.AuctionID != mk.AuctionID || st.Rounds != run.Rounds || st.Winners != 1 || st.Paid != paid || paid <= 0 ||
			st.Pools != int(pools) || st.Close < st.Settle || st.Settle <= 0 {
			t.Fatalf("stats %+v (paid %d, pools %d, rounds %d)", st, paid, pools, run.Rounds)
		}
	})
}
