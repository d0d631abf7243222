// Package exchangetest builds small markets for the tests of exchange and of the
// packages built on it (fleet, web): a fresh database per test, a fixed clock,
// known teams, users and pools, and an open auction.
package exchangetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// Market is a small market with an open auction: cluster us-east with cpu (100
// cores, $1 each) and ram; cluster eu-west with cpu; teams search ($1,000), ads
// ($500, holding 60 us-east cores) and ml ($2,000, approval above $300), each with a
// member and an owner named "member@team" and "owner@team" in Users.
type Market struct {
	T         testing.TB
	DB        *store.DB
	Clock     *storetest.Clock
	M         *exchange.Market
	L         *ledger.Ledger
	Users     map[string]identity.User
	AuctionID int64
}

// NewAuctionMarket builds the market on db, with its clock at storetest.Epoch and
// the auction open for an hour.
func NewAuctionMarket(t testing.TB, db *store.DB) *Market {
	t.Helper()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Epoch)
	l := ledger.New(db, clock.Now)
	mk := &Market{T: t, DB: db, Clock: clock, L: l, M: exchange.NewMarket(db, l, clock.Now), Users: map[string]identity.User{}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := mk.M.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve)
	must(err)
	for _, c := range []string{"us-east", "eu-west"} {
		_, err := mk.M.AddCluster(ctx, exchange.Cluster{ID: c})
		must(err)
	}
	for _, p := range []exchange.PoolSpec{
		{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 100, UnitCost: ledger.Dollar, Utilization: 0.8, CurveID: "standard"},
		{ClusterID: "us-east", Resource: "ram", Unit: "GiB", Capacity: 400, UnitCost: 100_000, Utilization: 0.8, CurveID: "standard"},
		{ClusterID: "eu-west", Resource: "cpu", Unit: "core", Capacity: 100, UnitCost: ledger.Dollar, Utilization: 0.8, CurveID: "standard"},
	} {
		_, err := mk.M.AddPool(ctx, p)
		must(err)
	}
	id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
	for _, tm := range []exchange.NewTeam{{ID: "search", Budget: 1000 * ledger.Dollar}, {ID: "ads", Budget: 500 * ledger.Dollar},
		{ID: "ml", Budget: 2000 * ledger.Dollar, ApprovalThreshold: int64(300 * ledger.Dollar)}} {
		_, err := mk.M.AddTeam(ctx, tm)
		must(err)
		for _, role := range []identity.Role{identity.RoleMember, identity.RoleOwner} {
			u, err := id.AddUser(ctx, identity.NewUser{Email: string(role) + "@" + tm.ID + ".io", Role: role, TeamID: tm.ID})
			must(err)
			mk.Users[string(role)+"@"+tm.ID] = u
		}
	}
	must(mk.M.GrantQuota(ctx, "ads", "us-east/cpu", 60))
	a, err := mk.M.ScheduleAuction(ctx, clock.Now(), clock.Now().Add(time.Hour), auction.DefaultParams)
	must(err)
	mk.AuctionID = a.ID
	rep, err := mk.M.Tick(ctx, exchange.Cadence{PreviewEvery: time.Minute})
	must(err)
	if len(rep.Opened) != 1 {
		t.Fatalf("Tick opened %v, want the auction", rep.Opened)
	}
	return mk
}

// Money is d dollars as a pointer, for specs' optional limits.
func Money(d float64) *ledger.Money {
	m, _ := ledger.FromDollars(d)
	return &m
}

// Order places spec as the user named who ("member@search").
func (mk *Market) Order(who string, spec exchange.OrderSpec) (exchange.Order, error) {
	return mk.M.PlaceOrder(context.Background(), mk.Users[who], spec)
}

// Balance is a team's budget balance; it fails the test on error.
func (mk *Market) Balance(team string) ledger.Balance {
	mk.T.Helper()
	b, err := mk.L.Balance(context.Background(), ledger.TeamAccount(team))
	if err != nil {
		mk.T.Fatal(err)
	}
	return b
}

// Holding is the quota team holds in pool (0 for none).
func (mk *Market) Holding(team, pool string) int64 {
	mk.T.Helper()
	hs, err := mk.M.Holdings(context.Background(), team)
	if err != nil {
		mk.T.Fatal(err)
	}
	for _, h := range hs {
		if h.PoolID == pool {
			return h.Quantity
		}
	}
	return 0
}

// Violations runs the ledger's and the market's invariant checks.
func (mk *Market) Violations() []ledger.Violation {
	mk.T.Helper()
	ctx := context.Background()
	vs, err := mk.L.Verify(ctx)
	if err != nil {
		mk.T.Fatal(err)
	}
	more, err := mk.M.Verify(ctx)
	if err != nil {
		mk.T.Fatal(err)
	}
	return append(vs, more...)
}

// Verify fails the test naming every broken invariant.
func (mk *Market) Verify() {
	mk.T.Helper()
	for _, v := range mk.Violations() {
		mk.T.Error("violation:", v)
	}
}

