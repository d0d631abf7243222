// Package demo fills an empty database with the demonstration market that
// `clearhouse serve --demo` shows: three clusters with their pools, twelve teams
// with budgets and quota, the demo logins, a week of daily auctions replayed on a
// settable clock (the last one open), two weeks of measured usage, short-term
// reservations and a day of best-effort jobs on idle capacity. It works through the
// application's services, which the caller passes in Services, so what it writes
// is what those services would have written.
package demo

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
)

// Services are the running application's services the seed works through, and
// the settings it needs.
type Services struct {
	DB            *store.DB
	Ledger        *ledger.Ledger
	Market        *exchange.Market
	Identity      *identity.Identity
	BestEffort    *besteffort.Service
	Now           func() time.Time
	AuctionWindow time.Duration // how long an auction stays open
	AuctionEvery  time.Duration // how often auctions are scheduled (0: not scheduled)
	DBName        string        // the --db the server runs on, named in the sign-in help (a URL never is)
}

// replayClock is a settable clock for replaying the demo market's history.
type replayClock struct{ t time.Time }

func (c *replayClock) now() time.Time { return c.t }

// Seed fills an empty database with a small market: three clusters, twelve teams
// with budgets and quota, a week of settled auctions, and an open auction with
// orders in it. It prints the demo logins (with fresh passwords) to out. A database
// that already has teams is left alone.
func Seed(ctx context.Context, s Services, out io.Writer) error {
	teams, err := s.Market.Teams(ctx)
	if err != nil {
		return err
	}
	if len(teams) > 0 {
		fmt.Fprintln(out, "The database already has a market; the demo data was not added.")
		return signInHelp(ctx, s, out)
	}
	now := s.Now().UTC().Truncate(time.Minute)
	clock := &replayClock{t: now.Add(-7 * 24 * time.Hour)}
	l := ledger.New(s.DB, clock.now)
	m := exchange.NewMarket(s.DB, l, clock.now)
	m.UseQuotaCommitments(fleet.NewReservations(s.DB, l, clock.now, fleet.DefaultPlanConfig))
	if err := addPools(ctx, m); err != nil {
		return err
	}
	if err := addTeams(ctx, m); err != nil {
		return err
	}
	pools, err := m.Pools(ctx)
	if err != nil {
		return err
	}
	if err := seedUsage(ctx, s.DB, pools, now); err != nil {
		return err
	}
	util := fleet.NewUtilization(s.DB, clock.now, fleet.DefaultUtilizationConfig)
	m.UseMeasuredUtilization(util) // reserve prices and settled trades use measured psi
	if err := addShapes(ctx, m); err != nil {
		return err
	}
	logins, users, err := addUsers(ctx, s.DB, clock.now, s.Identity)
	if err != nil {
		return err
	}
	if err := setHoldingCharges(ctx, m); err != nil {
		return err
	}
	if err := replayAuctions(ctx, m, util, clock, now, s.AuctionWindow, BidWindow(s.AuctionWindow, s.AuctionEvery), users); err != nil {
		return err
	}
	if err := seedReservations(ctx, s, users, now); err != nil {
		return err
	}
	if err := seedBestEffort(ctx, s, users); err != nil {
		return err
	}
	printLogins(out, logins)
	return nil
}

// addPools adds the pricing curves, the three clusters and their four pools each,
// with the fixed reference price the statistics compare auction prices with.
func addPools(ctx context.Context, m *exchange.Market) error {
	if _, err := m.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve); err != nil {
		return err
	}
	if _, err := m.SaveCurve(ctx, "gpu", "Scarce accelerators", auction.CurveSpec{Kind: "parametric", K: 8, Threshold: 0.7, Gamma: 2.5}); err != nil {
		return err
	}
	type poolDef struct {
		res, unit string
		capacity  int64
		cost      ledger.Money
		curve     string
	}
	defs := []poolDef{{"cpu", "core", 4000, 2 * ledger.Dollar, "standard"}, {"ram", "GiB", 16000, 250_000, "standard"},
		{"disk", "TiB", 2000, 4 * ledger.Dollar, "standard"}, {"gpu", "GPU", 64, 90 * ledger.Dollar, "gpu"}}
	utilization := map[string]float64{"us-east": 0.93, "eu-west": 0.71, "ap-south": 0.42}
	for _, cl := range []exchange.Cluster{{ID: "us-east", Name: "US East", Region: "Virginia"}, {ID: "eu-west", Name: "EU West", Region: "Dublin"}, {ID: "ap-south", Name: "AP South", Region: "Mumbai"}} {
		if _, err := m.AddCluster(ctx, cl); err != nil {
			return err
		}
		for _, d := range defs {
			if _, err := m.AddPool(ctx, exchange.PoolSpec{ClusterID: cl.ID, Resource: d.res, Unit: d.unit, Capacity: d.capacity,
				UnitCost: d.cost, Utilization: utilization[cl.ID], CurveID: d.curve}); err != nil {
				return err
			}
			// The fixed price the statistics compare auction prices with: cost plus half.
			if err := m.SetReferencePrice(ctx, cl.ID+"/"+d.res, int64(d.cost)*3/2); err != nil {
				return err
			}
		}
	}
	return nil
}

