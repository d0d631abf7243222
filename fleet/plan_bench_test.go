package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"golang.org/x/crypto/bcrypt"
)

// busyPlan is a plan with n accepted reservations from 50 teams over 10 pools of
// one cluster, spread over the next two days, half inside the teams' quota.
func busyPlan(b *testing.B, n int) (*exchange.Market, *fleet.Reservations, []exchange.User, *storetest.Clock) {
	b.Helper()
	_, m, r, users, clock := busyPlanOn(b, n)
	return m, r, users, clock
}

func busyPlanOn(b *testing.B, n int) (*store.DB, *exchange.Market, *fleet.Reservations, []exchange.User, *storetest.Clock) {
	b.Helper()
	ctx := context.Background()
	db := storetest.New(b)
	clock := storetest.NewClock(storetest.Epoch)
	l := ledger.New(db, clock.Now)
	m := exchange.NewMarket(db, l, clock.Now)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	_, err := m.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve)
	must(err)
	_, err = m.AddCluster(ctx, exchange.Cluster{ID: "big"})
	must(err)
	for p := range 10 {
		_, err := m.AddPool(ctx, exchange.PoolSpec{ClusterID: "big", Resource: fmt.Sprintf("r%d", p), Unit: "unit",
			Capacity: 1_000_000, UnitCost: int64(ledger.Dollar), Utilization: 0.5, CurveID: "standard"})
		must(err)
	}
	id := exchange.NewIdentity(db, clock.Now, bcrypt.MinCost)
	users := make([]exchange.User, 50)
	for t := range users {
		team := fmt.Sprintf("team-%02d", t)
		_, err := m.AddTeam(ctx, exchange.NewTeam{ID: team, Budget: 1e9 * ledger.Dollar})
		must(err)
		users[t], err = id.AddUser(ctx, exchange.NewUser{Email: team + "@x.io", Role: exchange.RoleMember, TeamID: team})
		must(err)
		must(m.GrantQuota(ctx, team, fmt.Sprintf("big/r%d", t%10), 1000))
	}
	r := fleet.NewReservations(db, l, clock.Now, fleet.DefaultPlanConfig)
	for i := range n {
		u := users[i%len(users)]
		from := time.Duration(i%48) * time.Hour
		d := fleet.Definition{Value: 1000 * ledger.Dollar, Requests: []fleet.RequestSpec{{
			Configuration: map[string]int64{fmt.Sprintf("big/r%d", i%10): 2, fmt.Sprintf("big/r%d", (i+1)%10): 8},
			Count:         int64(5 + i%20), Duration: time.Duration(1+i%4) * time.Hour,
			Arrival: clock.Now().Add(from), Deadline: clock.Now().Add(from + 12*time.Hour)}}}
		v, err := r.Reserve(ctx, u, d)
		must(err)
		if v.Status != fleet.ReservationAccepted {
			b.Fatalf("reservation %d: %s", i, v.Note)
		}
	}
	return db, m, r, users, clock
}

// BenchmarkPlanRebuild is what a server pays, once, after a settlement, an offer
// or another server's write: the engine rebuilt from the database.
func BenchmarkPlanRebuild(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("reservations=%d", n), func(b *testing.B) {
			m, r, _, _ := busyPlan(b, n)
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				if err := m.GrantQuota(ctx, "team-00", "big/r9", 1); err != nil { // moves the plan's version
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := r.Allocation(ctx, "big"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/rebuild")
		})
	}
}

// BenchmarkReserve is one reservation submitted, priced, held and planned, with
// 10,000 already in the plan.
func BenchmarkReserve(b *testing.B) {
	_, r, users, clock := busyPlan(b, 10000)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		d := fleet.Definition{Value: 1000 * ledger.Dollar, Requests: []fleet.RequestSpec{{
			Configuration: map[string]int64{"big/r3": 4}, Count: 10, Duration: time.Hour,
			Arrival: clock.Now().Add(time.Duration(i%24) * time.Hour), Deadline: clock.Now().Add(time.Duration(i%24+6) * time.Hour)}}}
		if _, err := r.Reserve(ctx, users[i%len(users)], d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/reservation")
}

// BenchmarkRestartWithLearnedPredictors is a server's first quote after a start,
// with 1,000 accepted reservations: the plan rebuilt and the learned predictors
// brought up to date, from a log of the 1,000 bids (log), or from the snapshot
// the daily tick folded them into (snapshot; its size is reported).
func BenchmarkRestartWithLearnedPredictors(b *testing.B) {
	for _, from := range []string{"log", "snapshot"} {
		b.Run("from="+from, func(b *testing.B) {
			db, _, r, users, clock := busyPlanOn(b, 1000)
			ctx := context.Background()
			if from == "snapshot" {
				clock.Advance(25 * time.Hour)
				if _, err := r.Tick(ctx); err != nil {
					b.Fatal(err)
				}
			}
			var size int64
			if err := db.Read.Raw("SELECT LENGTH(state) FROM predictor_state WHERE id = 1").Scan(&size).Error; err != nil {
				b.Fatal(err)
			}
			d := fleet.Definition{Requests: []fleet.RequestSpec{{Configuration: map[string]int64{"big/r3": 4}, Count: 10, Duration: time.Hour,
				Arrival: clock.Now(), Deadline: clock.Now().Add(6 * time.Hour)}}}
			b.ResetTimer()
			for range b.N {
				fresh := fleet.NewReservations(db, ledger.New(db, clock.Now), clock.Now, fleet.DefaultPlanConfig)
				if _, err := fresh.Quote(ctx, users[0], d); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/first-quote")
			b.ReportMetric(float64(size)/1024, "snapshot-KiB")
		})
	}
}
