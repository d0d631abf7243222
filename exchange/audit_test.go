package exchange_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/audit/audittest"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// auditCase is one audited action of the market: set-up (not under test), the action
// refused for bad input (it must record nothing), the action itself (it must record
// exactly one row: action on object, before exactly as given, after containing each
// of the given parts), and, when repeat is set, the same call again, which changes
// and records nothing.
type auditCase struct {
	name           string
	setup          func(ctx context.Context, mk *exchangetest.Market) int64
	refused        func(ctx context.Context, mk *exchangetest.Market, id int64) error
	do             func(ctx context.Context, mk *exchangetest.Market, id int64) error
	repeat         bool
	action, object string
	before         string
	after          []string
}

func scheduleLater(ctx context.Context, mk *exchangetest.Market) int64 {
	a, err := mk.M.ScheduleAuction(ctx, mk.Clock.Now().Add(2*time.Hour), mk.Clock.Now().Add(3*time.Hour), auction.DefaultParams)
	if err != nil {
		mk.T.Fatal(err)
	}
	return a.ID
}

func bigOrder(ctx context.Context, mk *exchangetest.Market) int64 {
	o, err := mk.Order("member@ml", exchange.OrderSpec{Team: "ml", Limit: exchangetest.Money(900), Bundles: []exchange.Bundle{{"us-east/cpu": 30}}})
	if err != nil || o.Status != exchange.OrderAwaitingApproval {
		mk.T.Fatalf("ml's big order = %+v, %v", o, err)
	}
	return o.ID
}

var cpuSpec = exchange.PoolSpec{Unit: "core", Capacity: 120, UnitCost: ledger.Dollar, Utilization: 0.8, CurveID: "standard"}

