package fleet_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/fleet/fleettest"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// busyPlan is fleettest's busy plan of n reservations on SQLite.
func busyPlan(b *testing.B, n int) fleettest.Busy {
	b.Helper()
	return fleettest.NewBusy(b, storetest.New(b), n)
}

// BenchmarkPlanRebuild is what a server pays, once, after a settlement, an offer
// or another server's write: the engine rebuilt from the database.
func BenchmarkPlanRebuild(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("reservations=%d", n), func(b *testing.B) {
			bz := busyPlan(b, n)
			m, r := bz.Market, bz.Reservations
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
	bz := busyPlan(b, 10000)
	r, users, clock := bz.Reservations, bz.Users, bz.Clock
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
			bz := busyPlan(b, 1000)
			db, r, users, clock := bz.DB, bz.Reservations, bz.Users, bz.Clock
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
		bz := busyPlan(b, 10000)
		db, a, clock := bz.DB, bz.Reservations, bz.Clock
		reportApplied(b, a, fleet.NewReservations(db, ledger.New(db, clock.Now), clock.Now, fleet.DefaultPlanConfig), clock)
	})
	if pg, ok := storetest.NewPostgres(b); ok {
		b.Run("postgres", func(b *testing.B) {
			bz := fleettest.NewBusy(b, pg, 10000)
			db, a, clock := bz.DB, bz.Reservations, bz.Clock
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
			rep := fleettest.Report(b, a, clock, i)
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
			if _, err := a.Report(ctx, "big", fleettest.Report(b, a, clock, i)); err != nil {
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
// taken per second, the 50th and 99th percentiles of a report's and a page's
// latency, and the plan rebuilds in the window (none in a steady state). Run it with
// -benchtime 1x.
func BenchmarkThousandAgents(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		bz := busyPlan(b, 10000)
		thousandAgents(b, []*fleet.Reservations{bz.Reservations}, bz.Clock)
	})
	if os.Getenv(storetest.PostgresEnv) != "" {
		b.Run("postgres", func(b *testing.B) {
			pg, _ := storetest.NewPostgres(b) // a fresh database for each run of the function
			bz := fleettest.NewBusy(b, pg, 10000)
			db, a, clock := bz.DB, bz.Reservations, bz.Clock
			other := storetest.Another(b, db)
			thousandAgents(b, []*fleet.Reservations{a, fleet.NewReservations(other, ledger.New(other, clock.Now), clock.Now, fleet.DefaultPlanConfig)}, clock)
		})
	}
}

func thousandAgents(b *testing.B, servers []*fleet.Reservations, clock *storetest.Clock) {
	ctx := context.Background()
	a := servers[0]
	reps := make([]fleet.AgentReport, 16)
	for i := range reps {
		reps[i] = fleettest.Report(b, a, clock, i)
	}
	// Every server has its plan in memory before the window opens, as a running
	// server has: a server's first read builds it from every reservation (what
	// BenchmarkPlanRebuild measures), once, at start-up. Rebuilds in the window are
	// reported; a steady state has none.
	rebuilt := int64(0)
	for _, s := range servers {
		if _, err := s.Allocation(ctx, "big"); err != nil {
			b.Fatal(err)
		}
		rebuilt -= s.Updates().Rebuilt
	}
	report := func(i int) error {
		_, err := servers[i%len(servers)].Report(ctx, "big", reps[i%len(reps)])
		return err
	}
	var pages []func() error
	for _, s := range servers {
		pages = append(pages, func() error {
			if _, err := s.Allocation(ctx, "big"); err != nil {
				return err
			}
			_, err := s.PoolLoad(ctx, "big/r3", clock.Now(), clock.Now().Add(24*time.Hour), time.Hour)
			return err
		})
	}
	b.ResetTimer()
	var m fleettest.Measured
	for range b.N {
		fleettest.ThousandAgents.Run(b, &m, report, pages...)
	}
	for _, s := range servers {
		rebuilt += s.Updates().Rebuilt
	}
	b.ReportMetric(float64(rebuilt), "rebuilds")
	m.ReportMetrics(b)
}
