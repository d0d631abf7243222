package exchange_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// measure records pool's capacity as its cluster's agent would (fleet writes this
// row from an agent's report).
func (mk *market) measure(pool string, units int64) {
	mk.T.Helper()
	if err := mk.DB.Write.Exec(`INSERT INTO pool_measured_capacity (pool_id, capacity, measured_at) VALUES (?, ?, ?)
		ON CONFLICT (pool_id) DO UPDATE SET capacity = excluded.capacity, measured_at = excluded.measured_at`, pool, units, mk.Clock.Now()).Error; err != nil {
		mk.T.Fatal(err)
	}
}

func (mk *market) capacity(pool string) exchange.PoolCapacity {
	mk.T.Helper()
	c, err := mk.M.Capacity(context.Background(), pool)
	if err != nil {
		mk.T.Fatal(err)
	}
	return c
}

func (mk *market) supply(id int64, pool string) int64 {
	mk.T.Helper()
	aps, err := mk.M.AuctionPools(context.Background(), id)
	if err != nil {
		mk.T.Fatal(err)
	}
	for _, ap := range aps {
		if ap.PoolID == pool {
			return ap.Supply
		}
	}
	mk.T.Fatalf("auction %d does not sell %s", id, pool)
	return 0
}

func (mk *market) heldIn(pool string) int64 {
	mk.T.Helper()
	hs, err := mk.M.Holdings(context.Background(), "")
	if err != nil {
		mk.T.Fatal(err)
	}
	var n int64
	for _, h := range hs {
		if h.PoolID == pool {
			n += h.Quantity
		}
	}
	return n
}

// nextAuction closes the open auction and opens a new one, as the market job does.
func (mk *market) nextAuction() int64 {
	mk.T.Helper()
	ctx := context.Background()
	if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
		mk.T.Fatal(err)
	}
	a, err := mk.M.ScheduleAuction(ctx, mk.Clock.Now(), mk.Clock.Now().Add(4*time.Hour), auction.DefaultParams)
	if err != nil {
		mk.T.Fatal(err)
	}
	if rep, err := mk.M.Tick(ctx, exchange.Cadence{PreviewEvery: time.Minute}); err != nil || len(rep.Opened) != 1 {
		mk.T.Fatalf("tick: opened %v, %v", rep.Opened, err)
	}
	mk.AuctionID = a.ID
	return a.ID
}

// A cluster smaller than configured: us-east/cpu is configured at 100 cores, teams
// hold 60, and the auction opened selling 40. The agent then measures 70 cores. The
// binding run sells at most the 10 the cluster has beyond what teams hold, to the
// highest bidders, and holdings end at the measured capacity, not above it; the
// next auction opens with the measured capacity's supply.
func TestAnAuctionSellsAtMostTheMeasuredCapacityLessHoldings(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		if got := mk.supply(mk.AuctionID, "us-east/cpu"); got != 40 {
			t.Fatalf("supply at opening %d, want 40 (configured 100 less 60 held)", got)
		}
		for _, o := range []struct {
			who, team string
			limit     float64
		}{{"member@search", "search", 50}, {"member@search", "search", 40}, {"owner@ml", "ml", 30}, {"owner@ml", "ml", 20}} {
			if _, err := mk.Order(o.who, exchange.OrderSpec{Team: o.team, Limit: money(o.limit), Bundles: []exchange.Bundle{{"us-east/cpu": 5}}}); err != nil {
				t.Fatal(err)
			}
		}
		mk.measure("us-east/cpu", 70)
		c := mk.capacity("us-east/cpu")
		if c.Effective != 70 || c.Source != exchange.CapacityFromMeasured || c.Held != 60 || c.Configured != 100 {
			t.Fatalf("capacity %+v, want 70 measured of 100 configured, 60 held", c)
		}
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		if got := mk.heldIn("us-east/cpu"); got != 70 {
			t.Errorf("teams hold %d cores after the close, want 70: the measured capacity, all of it sold", got)
		}
		if got := mk.supply(mk.AuctionID, "us-east/cpu"); got != 10 {
			t.Errorf("the closed auction's supply %d, want 10", got)
		}
		run, prices, ok, err := mk.M.LatestRun(ctx, mk.AuctionID)
		if err != nil || !ok || !run.Binding {
			t.Fatalf("binding run: %v %v %+v", ok, err, run)
		}
		for _, p := range prices {
			if p.PoolID == "us-east/cpu" && p.OperatorSold > 10 {
				t.Errorf("the operator sold %v cores, more than the 10 measured beyond holdings", p.OperatorSold)
			}
		}
		if got := mk.Holding("search", "us-east/cpu"); got != 10 {
			t.Errorf("search, the highest bidder, holds %d, want 10", got)
		}
		id := mk.nextAuction()
		if got := mk.supply(id, "us-east/cpu"); got != 0 {
			t.Errorf("the next auction sells %d cores of a pool whose measured capacity teams hold in full", got)
		}
		if got := mk.supply(id, "eu-west/cpu"); got != 100 {
			t.Errorf("eu-west (never measured) sells %d, want its configured 100", got)
		}
	})
}

