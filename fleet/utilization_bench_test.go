package fleet_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/internal/racetest"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"gorm.io/gorm"
)

var (
	benchOnce sync.Once
	benchDB   *store.DB
	benchDir  string
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The property tests (TestRandomInterleavingsKeepEveryInvariant,
	// TestReplayedPlanEqualsRebuild, TestStartsNeverPrecedeArrival) run 20 random
	// cases under the race detector, which multiplied their time several times, and
	// rapid's 100 in make test's pass without it (NORACE_RUN; docs/testing.md).
	racetest.FewerRapidChecksUnderRace(20)
	code := m.Run()
	if benchDB != nil {
		benchDB.Close()
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// seedUsage makes pools pools (10 clusters) with days of 5-minute agent samples
// each, ending at now.
func seedUsage(b *testing.B, db *store.DB, pools, days int, now time.Time) {
	b.Helper()
	ctx := context.Background()
	m := exchange.NewMarket(db, ledger.New(db, func() time.Time { return now }), func() time.Time { return now })
	if _, err := m.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve); err != nil {
		b.Fatal(err)
	}
	for c := range 10 {
		if _, err := m.AddCluster(ctx, exchange.Cluster{ID: fmt.Sprintf("c%02d", c)}); err != nil {
			b.Fatal(err)
		}
	}
	const slot = 5 * time.Minute
	start := now.Truncate(slot).Add(-time.Duration(days) * 24 * time.Hour)
	n := days * 24 * 12
	err := db.Write.Transaction(func(tx *gorm.DB) error {
		for i := range pools {
			cl := fmt.Sprintf("c%02d", i%10)
			p := exchange.Pool{ID: fmt.Sprintf("%s/r%04d", cl, i), ClusterID: cl, Resource: fmt.Sprintf("r%04d", i), Unit: "core",
				Capacity: 1000, UnitCost: 1_000_000, CurveID: "standard", CreatedAt: now, UpdatedAt: now}
			if err := tx.Create(&p).Error; err != nil {
				return err
			}
			rows := make([][]any, n)
			for j := range n {
				x := 0.6 + 0.3*math.Sin(float64(j+i)/288*2*math.Pi)
				rows[j] = []any{p.ID, start.Add(time.Duration(j) * slot), int64(x * 1000), int64(1000), "agent"}
			}
			if _, err := store.Insert(tx, "usage_samples", []string{"pool_id", "slot_at", "used", "capacity", "source"}, rows, ""); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkUtilizationRefresh is the utilization job over 1,000 pools with 14
// days of 5-minute samples each (4,032,000 samples): on its first run it
// aggregates all 14 days into hours (336,000 rows) and measures every pool's p95
// over 7 days (2,016,000 samples); the steady run is the next one, a slot later.
// Reports milliseconds and MB allocated per run, and the heap in use after it.
//
//	go test -run '^$' -bench UtilizationRefresh -benchtime 1x -count 3 ./fleet
func BenchmarkUtilizationRefresh(b *testing.B) {
	const pools, days = 1000, 14
	now := storetest.Epoch
	benchOnce.Do(func() { // seeding takes minutes: once for every -count (removed by TestMain)
		dir, err := os.MkdirTemp("", "clearhouse-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
		if benchDB, err = store.Open(context.Background(), filepath.Join(dir, "bench.db")); err != nil {
			b.Fatal(err)
		}
		if err := store.Migrate(context.Background(), benchDB); err != nil {
			b.Fatal(err)
		}
		seedUsage(b, benchDB, pools, days, now)
	})
	db := benchDB
	ctx := context.Background()
	for _, mode := range []string{"first", "steady"} {
		b.Run(mode, func(b *testing.B) {
			clock := storetest.NewClock(now)
			u := fleet.NewUtilization(db, clock.Now, fleet.DefaultUtilizationConfig)
			for b.Loop() {
				b.StopTimer()
				clock.Set(now)
				if err := db.Write.Exec("UPDATE usage_job SET filled_until = NULL").Error; err != nil {
					b.Fatal(err)
				}
				if err := db.Write.Exec("DELETE FROM usage_hourly").Error; err != nil {
					b.Fatal(err)
				}
				if mode == "steady" {
					if _, err := u.Refresh(ctx); err != nil {
						b.Fatal(err)
					}
					clock.Advance(5 * time.Minute)
				}
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b.StartTimer()
				t0 := time.Now()
				rep, err := u.Refresh(ctx)
				elapsed := time.Since(t0)
				b.StopTimer()
				runtime.ReadMemStats(&after)
				if err != nil {
					b.Fatal(err)
				}
				if rep.Measured != pools {
					b.Fatalf("measured %d pools, want %d", rep.Measured, pools)
				}
				b.ReportMetric(float64(elapsed.Milliseconds()), "ms/run")
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/1e6, "MB-alloc/run")
				b.ReportMetric(float64(after.HeapInuse)/1e6, "MB-heap-after")
				b.ReportMetric(float64(rep.Hours), "hours-written")
				b.StartTimer()
			}
		})
	}
}