// SeedOrders enters n open orders in auction directly, in bulk, as if each had
// been placed through PlaceOrder by the team's user by (with its money hold on the
// team's budget): a fixture for tests and benchmarks of very large auctions, where
// placing each order one by one would take minutes. spec(i) gives order i; it must
// be valid and only buy (quota is not set aside). Budgets must cover the holds.
func SeedOrders(tb testing.TB, db *store.DB, auction int64, n int, by func(i int) identity.User, spec func(i int) exchange.OrderSpec) {
	tb.Helper()
	const batch = 5000
	now := storetest.Epoch
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	held := map[string]ledger.Money{}
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		specs := make([]exchange.OrderSpec, hi-lo)
		holds := make([]ledger.Hold, hi-lo)
		for i := range specs {
			specs[i] = spec(lo + i)
			team := specs[i].Team
			holds[i] = ledger.Hold{Key: fmt.Sprintf("seed/%d/order/%d/hold", auction, lo+i), Account: ledger.TeamAccount(team),
				Amount: specs[i].MaxPayment(), Ref: "seeded", Status: ledger.HoldActive, CreatedAt: now}
			held[team] += specs[i].MaxPayment()
		}
		holdRows := make([][]any, len(holds))
		for i, h := range holds {
			holdRows[i] = []any{h.Key, string(h.Account), int64(h.Amount), h.Ref, string(h.Status), h.CreatedAt}
		}
		holdIDs, err := store.Insert(db.Write, "ledger_holds", []string{"idem_key", "account_id", "amount", "ref", "status", "created_at"}, holdRows, "id")
		must(err)
		orderRows := make([][]any, len(specs))
		for i, s := range specs {
			var limit *int64
			if s.Limit != nil {
				l := int64(*s.Limit)
				limit = &l
			}
			orderRows[i] = []any{s.Team, auction, by(lo + i).ID, string(exchange.OrderOpen), limit, holdIDs[i], now, now}
		}
		orderIDs, err := store.Insert(db.Write, "orders", []string{"team_id", "auction_id", "created_by", "status", "shared_limit", "hold_id", "created_at", "updated_at"}, orderRows, "id")
		must(err)
		var bundles, items [][]any
		for i, s := range specs {
			for k, b := range s.Bundles {
				var limit *int64
				if s.Limits != nil {
					l := int64(s.Limits[k])
					limit = &l
				}
				bundles = append(bundles, []any{orderIDs[i], k, limit})
				for pool, q := range b {
					items = append(items, []any{orderIDs[i], k, pool, q})
				}
			}
		}
		_, err = store.Insert(db.Write, "order_bundles", []string{"order_id", "idx", "bundle_limit"}, bundles, "")
		must(err)
		_, err = store.Insert(db.Write, "order_items", []string{"order_id", "bundle_idx", "pool_id", "quantity"}, items, "")
		must(err)
	}
	for team, amount := range held {
		must(db.Write.Exec("UPDATE ledger_accounts SET held = held + ? WHERE id = ?", amount, ledger.TeamAccount(team)).Error)
	}
}

// Big is a market for tests of scale: one cluster "big" with ten pools big/r0 to
// big/r9, teams team-000, team-001, ... each with $1,000,000 and an owner, and an
// open auction.
type Big struct {
	M         *exchange.Market
	L         *ledger.Ledger
	Clock     *storetest.Clock
	Users     []identity.User // the owner of each team, in team order
	AuctionID int64
}

// NewBig builds a Big market with teams teams and pools of capacity units each.
func NewBig(tb testing.TB, db *store.DB, teams int, capacity int64) *Big {
	tb.Helper()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Epoch)
	l := ledger.New(db, clock.Now)
	b := &Big{M: exchange.NewMarket(db, l, clock.Now), L: l, Clock: clock}
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	_, err := b.M.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve)
	must(err)
	_, err = b.M.AddCluster(ctx, exchange.Cluster{ID: "big"})
	must(err)
	for p := range 10 {
		_, err := b.M.AddPool(ctx, exchange.PoolSpec{ClusterID: "big", Resource: fmt.Sprintf("r%d", p), Unit: "unit",
			Capacity: capacity, UnitCost: ledger.Dollar, Utilization: 0.5, CurveID: "standard"})
		must(err)
	}
	must(b.M.SetLimits(ctx, exchange.Limits{OpenOrdersPerTeam: exchange.MaxOpenOrdersPerTeam, BundlesPerOrder: 4, PoolsPerBundle: 4}))
	id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
	b.Users = make([]identity.User, teams)
	for t := range b.Users {
		team := fmt.Sprintf("team-%03d", t)
		_, err := b.M.AddTeam(ctx, exchange.NewTeam{ID: team, Budget: 1_000_000 * ledger.Dollar})
		must(err)
		b.Users[t], err = id.AddUser(ctx, identity.NewUser{Email: team + "@x.io", Role: identity.RoleOwner, TeamID: team})
		must(err)
	}
	a, err := b.M.ScheduleAuction(ctx, clock.Now(), clock.Now().Add(time.Hour), auction.DefaultParams)
	must(err)
	_, err = b.M.OpenDue(ctx)
	must(err)
	b.AuctionID = a.ID
	return b
}

// Bid is order i of a Big market's usual mix: team i mod teams bids up to $50 for
// a few units of one pool or the next.
func (b *Big) Bid(i int) exchange.OrderSpec {
	limit := 50 * ledger.Dollar
	u := b.Users[i%len(b.Users)]
	return exchange.OrderSpec{Team: u.TeamID, Limit: &limit,
		Bundles: []exchange.Bundle{{fmt.Sprintf("big/r%d", i%10): int64(1 + i%5)}, {fmt.Sprintf("big/r%d", (i+1)%10): int64(1 + i%5)}}}
}

// Seed enters n orders of the usual mix in bulk (see SeedOrders).
func (b *Big) Seed(tb testing.TB, db *store.DB, n int) {
	tb.Helper()
	SeedOrders(tb, db, b.AuctionID, n, func(i int) identity.User { return b.Users[i%len(b.Users)] }, b.Bid)
}