var marketAuditCases = []auditCase{
	{name: "grant", action: "budget.grant", object: "team:search", repeat: true,
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.Grant(ctx, "g0", "search", -ledger.Dollar, "")
			return err
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.Grant(ctx, "g1", "search", 100*ledger.Dollar, "Q3")
			return err
		},
		before: `{"balance":1000000000}`, after: []string{`"balance":1100000000`, `"amount":100000000`, `"memo":"Q3"`}},
	{name: "take back", action: "budget.take_back", object: "team:search", repeat: true,
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.TakeBack(ctx, "t0", "search", 5000*ledger.Dollar, "") // more than it has
			return err
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.TakeBack(ctx, "t1", "search", 100*ledger.Dollar, "")
			return err
		},
		before: `{"balance":1000000000}`, after: []string{`"balance":900000000`, `"amount":-100000000`}},
	{name: "curve", action: "curve.save", object: "curve:standard",
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.SaveCurve(ctx, "standard", "", auction.CurveSpec{Kind: "no such kind"})
			return err
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.SaveCurve(ctx, "standard", "Standard, revised", auction.DefaultCurve)
			return err
		},
		before: `{"name":"Standard","spec":{`, after: []string{`"name":"Standard, revised"`}},
	{name: "pool add", action: "pool.add", object: "pool:eu-west/ram",
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.AddPool(ctx, exchange.PoolSpec{ClusterID: "eu-west", Resource: "ram", Unit: "GiB", Capacity: 10, CurveID: "no-such-curve"})
			return err
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.AddPool(ctx, exchange.PoolSpec{ClusterID: "eu-west", Resource: "ram", Unit: "GiB", Capacity: 10, Utilization: 0.5, CurveID: "standard"})
			return err
		},
		after: []string{`"capacity":10`, `"unit":"GiB"`}},
	{name: "pool update", action: "pool.update", object: "pool:us-east/cpu",
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			low := cpuSpec
			low.Capacity = 10 // ads holds 60
			_, err := mk.M.UpdatePool(ctx, "us-east/cpu", low)
			return err
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.UpdatePool(ctx, "us-east/cpu", cpuSpec)
			return err
		},
		before: `{"unit":"core","capacity":100,"unit_cost":1000000,"utilization":0.8,"curve":"standard"}`,
		after:  []string{`"capacity":120`}},
	{name: "capacity override", action: "pool.capacity_override", object: "pool:us-east/cpu",
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.OverrideCapacity(ctx, "us-east/cpu", -1, "maintenance", mk.Clock.Now().Add(24*time.Hour), "op")
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.OverrideCapacity(ctx, "us-east/cpu", 80, "maintenance", mk.Clock.Now().Add(24*time.Hour), "op")
		},
		after: []string{`"units":80`, `"reason":"maintenance"`}},
	{name: "capacity clear", action: "pool.capacity_clear", object: "pool:us-east/cpu", repeat: true,
		setup: func(ctx context.Context, mk *exchangetest.Market) int64 {
			if err := mk.M.OverrideCapacity(ctx, "us-east/cpu", 80, "maintenance", mk.Clock.Now().Add(24*time.Hour), "op"); err != nil {
				mk.T.Fatal(err)
			}
			return 0
		},
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.ClearCapacityOverride(ctx, "us-east/nope", "op")
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.ClearCapacityOverride(ctx, "us-east/cpu", "op")
		},
		before: `{"units":80,"reason":"maintenance","expires":"2026-03-03T09:00:00Z"}`},
	{name: "holding charge", action: "pool.holding_charge", object: "pool:us-east/cpu", repeat: true,
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.SetHoldingCharge(ctx, "us-east/cpu", -1)
			return err
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.SetHoldingCharge(ctx, "us-east/cpu", ledger.Dollar)
			return err
		},
		before: `{"rate":0}`, after: []string{`"rate":1000000`, `"applies_from":"2026-03-02T00:00:00Z"`}}, // a first rate applies from its day (pro rata)
	{name: "schedule", action: "auction.schedule", object: "auction:2",
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.ScheduleAuction(ctx, mk.Clock.Now().Add(3*time.Hour), mk.Clock.Now().Add(2*time.Hour), auction.DefaultParams)
			return err
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			scheduleLater(ctx, mk)
			return nil
		},
		after: []string{`"status":"scheduled"`, `"opens_at":"2026-03-02T11:00:00Z"`}},
	{name: "cancel", action: "auction.cancel", object: "auction:2", setup: scheduleLater,
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.CancelAuction(ctx, mk.AuctionID) // open: it cannot be cancelled
		},
		do: func(ctx context.Context, mk *exchangetest.Market, id int64) error {
			return mk.M.CancelAuction(ctx, id)
		},
		before: `{"closes_at":"2026-03-02T12:00:00Z","opens_at":"2026-03-02T11:00:00Z",`},
	{name: "close", action: "auction.close", object: "auction:1", setup: scheduleLater,
		refused: func(ctx context.Context, mk *exchangetest.Market, id int64) error {
			_, err := mk.M.Close(ctx, id) // not open yet
			return err
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.Close(ctx, mk.AuctionID)
			return err
		},
		repeat: true, before: `{"status":"open"}`, after: []string{`"status":"closing"`, `"closed_at":"2026-03-02T09:00:00Z"`}},
	{name: "retry", action: "auction.retry", object: "auction:1",
		// A halted auction (closing, with the failure that stopped its settlement)
		// is what a retry starts from; made here as the settlement's failure path
		// leaves it.
		setup: func(ctx context.Context, mk *exchangetest.Market) int64 {
			if err := mk.DB.Write.Model(&exchange.Auction{}).Where("id = ?", mk.AuctionID).
				Updates(map[string]any{"status": exchange.AuctionClosing, "failure": "the engine stopped", "closed_at": mk.Clock.Now()}).Error; err != nil {
				mk.T.Fatal(err)
			}
			return mk.AuctionID
		},
		refused: func(ctx context.Context, mk *exchangetest.Market, id int64) error {
			_, err := mk.M.Close(ctx, id+100) // no such auction
			return err
		},
		do: func(ctx context.Context, mk *exchangetest.Market, id int64) error {
			_, err := mk.M.Close(ctx, id)
			return err
		},
		before: `{"failure":"the engine stopped","status":"closing"}`, after: []string{`"status":"closing"`}},
	{name: "approve", action: "order.approve", object: "order:1", setup: bigOrder,
		refused: func(ctx context.Context, mk *exchangetest.Market, id int64) error {
			return mk.M.DecideOrder(ctx, mk.Users["member@ml"], id, true) // only an owner approves
		},
		do: func(ctx context.Context, mk *exchangetest.Market, id int64) error {
			return mk.M.DecideOrder(ctx, mk.Users["owner@ml"], id, true)
		},
		before: `{"status":"awaiting_approval","team":"ml"}`, after: []string{`"status":"open"`}},
	{name: "reject", action: "order.reject", object: "order:1", setup: bigOrder,
		refused: func(ctx context.Context, mk *exchangetest.Market, id int64) error {
			return mk.M.DecideOrder(ctx, mk.Users["owner@search"], id, false) // another team's order
		},
		do: func(ctx context.Context, mk *exchangetest.Market, id int64) error {
			return mk.M.DecideOrder(ctx, mk.Users["owner@ml"], id, false)
		},
		before: `{"status":"awaiting_approval","team":"ml"}`, after: []string{`"status":"rejected"`}},
	{name: "team", action: "team.add", object: "team:infra",
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.AddTeam(ctx, exchange.NewTeam{ID: "Not A Slug"})
			return err
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.AddTeam(ctx, exchange.NewTeam{ID: "infra", Budget: 50 * ledger.Dollar})
			return err
		},
		after: []string{`"budget":50000000`}},
	{name: "threshold", action: "team.approval_threshold", object: "team:search",
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.SetApprovalThreshold(ctx, "search", -1)
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.SetApprovalThreshold(ctx, "search", int64(5*ledger.Dollar))
		},
		before: `{"approval_threshold":0}`, after: []string{`{"approval_threshold":5000000}`}},
	{name: "quota grant", action: "quota.grant", object: "team:ads pool:eu-west/ram",
		setup: func(ctx context.Context, mk *exchangetest.Market) int64 { // a pool the open auction does not sell
			if _, err := mk.M.AddPool(ctx, exchange.PoolSpec{ClusterID: "eu-west", Resource: "ram", Unit: "GiB", Capacity: 10, Utilization: 0.5, CurveID: "standard"}); err != nil {
				mk.T.Fatal(err)
			}
			return 0
		},
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.GrantQuota(ctx, "ads", "eu-west/ram", 11) // more than it has
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.GrantQuota(ctx, "ads", "eu-west/ram", 4)
		},
		before: `{"held":0}`, after: []string{`"held":4`, `"granted":4`}},
	{name: "cluster add", action: "cluster.add", object: "cluster:ap-south",
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.AddCluster(ctx, exchange.Cluster{ID: "us-east"}) // taken
			return err
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			_, err := mk.M.AddCluster(ctx, exchange.Cluster{ID: "ap-south", Name: "Mumbai"})
			return err
		},
		after: []string{`"name":"Mumbai"`}},
	{name: "pool remove", action: "pool.remove", object: "pool:eu-west/ram",
		setup: func(ctx context.Context, mk *exchangetest.Market) int64 {
			if _, err := mk.M.AddPool(ctx, exchange.PoolSpec{ClusterID: "eu-west", Resource: "ram", Unit: "GiB", Capacity: 10, Utilization: 0.5, CurveID: "standard"}); err != nil {
				mk.T.Fatal(err)
			}
			return 0
		},
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.RemovePool(ctx, "us-east/cpu") // ads holds some, the auction sells it
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.RemovePool(ctx, "eu-west/ram")
		},
		before: `{"unit":"GiB","capacity":10,`},
	{name: "cluster remove", action: "cluster.remove", object: "cluster:ap-south",
		setup: func(ctx context.Context, mk *exchangetest.Market) int64 {
			if _, err := mk.M.AddCluster(ctx, exchange.Cluster{ID: "ap-south"}); err != nil {
				mk.T.Fatal(err)
			}
			return 0
		},
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.RemoveCluster(ctx, "us-east") // it has pools
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.RemoveCluster(ctx, "ap-south")
		},
		before: `{"id":"ap-south"}`},
	{name: "reference price", action: "pool.reference_price", object: "pool:us-east/cpu", repeat: true,
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.SetReferencePrice(ctx, "us-east/cpu", -1)
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.SetReferencePrice(ctx, "us-east/cpu", 2_000_000)
		},
		before: `{"price":0}`, after: []string{`{"price":2000000}`}},
	{name: "limits", action: "market.limits", object: "market",
		refused: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.SetLimits(ctx, exchange.Limits{})
		},
		do: func(ctx context.Context, mk *exchangetest.Market, _ int64) error {
			return mk.M.SetLimits(ctx, exchange.Limits{OpenOrdersPerTeam: 10, BundlesPerOrder: 4, PoolsPerBundle: 4})
		},
		before: `{"bundles_per_order":32,"open_orders_per_team":1000,"pools_per_bundle":32}`,
		after:  []string{`"open_orders_per_team":10`}},
}