// An operator's override replaces the measured capacity until it expires: the next
// auction opens with its supply and grants count against it; once it expires the
// measured capacity applies again, and the open auction's next run sells no more
// than that. A bad override is refused naming the field and stores nothing; set and
// clear are logged with who, why and until when.
func TestACapacityOverrideIsHonouredUntilItExpires(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		mk.measure("us-east/cpu", 70)
		now := mk.Clock.Now()
		for name, o := range map[string]struct {
			pool, reason, by string
			units            int64
			expires          time.Time
			code, field      string
		}{
			"no reason":   {"us-east/cpu", " ", "op", 90, now.Add(time.Hour), clearhouse.EINVALID, "reason"},
			"negative":    {"us-east/cpu", "x", "op", -1, now.Add(time.Hour), clearhouse.EINVALID, "units"},
			"absurd":      {"us-east/cpu", "x", "op", 1 << 62, now.Add(time.Hour), clearhouse.EINVALID, "units"},
			"past":        {"us-east/cpu", "x", "op", 90, now, clearhouse.EINVALID, "expires"},
			"4x+1":        {"us-east/cpu", "x", "op", 401, now.Add(time.Hour), clearhouse.EINVALID, "units"},
			"two years":   {"us-east/cpu", "x", "op", 90, now.Add(2 * 365 * 24 * time.Hour), clearhouse.EINVALID, "expires"},
			"nobody":      {"us-east/cpu", "x", "", 90, now.Add(time.Hour), clearhouse.EINVALID, "by"},
			"no such one": {"us-east/gpu", "x", "op", 90, now.Add(time.Hour), clearhouse.ENOTFOUND, "pool"},
		} {
			err := mk.M.OverrideCapacity(ctx, o.pool, o.units, o.reason, o.expires, o.by)
			if clearhouse.ErrorCode(err) != o.code || !strings.HasPrefix(clearhouse.ErrorMessage(err), o.field) {
				t.Errorf("%s: %v, want %s naming %s", name, err, o.code, o.field)
			}
		}
		if c := mk.capacity("us-east/cpu"); c.Source != exchange.CapacityFromMeasured || c.Override != nil {
			t.Fatalf("a refused override changed the capacity: %+v", c)
		}
		if log, _ := mk.M.CapacityOverrideLog(ctx, "us-east/cpu", 10); len(log) != 0 {
			t.Fatalf("refused overrides were logged: %+v", log)
		}

		expires := now.Add(2 * time.Hour)
		if err := mk.M.OverrideCapacity(ctx, "us-east/cpu", 90, "two nodes back from repair, not yet reported", expires, "op@x.io"); err != nil {
			t.Fatal(err)
		}
		c := mk.capacity("us-east/cpu")
		if c.Effective != 90 || c.Source != exchange.CapacityFromOverride || c.OverrideBy != "op@x.io" || !c.OverrideExpires.Equal(expires) || *c.Measured != 70 {
			t.Fatalf("capacity with the override %+v", c)
		}
		id := mk.nextAuction()
		if got := mk.supply(id, "us-east/cpu"); got != 30 {
			t.Fatalf("supply under the override %d, want 30 (90 less 60 held)", got)
		}
		if err := mk.M.GrantQuota(ctx, "search", "us-east/cpu", 1); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
			t.Errorf("a grant beyond the override less holdings and supply: %v, want a conflict", err)
		}

		mk.Clock.Advance(2*time.Hour + time.Second)
		c = mk.capacity("us-east/cpu")
		if c.Effective != 70 || c.Source != exchange.CapacityFromMeasured || c.Override != nil {
			t.Fatalf("capacity after the override expired %+v, want the measured 70", c)
		}
		if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(100), Bundles: []exchange.Bundle{{"us-east/cpu": 20}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.Preview(ctx, id); err != nil {
			t.Fatal(err)
		}
		if got := mk.supply(id, "us-east/cpu"); got != 10 {
			t.Errorf("the open auction's supply after the override expired %d, want 10", got)
		}
		if _, err := mk.M.Close(ctx, id); err != nil {
			t.Fatal(err)
		}
		if got := mk.heldIn("us-east/cpu"); got > 70 {
			t.Errorf("teams hold %d cores after the close, more than the measured 70", got)
		}

		if err := mk.M.OverrideCapacity(ctx, "us-east/cpu", 80, "again", mk.Clock.Now().Add(time.Hour), "op@x.io"); err != nil {
			t.Fatal(err)
		}
		if err := mk.M.ClearCapacityOverride(ctx, "us-east/cpu", "lead@x.io"); err != nil {
			t.Fatal(err)
		}
		if c := mk.capacity("us-east/cpu"); c.Source != exchange.CapacityFromMeasured {
			t.Errorf("after clearing: %+v", c)
		}
		log, err := mk.M.CapacityOverrideLog(ctx, "us-east/cpu", 10)
		if err != nil || len(log) != 3 || log[0].Action != "clear" || log[0].ByWhom != "lead@x.io" || log[2].Action != "set" ||
			*log[2].Units != 90 || log[2].ByWhom != "op@x.io" || log[2].Reason != "two nodes back from repair, not yet reported" || !log[2].ExpiresAt.Equal(expires) {
			t.Errorf("override log %+v, %v", log, err)
		}
	})
}