// addTeams adds the twelve teams with their budgets (ML training's orders above
// $20,000 need its owner's approval) and grants some of them quota.
func addTeams(ctx context.Context, m *exchange.Market) error {
	budgets := map[string]ledger.Money{"search": 250_000 * ledger.Dollar, "ads": 120_000 * ledger.Dollar, "ml": 400_000 * ledger.Dollar,
		"infra": 80_000 * ledger.Dollar, "maps": 90_000 * ledger.Dollar, "mail": 60_000 * ledger.Dollar, "video": 180_000 * ledger.Dollar,
		"payments": 70_000 * ledger.Dollar, "identity": 40_000 * ledger.Dollar, "storage": 150_000 * ledger.Dollar,
		"analytics": 110_000 * ledger.Dollar, "security": 50_000 * ledger.Dollar}
	names := map[string]string{"search": "Search", "ads": "Ads ranking", "ml": "ML training", "infra": "Infrastructure",
		"maps": "Maps", "mail": "Mail", "video": "Video", "payments": "Payments", "identity": "Identity", "storage": "Storage",
		"analytics": "Analytics", "security": "Security"}
	for _, id := range []string{"ads", "analytics", "identity", "infra", "mail", "maps", "ml", "payments", "search", "security", "storage", "video"} {
		nt := exchange.NewTeam{ID: id, Name: names[id], Budget: budgets[id]}
		if id == "ml" {
			nt.ApprovalThreshold = int64(20_000 * ledger.Dollar)
		}
		if _, err := m.AddTeam(ctx, nt); err != nil {
			return err
		}
	}
	for _, g := range []struct {
		team, pool string
		q          int64
	}{{"ads", "us-east/cpu", 1200}, {"ads", "us-east/ram", 4800}, {"infra", "us-east/cpu", 800}, {"infra", "eu-west/cpu", 600},
		{"search", "eu-west/cpu", 900}, {"search", "eu-west/ram", 3600}, {"ml", "us-east/gpu", 16},
		{"storage", "us-east/disk", 900}, {"storage", "eu-west/disk", 600}, {"video", "ap-south/cpu", 500}, {"video", "us-east/disk", 300},
		{"analytics", "eu-west/cpu", 400}, {"maps", "ap-south/ram", 2000}, {"mail", "eu-west/ram", 1200}} {
		if err := m.GrantQuota(ctx, g.team, g.pool, g.q); err != nil {
			return err
		}
	}
	return nil
}

// addShapes saves the named shapes (bundles of resources) orders can be written in.
func addShapes(ctx context.Context, m *exchange.Market) error {
	for _, sh := range []exchange.Shape{
		{ID: "storage-server", Name: "storage server", Description: "a storage node of the distributed file system", Items: map[string]int64{"cpu": 4, "ram": 16, "disk": 2}},
		{ID: "web-server", Name: "web server", Description: "a front-end serving replica", Items: map[string]int64{"cpu": 8, "ram": 32}},
		{ID: "training-node", Name: "training node", Description: "one accelerator host for model training", Items: map[string]int64{"gpu": 4, "cpu": 32, "ram": 256}},
	} {
		if _, err := m.SaveShape(ctx, sh); err != nil {
			return err
		}
	}
	return nil
}