// TestEveryMarketChangeLeavesOneTrailRow: each audited action of the market records
// exactly one row in its own transaction, with the actor and the values before and
// after; refused, it records none; repeated where a repeat changes nothing, it
// records nothing more. The trail stays whole.
func TestEveryMarketChangeLeavesOneTrailRow(t *testing.T) {
	for _, tc := range marketAuditCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				mk := exchangetest.NewAuctionMarket(t, db)
				ctx := audit.WithActor(context.Background(), audit.Actor{Kind: audit.KindUser, UserID: 77, Email: "op@x.io", Address: "192.0.2.7"})
				var id int64
				if tc.setup != nil {
					id = tc.setup(ctx, mk)
				}
				mark := audittest.Mark(t, db)
				if err := tc.refused(ctx, mk, id); err == nil {
					t.Fatal("the refused call succeeded")
				}
				if rows := audittest.After(t, db, mark); len(rows) != 0 {
					t.Fatalf("a refused %s recorded %d rows: %+v", tc.action, len(rows), rows)
				}
				if err := tc.do(ctx, mk, id); err != nil {
					t.Fatal(err)
				}
				if tc.repeat {
					_ = tc.do(ctx, mk, id) // a replay or a no-op
				}
				rows := audittest.After(t, db, mark)
				if len(rows) != 1 {
					t.Fatalf("%d rows; want one %s: %+v", len(rows), tc.action, rows)
				}
				r := rows[0]
				if r.Action != tc.action || r.Object != tc.object || r.Actor != "user 77 op@x.io" || r.Address != "192.0.2.7" || !r.At.Equal(mk.Clock.Now()) {
					t.Errorf("row = %s on %s by %q from %q at %v", r.Action, r.Object, r.Actor, r.Address, r.At)
				}
				if tc.before != "" && !strings.HasPrefix(r.BeforeJSON, tc.before) || tc.before == "" && r.BeforeJSON != "" {
					t.Errorf("before = %s; want %s", r.BeforeJSON, tc.before)
				}
				for _, part := range tc.after {
					if !strings.Contains(r.AfterJSON, part) {
						t.Errorf("after = %s; want it to contain %s", r.AfterJSON, part)
					}
				}
				if ps, err := audit.NewTrail(db).Verify(context.Background()); err != nil || len(ps) != 0 {
					t.Errorf("Verify = %v, %v", ps, err)
				}
			})
		})
	}
}