// Holdings above the effective capacity (the cluster shrank after the quota was
// sold) are listed as oversold by how much, and nothing more is sold there.
func TestOversoldPoolsAreListed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		if got, err := mk.M.Oversold(ctx); err != nil || len(got) != 0 {
			t.Fatalf("oversold before any measurement: %+v, %v", got, err)
		}
		mk.measure("us-east/cpu", 48)
		got, err := mk.M.Oversold(ctx)
		if err != nil || len(got) != 1 || got[0].Pool != "us-east/cpu" || got[0].Oversold() != 12 {
			t.Fatalf("oversold %+v, %v; want us-east/cpu by 12", got, err)
		}
		if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(100), Bundles: []exchange.Bundle{{"us-east/cpu": 5}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		if got := mk.heldIn("us-east/cpu"); got != 60 {
			t.Errorf("an oversold pool sold more: teams hold %d", got)
		}
	})
}

// A cluster larger than configured (hardware added before operators record it) is
// sold as measured: holdings above the configured capacity are no broken invariant
// for verify, while holdings beyond 4 times it would be.
func TestAPoolMeasuredAboveConfiguredIsSoldAndVerifies(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		mk.measure("us-east/cpu", 130)
		id := mk.nextAuction() // the open auction's supply was fixed at opening; it never rises
		if got := mk.supply(id, "us-east/cpu"); got != 70 {
			t.Fatalf("supply %d, want 70 (130 measured less 60 held)", got)
		}
		if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(500), Bundles: []exchange.Bundle{{"us-east/cpu": 70}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.Close(ctx, id); err != nil {
			t.Fatal(err)
		}
		if got := mk.heldIn("us-east/cpu"); got != 130 {
			t.Fatalf("teams hold %d, want the measured 130", got)
		}
		if vs, err := mk.M.Verify(ctx); err != nil || len(vs) != 0 {
			t.Fatalf("verify on holdings within the measured capacity: %+v %v", vs, err)
		}
		spec := exchange.PoolSpec{Unit: "core", Capacity: 100, UnitCost: 2 * ledger.Dollar, Utilization: 0.8, CurveID: "standard"}
		if _, err := mk.M.UpdatePool(ctx, "us-east/cpu", spec); err != nil {
			t.Errorf("a new unit cost on a pool holding more than its unchanged configured capacity: %v", err)
		}
		spec.Capacity = 99
		if _, err := mk.M.UpdatePool(ctx, "us-east/cpu", spec); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
			t.Errorf("lowering the configured capacity further below holdings: %v, want a conflict", err)
		}
		if err := db.Write.Exec("UPDATE holdings SET quantity = 341 WHERE team_id = 'search' AND pool_id = 'us-east/cpu'").Error; err != nil {
			t.Fatal(err)
		}
		if vs, err := mk.M.Verify(ctx); err != nil || len(vs) != 1 || vs[0].Check != "holdings within capacity" {
			t.Fatalf("verify on 401 held of a configured 100: %+v %v", vs, err)
		}
	})
}

func TestCapacityModelsMatchSchema(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		storetest.AssertModelsMatchSchema(t, db, &exchange.CapacityOverrideEvent{})
	})
}