// addUsers adds the demo logins with fresh random passwords, hashed at the cost of
// the server's identity service (production's unless a test lowered it). It returns
// the logins (with their passwords, to print) and the users by "team/role".
func addUsers(ctx context.Context, db *store.DB, now func() time.Time, server *identity.Identity) ([]identity.NewUser, map[string]identity.User, error) {
	pw := func() string {
		var b [12]byte
		_, _ = crand.Read(b[:])
		return base64.RawURLEncoding.EncodeToString(b[:])
	}
	logins := Logins()
	cost := 0
	if server != nil {
		cost = server.HashCost()
	}
	id := identity.NewIdentity(db, now, cost)
	users := map[string]identity.User{}
	for i := range logins {
		logins[i].Password = pw()
		u, err := id.AddUser(ctx, logins[i])
		if err != nil {
			return nil, nil, err
		}
		users[u.TeamID+"/"+string(u.Role)] = u
	}
	return logins, users, nil
}

// replayAuctions runs a week of daily auctions on the replay clock, each with a
// day's orders, closed and settled; then opens today's, with its orders and a
// preview. The clock ends at the last auction's opening, now.
func replayAuctions(ctx context.Context, m *exchange.Market, util *fleet.Utilization, clock *replayClock, now time.Time,
	window, openWindow time.Duration, users map[string]identity.User) error {
	rng := rand.New(rand.NewPCG(7, 11))
	for day := 7; day >= 0; day-- {
		clock.t = now.Add(-time.Duration(day) * 24 * time.Hour)
		// The hourly job charges the month under way: the first day's run the rest of
		// the month the rates were set in (pro rata), a later month once it begins.
		if _, err := m.ChargeHolding(ctx, clock.t); err != nil {
			return err
		}
		window := window
		if day == 0 { // the auction open now: long enough to try bidding after arriving
			window = openWindow
		}
		au, err := m.ScheduleAuction(ctx, clock.t, clock.t.Add(window), auction.DefaultParams)
		if err != nil {
			return err
		}
		if _, err := util.Refresh(ctx); err != nil {
			return err
		}
		if _, err := m.OpenDue(ctx); err != nil {
			return err
		}
		if err := placeOrders(ctx, m, users, rng); err != nil {
			return err
		}
		if day == FinalRoundDay {
			if err := placeFinalRoundOrders(ctx, m, users); err != nil {
				return err
			}
		}
		if day == 0 {
			_, err := m.Preview(ctx, au.ID)
			return err
		}
		clock.t = au.ClosesAt
		if _, err := m.Close(ctx, au.ID); err != nil {
			return err
		}
	}
	return nil
}

// DemoHoldingRates are the demo's holding charges per unit and month, by pool:
// US East's pools and every GPU pool, so spend splits by cluster and pool.
var DemoHoldingRates = map[string]ledger.Money{
	"us-east/cpu": 40_000, "us-east/ram": 5_000, "us-east/disk": 80_000, "us-east/gpu": 1_800_000,
	"eu-west/gpu": 1_500_000, "ap-south/gpu": 1_200_000,
}

// setHoldingCharges sets the demo's holding charges at the start of the replayed
// week, through the operators' own call: each applies from that day.
func setHoldingCharges(ctx context.Context, m *exchange.Market) error {
	for pool, rate := range DemoHoldingRates {
		if _, err := m.SetHoldingCharge(ctx, pool, rate); err != nil {
			return err
		}
	}
	return nil
}

// printLogins tells how to sign in: every demo login with its fresh password.
func printLogins(out io.Writer, logins []identity.NewUser) {
	fmt.Fprintln(out, "Demo market ready. Sign in as any of these (passwords are new each time the demo is made):")
	for _, u := range logins {
		team := ""
		if u.TeamID != "" {
			team = " of " + u.TeamID
		}
		fmt.Fprintf(out, "  %-28s %-24s %s%s\n", u.Email, u.Password, u.Role, team)
	}
}

