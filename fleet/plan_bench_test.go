package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
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

// busyPlan is a plan with n accepted reservations from 50 teams over 10 pools of
// one cluster, spread over the next two days, half inside the teams' quota.
func busyPlan(b *testing.B, n int) (*exchange.Market, *fleet.Reservations, []identity.User, *storetest.Clock) {
	b.Helper()
	_, m, r, users, clock := busyPlanOn(b, n)
	return m, r, users, clock
}

func busyPlanOn(b *testing.B, n int) (*store.DB, *exchange.Market, *fleet.Reservations, []identity.User, *storetest.Clock) {
	b.Helper()
	return busyPlanIn(b, storetest.New(b), n)
}

func busyPlanIn(b *testing.B, db *store.DB, n int) (*store.DB, *exchange.Market, *fleet.Reservations, []identity.User, *storetest.Clock) {
	b.Helper()
	ctx := context.Background()
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

// agentReport is what the agent of cluster "big" in busyPlan reports in one poll:
// usage of up to eight running requests and one capacity change that keeps
// capacity where it is (the plan re-plans nothing).
func agentReport(b *testing.B, r *fleet.Reservations, clock *storetest.Clock, i int) fleet.AgentReport {
	b.Helper()
	alloc, err := r.Allocation(context.Background(), "big")
	if err != nil {
		b.Fatal(err)
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
	rep.Capacity = []fleet.CapacityReport{{Pool: fmt.Sprintf("big/r%d", i%10), From: from, To: from.Add(time.Hour), Units: 1_000_000}}
	return rep
}

// BenchmarkReportApplied is one agent report with 10,000 reservations planned:
// taken by the server it reached (writer), and then applied by another server
// that had the plan before it (replica: its next read of the plan, one pool's
// load in one slot, replaying the report; compare BenchmarkPlanRebuild, what
// that cost before plan changes were replayed). unchanged is the same read with
// nothing to apply: the replay costs replica less unchanged.
// On PostgreSQL too when CLEARHOUSE_TEST_POSTGRES is set (the replica with its
// own connection pool).
func BenchmarkReportApplied(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		db, _, a, _, clock := busyPlanOn(b, 10000)
		reportApplied(b, a, fleet.NewReservations(db, ledger.New(db, clock.Now), clock.Now, fleet.DefaultPlanConfig), clock)
	})
	if pg, ok := storetest.NewPostgres(b); ok {
		b.Run("postgres", func(b *testing.B) {
			db, _, a, _, clock := busyPlanIn(b, pg, 10000)
			other := storetest.Another(b, db)
			reportApplied(b, a, fleet.NewReservations(other, ledger.New(other, clock.Now), clock.Now, fleet.DefaultPlanConfig), clock)
		})
	}
}

