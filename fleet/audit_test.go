package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/audit/audittest"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// TestPolicyChangesLeaveOneTrailRow: the over-limit policy and a pool's pricing
// policy each record one row with the values before and after, and none when the
// policy is refused.
func TestPolicyChangesLeaveOneTrailRow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := audit.WithActor(context.Background(), audit.Actor{Kind: audit.KindUser, UserID: 5, Email: "op@x.io"})

		mark := audittest.Mark(t, db)
		if err := pl.r.SetOverLimitPolicy(ctx, fleet.OverLimitPolicy{Action: "kill", Grace: time.Minute}); err == nil {
			t.Fatal("a bad over-limit policy was accepted")
		}
		if _, err := pl.r.SetPolicy(ctx, fleet.PricingPolicy{PoolID: "us-east/cpu", Algorithm: "guess", Predictor: "seasonal"}); err == nil {
			t.Fatal("a bad pricing policy was accepted")
		}
		if rows := audittest.After(t, db, mark); len(rows) != 0 {
			t.Fatalf("refused policies recorded %d rows", len(rows))
		}
		if err := pl.r.SetOverLimitPolicy(ctx, fleet.OverLimitPolicy{Action: fleet.OverLimitEvict, Grace: 5 * time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, err := pl.r.SetPolicy(ctx, fleet.PricingPolicy{PoolID: "us-east/cpu", Algorithm: "econ", Predictor: "seasonal", UnitPrice: 20_000}); err != nil {
			t.Fatal(err)
		}
		rows := audittest.After(t, db, mark)
		if len(rows) != 2 {
			t.Fatalf("%d rows; want the two policy changes", len(rows))
		}
		want := []struct{ action, object, before, after string }{
			{"over_limit.policy", "over-limit policy", `{"action":"report","grace_seconds":600}`, `{"action":"evict","grace_seconds":300}`},
			{"pool.pricing_policy", "pool:us-east/cpu", `{"algorithm":"greedy","predictor":"seasonal","unit_price":10000}`, `{"algorithm":"econ","predictor":"seasonal","unit_price":20000}`},
		}
		for i, w := range want {
			r := rows[i]
			if r.Action != w.action || r.Object != w.object || r.BeforeJSON != w.before || r.AfterJSON != w.after || r.Actor != "user 5 op@x.io" {
				t.Errorf("row %d = %s %s by %q\n before %s\n after  %s\nwant %+v", i, r.Action, r.Object, r.Actor, r.BeforeJSON, r.AfterJSON, w)
			}
		}
	})
}

// TestUtilizationChangesLeaveOneTrailRow: a pool's measured-utilization policy, its
// override and the override's clearing each record one row; refused changes and a
// clear with no override record none.
func TestUtilizationChangesLeaveOneTrailRow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newUsaged(t, db)
		ctx := audit.WithActor(context.Background(), audit.Actor{Kind: audit.KindUser, UserID: 5, Email: "op@x.io"})
		mark := audittest.Mark(t, db)
		if err := x.u.SetPolicy(ctx, "us-east/cpu", 80, 7); err == nil {
			t.Fatal("percentile 80 was accepted")
		}
		if err := x.u.Override(ctx, "us-east/cpu", 1.5, "why", x.Clock.Now().Add(time.Hour), "op"); err == nil {
			t.Fatal("psi 1.5 was accepted")
		}
		if err := x.u.ClearOverride(ctx, "us-east/cpu"); err != nil {
			t.Fatal(err)
		}
		if rows := audittest.After(t, db, mark); len(rows) != 0 {
			t.Fatalf("refused or empty changes recorded %d rows", len(rows))
		}
		if err := x.u.SetPolicy(ctx, "us-east/cpu", 99, 3); err != nil {
			t.Fatal(err)
		}
		if err := x.u.Override(ctx, "us-east/cpu", 0.3, "drain", x.Clock.Now().Add(2*time.Hour), "op"); err != nil {
			t.Fatal(err)
		}
		if err := x.u.ClearOverride(ctx, "us-east/cpu"); err != nil {
			t.Fatal(err)
		}
		rows := audittest.After(t, db, mark)
		want := []struct{ action, before, after string }{
			{"pool.utilization_policy", `{"percentile":95,"window_days":7}`, `{"percentile":99,"window_days":3}`},
			{"pool.utilization_override", "", `{"expires":"2026-03-02T11:00:00Z","psi":0.3,"reason":"drain"}`},
			{"pool.utilization_clear", `{"expires":"2026-03-02T11:00:00Z","psi":0.3,"reason":"drain"}`, ""},
		}
		if len(rows) != len(want) {
			t.Fatalf("%d rows; want %d", len(rows), len(want))
		}
		for i, w := range want {
			r := rows[i]
			if r.Action != w.action || r.Object != "pool:us-east/cpu" || r.BeforeJSON != w.before || r.AfterJSON != w.after {
				t.Errorf("row %d = %s %s\n before %s\n after  %s\nwant %+v", i, r.Action, r.Object, r.BeforeJSON, r.AfterJSON, w)
			}
		}
	})
}
