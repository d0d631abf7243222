// Package fleettest builds busy reservation plans for the benchmarks of any package:
// a cluster with many accepted reservations, and the reports its agents send. It
// depends on the services and on storetest, never on the web layer or the binary.
package fleettest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// Cluster is the cluster a busy plan is made in; its pools are Cluster/r0 to
// Cluster/r9.
const Cluster = "big"

// Busy is a market whose one cluster holds a plan of many accepted reservations.
type Busy struct {
	DB           *store.DB
	Market       *exchange.Market
	Reservations *fleet.Reservations
	Identity     *identity.Identity
	Users        []identity.User // the members of the 50 teams, one each
	Clock        *storetest.Clock
}

// NewBusy makes, in db, a plan of n accepted reservations from 50 teams over the 10
// pools of cluster Cluster (a million units each), spread over the next two days,
// half inside the teams' quota (each team holds 1,000 units of one pool).
func NewBusy(tb testing.TB, db *store.DB, n int) Busy {
	tb.Helper()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Epoch)
	l := ledger.New(db, clock.Now)
	m := exchange.NewMarket(db, l, clock.Now)
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	_, err := m.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve)
	must(err)
	_, err = m.AddCluster(ctx, exchange.Cluster{ID: Cluster})
	must(err)
	for p := range 10 {
		_, err := m.AddPool(ctx, exchange.PoolSpec{ClusterID: Cluster, Resource: fmt.Sprintf("r%d", p), Unit: "unit",
			Capacity: 1_000_000, UnitCost: ledger.Dollar, Utilization: 0.5, CurveID: "standard"})
		must(err)
	}
	id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
	users := make([]identity.User, 50)
	for t := range users {
		team := fmt.Sprintf("team-%02d", t)
		_, err := m.AddTeam(ctx, exchange.NewTeam{ID: team, Budget: 1e9 * ledger.Dollar})
		must(err)
		users[t], err = id.AddUser(ctx, identity.NewUser{Email: team + "@x.io", Role: identity.RoleMember, TeamID: team})
		must(err)
		must(m.GrantQuota(ctx, team, Pool(t%10), 1000))
	}
	r := fleet.NewReservations(db, l, clock.Now, fleet.DefaultPlanConfig)
	for i := range n {
		u := users[i%len(users)]
		from := time.Duration(i%48) * time.Hour
		d := fleet.Definition{Value: 1000 * ledger.Dollar, Requests: []fleet.RequestSpec{{
			Configuration: map[string]int64{Pool(i % 10): 2, Pool((i + 1) % 10): 8},
			Count:         int64(5 + i%20), Duration: time.Duration(1+i%4) * time.Hour,
			Arrival: clock.Now().Add(from), Deadline: clock.Now().Add(from + 12*time.Hour)}}}
		v, err := r.Reserve(ctx, u, d)
		must(err)
		if v.Status != fleet.ReservationAccepted {
			tb.Fatalf("reservation %d: %s", i, v.Note)
		}
	}
	return Busy{DB: db, Market: m, Reservations: r, Identity: id, Users: users, Clock: clock}
}

// Pool is the id of the busy cluster's pool number p.
func Pool(p int) string { return fmt.Sprintf("%s/r%d", Cluster, p) }

// Report is the i-th report of the busy cluster's agent, as r plans it now: the
// usage of the first eight running requests (none on even i, all their units on odd
// i) and pool i%10's capacity for an hour three days ahead.
func Report(tb testing.TB, r *fleet.Reservations, clock *storetest.Clock, i int) fleet.AgentReport {
	tb.Helper()
	alloc, err := r.Allocation(context.Background(), Cluster)
	if err != nil {
		tb.Fatal(err)
	}
	var rep fleet.AgentReport
	for k, a := range alloc.Running {
		if k >= 8 {
			break
		}
		for pool, per := range a.Configuration {
			rep.Usage = append(rep.Usage, fleet.UsageReport{Reservation: a.Reservation, Request: a.Request, Pool: pool, Units: per * a.Count * int64(i%2)})
		}
	}
	from := clock.Now().Add(72 * time.Hour)
	rep.Capacity = []fleet.CapacityReport{{Pool: Pool(i % 10), From: from, To: from.Add(time.Hour), Units: 1_000_000}}
	return rep
}