// placeOrders places a day's worth of bids and offers.
func placeOrders(ctx context.Context, m *exchange.Market, users map[string]identity.User, rng *rand.Rand) error {
	jitter := func(base float64) *ledger.Money {
		v, _ := ledger.FromDollars(base * (0.8 + 0.5*rng.Float64()))
		return &v
	}
	orders := []struct {
		who  string
		spec exchange.OrderSpec
	}{
		{"search/owner", exchange.OrderSpec{Team: "search", Limit: jitter(1100),
			Bundles: []exchange.Bundle{{"us-east/cpu": 200, "us-east/ram": 800}, {"eu-west/cpu": 200, "eu-west/ram": 800}}}},
		{"search/member", exchange.OrderSpec{Team: "search", Limit: jitter(700),
			Bundles: []exchange.Bundle{{"ap-south/cpu": 300}, {"eu-west/cpu": 300}}}},
		{"ml/owner", exchange.OrderSpec{Team: "ml", Limits: []ledger.Money{*jitter(2600), *jitter(2000)},
			Bundles: []exchange.Bundle{{"us-east/gpu": 24}, {"eu-west/gpu": 24}}}},
		{"ml/owner", exchange.OrderSpec{Team: "ml", Limit: jitter(1500), Bundles: []exchange.Bundle{{"us-east/cpu": 400, "us-east/ram": 1600}, {"ap-south/cpu": 400, "ap-south/ram": 1600}}}},
		{"ads/member", exchange.OrderSpec{Team: "ads", Limit: jitter(-150), Bundles: []exchange.Bundle{{"us-east/cpu": -100}}}},
		{"ads/member", exchange.OrderSpec{Team: "ads", Limit: jitter(300), Bundles: []exchange.Bundle{{"eu-west/cpu": 150}}}},
		{"storage/owner", exchange.OrderSpec{Team: "storage", Limit: jitter(-700), Bundles: []exchange.Bundle{{"us-east/disk": -100}}}},
		{"analytics/owner", exchange.OrderSpec{Team: "analytics", Limit: jitter(900), Bundles: []exchange.Bundle{{"us-east/disk": 80, "us-east/cpu": 100}, {"eu-west/disk": 80, "eu-west/cpu": 100}}}},
		{"video/owner", exchange.OrderSpec{Team: "video", Limit: jitter(120), Bundles: []exchange.Bundle{{"ap-south/cpu": -50, "eu-west/cpu": 50}}}},
	}
	for _, o := range orders {
		_, err := m.PlaceOrder(ctx, users[o.who], o.spec)
		if clearhouse.ErrorCode(err) == clearhouse.EUNPROCESSABLE {
			continue // a team that already sold its quota or spent its budget sits this one out
		} else if err != nil {
			return err
		}
	}
	return nil
}

// FinalRoundDay is the day of the replayed week (days before now) whose auction
// the final round settles differently from the clock (placeFinalRoundOrders).
const FinalRoundDay = 4

// placeFinalRoundOrders places three orders in AP South's GPU and disk pools (64
// GPUs and 2,000 TiB, which no other demo order bids for) whose best allocation
// the clock misses, so the demo shows a final round that changes the clock's
// allocation, its core payment and its supporting prices. Analytics wants 40 GPUs
// with 1,200 TiB for $9,000; ML 30 GPUs for $3,900 ($130 each); Storage 1,000 TiB
// for $4,000 ($4 each). Each pool is wanted by more than its supply, so the clock
// raises both prices; Analytics' bundle at ML's and Storage's per-unit values
// costs $10,000, more than its limit, so it drops out before both of them do, and
// the clock ends with one of them winning and the other pool unsold. The final
// round gives Analytics its bundle: above reserve (about $38.37 a GPU and $2.12 a
// TiB) it is worth about $4,900, ML and Storage together about $4,600.
func placeFinalRoundOrders(ctx context.Context, m *exchange.Market, users map[string]identity.User) error {
	limit := func(d ledger.Money) *ledger.Money { return &d }
	for _, o := range []struct {
		who  string
		spec exchange.OrderSpec
	}{
		{"analytics/owner", exchange.OrderSpec{Team: "analytics", Limit: limit(9_000 * ledger.Dollar),
			Bundles: []exchange.Bundle{{"ap-south/gpu": 40, "ap-south/disk": 1200}}}},
		{"ml/owner", exchange.OrderSpec{Team: "ml", Limit: limit(3_900 * ledger.Dollar), Bundles: []exchange.Bundle{{"ap-south/gpu": 30}}}},
		{"storage/owner", exchange.OrderSpec{Team: "storage", Limit: limit(4_000 * ledger.Dollar), Bundles: []exchange.Bundle{{"ap-south/disk": 1000}}}},
	} {
		if _, err := m.PlaceOrder(ctx, users[o.who], o.spec); err != nil {
			return err
		}
	}
	return nil
}

// demoOpenWindow is how long the demo's open auction takes bids: someone who starts
// the demo, reads the help and signs in as a few roles still finds it open. It is
// never shorter than --auction-window, nor longer than --auction-every allows.
const demoOpenWindow = 4 * time.Hour

// BidWindow is how long the demo's open auction takes bids, given the server's
// auction window and interval.
func BidWindow(window, every time.Duration) time.Duration {
	w := max(window, demoOpenWindow)
	if every > 0 {
		w = min(w, every)
	}
	return w
}
