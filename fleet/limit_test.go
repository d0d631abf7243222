package fleet_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// The one rule on values: holdings count whole (what is on offer included), running
// requests only their units beyond the team's quota, best-effort grants apart; a
// request that ended adds nothing.
func TestLimitIsHeldPlusReservedBeyondQuotaWithBestEffortApart(t *testing.T) {
	t.Parallel() // no database, no shared state
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	held := []fleet.Holding{{Team: "ads", Pool: "c/cpu", Held: 8, Offered: 3}}
	running := []fleet.Assignment{
		{Team: "ads", Units: 4, End: now.Add(time.Hour)}, // inside ads's quota: no Beyond
		{Team: "ml", Units: 2, End: now.Add(time.Hour), Beyond: map[string]int64{"c/cpu": 2}},
		{Team: "ml", Units: 9, End: now, Beyond: map[string]int64{"c/cpu": 9}}, // ended early, listed until its slot ends
	}
	grants := []fleet.Grant{{Team: "ads", Configuration: map[string]int64{"c/cpu": 5}}, {Team: "ads", Configuration: map[string]int64{"c/cpu": 5}}}
	got := fleet.Limits(held, running, grants, now)
	want := []fleet.Limit{{Team: "ads", Pool: "c/cpu", Held: 8, Offered: 3, BestEffort: 10}, {Team: "ml", Pool: "c/cpu", Reserved: 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("limits %+v, want %+v", got, want)
	}
	if got[0].Units() != 8 || got[1].Units() != 2 {
		t.Fatalf("units %d and %d: a free reservation, an offer or best-effort changed the limit", got[0].Units(), got[1].Units())
	}
}

// limitOf is team's limit of pool in the cluster's allocation now, by the rule.
func limitOf(t *testing.T, r *fleet.Reservations, cluster, team, pool string) fleet.Limit {
	t.Helper()
	a, err := r.Allocation(context.Background(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range a.Limits(nil) {
		if l.Team == team && l.Pool == pool {
			return l
		}
	}
	return fleet.Limit{Team: team, Pool: pool}
}

// Through the plan: a reservation inside a team's own quota does not raise its limit,
// one beyond it raises it by the part beyond; an offer does not cut it until the sale
// settles, and the settlement does.
func TestTheLimitFollowsThePlanOffersAndSettlements(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		// ads holds 60 cores of us-east/cpu and offers 10 of them.
		if _, err := pl.Order("owner@ads", exchange.OrderSpec{Team: "ads", Limit: exchangetest.Money(0), Bundles: []exchange.Bundle{{"us-east/cpu": -10}}}); err != nil {
			t.Fatal(err)
		}
		if l := limitOf(t, pl.r, "us-east", "ads", "us-east/cpu"); l.Units() != 60 || l.Held != 60 || l.Offered != 10 {
			t.Fatalf("after the offer: %+v, want 60 held, 10 of them offered, limit 60", l)
		}
		// 40 cores for an hour fit in the 50 not on offer: free, and the limit stays 60.
		inside := pl.reserve("member@ads", pl.job("us-east/cpu", 40, time.Hour, 0, 2*time.Hour, 10))
		if inside.Price != 0 {
			t.Fatalf("inside the quota: price %d", inside.Price)
		}
		if l := limitOf(t, pl.r, "us-east", "ads", "us-east/cpu"); l.Units() != 60 || l.Reserved != 0 {
			t.Fatalf("with a free reservation running: %+v, want limit 60", l)
		}
		// 30 more: 10 from the quota left, 20 beyond it.
		beyond := pl.reserve("member@ads", pl.job("us-east/cpu", 30, time.Hour, 0, 2*time.Hour, 10))
		if beyond.Price <= 0 {
			t.Fatalf("beyond the quota: price %d", beyond.Price)
		}
		if l := limitOf(t, pl.r, "us-east", "ads", "us-east/cpu"); l.Units() != 80 || l.Reserved != 20 {
			t.Fatalf("with 20 cores beyond the quota running: %+v, want 60 + 20", l)
		}
		// search buys the 10 on offer: the settlement cuts ads's holdings, and its limit.
		if _, err := pl.Order("member@search", exchange.OrderSpec{Team: "search", Limit: exchangetest.Money(500), Bundles: []exchange.Bundle{{"us-east/cpu": 10}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := pl.M.Close(ctx, pl.AuctionID); err != nil {
			t.Fatal(err)
		}
		if h := pl.Holding("ads", "us-east/cpu"); h != 50 {
			t.Fatalf("ads holds %d after the sale, want 50", h)
		}
		l := limitOf(t, pl.r, "us-east", "ads", "us-east/cpu")
		if l.Held != 50 || l.Offered != 0 || l.Reserved != 20 || l.Units() != 70 {
			t.Fatalf("after the sale settled: %+v, want 50 held + 20 beyond: 70", l)
		}
		if s := limitOf(t, pl.r, "us-east", "search", "us-east/cpu"); s.Units() != 10 {
			t.Fatalf("the buyer's limit: %+v, want 10", s)
		}
	})
}