func reportApplied(b *testing.B, a, replica *fleet.Reservations, clock *storetest.Clock) {
	ctx := context.Background()
	look := func() {
		now := clock.Now()
		if _, err := replica.PoolLoad(ctx, "big/r0", now, now.Add(fleet.DefaultPlanConfig.Slot), fleet.DefaultPlanConfig.Slot); err != nil {
			b.Fatal(err)
		}
	}
	look()
	b.Run("writer", func(b *testing.B) {
		for i := range b.N {
			b.StopTimer()
			rep := agentReport(b, a, clock, i)
			b.StartTimer()
			if _, err := a.Report(ctx, "big", rep); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/report")
	})
	look()
	b.Run("unchanged", func(b *testing.B) {
		for range b.N {
			look()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/read")
	})
	b.Run("replica", func(b *testing.B) {
		before := replica.Updates()
		for i := range b.N {
			b.StopTimer()
			if _, err := a.Report(ctx, "big", agentReport(b, a, clock, i)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			look()
		}
		after := replica.Updates()
		if after.Rebuilt != before.Rebuilt || after.Replayed-before.Replayed != int64(b.N) {
			b.Fatalf("the replica caught up %d times by replay and rebuilt %d times; want %d and 0",
				after.Replayed-before.Replayed, after.Rebuilt-before.Rebuilt, b.N)
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/report-applied")
	})
}

// BenchmarkThousandAgents is 1,000 agents reporting every 10 s (100 reports a
// second, paced, split between two servers sharing the database) for 10 s per
// iteration with 10,000 reservations planned, while pages read the plan from
// both servers as fast as one reader each can: a cluster's allocation and a
// pool's load over a day (what /operate/schedule shows). It reports the reports
// taken per second and the 50th and 99th percentiles of a report's and a page's
// latency. Run it with -benchtime 1x.
func BenchmarkThousandAgents(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		_, _, a, _, clock := busyPlanOn(b, 10000)
		thousandAgents(b, []*fleet.Reservations{a}, clock)
	})
	if pg, ok := storetest.NewPostgres(b); ok {
		b.Run("postgres", func(b *testing.B) {
			db, _, a, _, clock := busyPlanIn(b, pg, 10000)
			other := storetest.Another(b, db)
			thousandAgents(b, []*fleet.Reservations{a, fleet.NewReservations(other, ledger.New(other, clock.Now), clock.Now, fleet.DefaultPlanConfig)}, clock)
		})
	}
}

func thousandAgents(b *testing.B, servers []*fleet.Reservations, clock *storetest.Clock) {
	const agents, every, span, pagesPerServer = 1000, 10 * time.Second, 10 * time.Second, 5
	ctx := context.Background()
	a := servers[0]
	reps := make([]fleet.AgentReport, 16)
	for i := range reps {
		reps[i] = agentReport(b, a, clock, i)
	}
	var mu sync.Mutex
	var reportLat, pageLat []time.Duration
	taken := 0
	b.ResetTimer()
	for range b.N {
		stop := make(chan struct{})
		var readers sync.WaitGroup
		for _, s := range servers {
			readers.Go(func() {
				every := time.NewTicker(time.Second / pagesPerServer)
				defer every.Stop()
				for {
					select {
					case <-stop:
						return
					case <-every.C:
					}
					start := time.Now()
					if _, err := s.Allocation(ctx, "big"); err != nil {
						b.Error(err)
						return
					}
					if _, err := s.PoolLoad(ctx, "big/r3", clock.Now(), clock.Now().Add(24*time.Hour), time.Hour); err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					pageLat = append(pageLat, time.Since(start))
					mu.Unlock()
				}
			})
		}
		var senders sync.WaitGroup
		tick := time.NewTicker(every / agents)
		end := time.After(span)
	pace:
		for i := 0; ; i++ {
			select {
			case <-end:
				break pace
			case <-tick.C:
			}
			senders.Go(func() {
				start := time.Now()
				if _, err := servers[i%len(servers)].Report(ctx, "big", reps[i%len(reps)]); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				reportLat = append(reportLat, time.Since(start))
				taken++
				mu.Unlock()
			})
		}
		tick.Stop()
		senders.Wait()
		close(stop)
		readers.Wait()
	}
	pct := func(ds []time.Duration, p float64) float64 {
		if len(ds) == 0 {
			return 0
		}
		slices.Sort(ds)
		return float64(ds[min(int(p*float64(len(ds))), len(ds)-1)].Microseconds()) / 1000
	}
	b.ReportMetric(float64(taken)/b.Elapsed().Seconds(), "reports/s")
	b.ReportMetric(pct(reportLat, 0.5), "report-p50-ms")
	b.ReportMetric(pct(reportLat, 0.99), "report-p99-ms")
	b.ReportMetric(pct(pageLat, 0.5), "page-p50-ms")
	b.ReportMetric(pct(pageLat, 0.99), "page-p99-ms")
	b.ReportMetric(float64(len(pageLat))/b.Elapsed().Seconds(), "pages/s")
}
