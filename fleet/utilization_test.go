package fleet_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func TestPercentileIsTheNearestRank(t *testing.T) {
	t.Parallel() // no database, no shared state
	// 20 values 0.05, 0.10, ..., 1.00: the p-th percentile is the ceil(p/100*20)-th.
	xs := func() []float64 {
		var out []float64
		for i := 20; i >= 1; i-- { // unsorted on purpose
			out = append(out, float64(i)/20)
		}
		return out
	}
	for p, want := range map[int]float64{50: 0.50, 90: 0.90, 95: 0.95, 99: 1.00} {
		if got := fleet.Percentile(xs(), p); math.Abs(got-want) > 1e-12 {
			t.Errorf("p%d = %v, want %v", p, got, want)
		}
	}
	if got := fleet.Percentile([]float64{0.3}, 50); got != 0.3 {
		t.Errorf("one value: %v", got)
	}
	if got := fleet.Percentile(nil, 95); !math.IsNaN(got) {
		t.Errorf("no values: %v", got)
	}
}

// usaged is a planned market with the utilization service wired into it.
type usaged struct {
	*planned
	u *fleet.Utilization
}

func newUsaged(t *testing.T, db *store.DB) *usaged {
	t.Helper()
	pl := newPlanned(t, db)
	u := fleet.NewUtilization(db, pl.Clock.Now, fleet.DefaultUtilizationConfig)
	pl.M.UseMeasuredUtilization(u)
	return &usaged{planned: pl, u: u}
}

// report has us-east's agent report pool usage now.
func (x *usaged) report(pools ...fleet.PoolUsageReport) error {
	_, err := x.r.Report(context.Background(), "us-east", fleet.AgentReport{Pools: pools})
	return err
}

func (x *usaged) psi(pool string) fleet.PoolPsi {
	x.T.Helper()
	p, err := x.u.Pool(context.Background(), pool)
	if err != nil {
		x.T.Fatal(err)
	}
	return p
}

// A hand-computed series: the agent reports 40 slots of us-east/cpu (capacity
// 100) using 1, 2, ..., 40 cores. Over a 7-day window the p95 is the 38th smallest
// value (ceil(0.95*40) = 38): 38%; p50 is the 20th: 20%; p99 the 40th: 40%. The
// auction opened afterwards fixes its reserve price at phi(0.38) * cost.
func TestPsiIsThePercentileOfMeasuredUsage(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newUsaged(t, db)
		ctx := context.Background()
		for i := 1; i <= 40; i++ {
			if err := x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: int64(i)}); err != nil {
				t.Fatal(err)
			}
			x.Clock.Advance(5 * time.Minute)
		}
		if _, err := x.u.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		p := x.psi("us-east/cpu")
		if p.Source != fleet.PsiMeasured || p.Samples != 40 || math.Abs(p.Psi-0.38) > 1e-12 {
			t.Fatalf("p95: %+v", p)
		}
		for pct, want := range map[int]float64{50: 0.20, 99: 0.40, 90: 0.36} {
			if err := x.u.SetPolicy(ctx, "us-east/cpu", pct, 7); err != nil {
				t.Fatal(err)
			}
			if got := x.psi("us-east/cpu"); got.Percentile != pct || math.Abs(got.Psi-want) > 1e-12 {
				t.Errorf("p%d: %+v, want %v", pct, got, want)
			}
		}
		// A one-day window holds the same 40 samples (200 minutes); hourly aggregates exist.
		if err := x.u.SetPolicy(ctx, "us-east/cpu", 95, 1); err != nil {
			t.Fatal(err)
		}
		if got := x.psi("us-east/cpu"); math.Abs(got.Psi-0.38) > 1e-12 {
			t.Errorf("1-day window: %+v", got)
		}
		hours, err := x.u.Hours(ctx, "us-east/cpu", x.Clock.Now().Add(-24*time.Hour), x.Clock.Now())
		if err != nil || len(hours) < 3 {
			t.Fatalf("hours: %v %v", hours, err)
		}
		// Epoch is 09:00; the first hour holds slots 1..12: mean 6.5%, max 12%.
		if h := hours[0]; h.Samples != 12 || math.Abs(h.MeanRatio-0.065) > 1e-12 || math.Abs(h.MaxRatio-0.12) > 1e-12 {
			t.Errorf("first hour: %+v", h)
		}
		// The reserve price fixed when the next auction opens uses psi = 0.38.
		closeCurrent(t, x)
		a, err := x.M.ScheduleAuction(ctx, x.Clock.Now(), x.Clock.Now().Add(time.Hour), auction.DefaultParams)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.M.OpenDue(ctx); err != nil {
			t.Fatal(err)
		}
		aps, err := x.M.AuctionPools(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		curve, _ := auction.DefaultCurve.Build()
		for _, ap := range aps {
			if ap.PoolID != "us-east/cpu" {
				continue
			}
			// The reserve is the curve's, rounded up to the micro-dollar (prices are
			// whole micro-dollars per unit).
			r, _ := auction.ReservePrice(curve, 0.38, 1)
			want := math.Ceil(r*1e6-1e-6) / 1e6
			if math.Abs(ap.Utilization-0.38) > 1e-12 || math.Abs(ap.ReservePrice-want) > 1e-12 {
				t.Errorf("auction pool: %+v, want utilization 0.38 and reserve %v", ap, want)
			}
		}
	})
}

// closeCurrent closes the test market's open auction.
func closeCurrent(t *testing.T, x *usaged) {
	t.Helper()
	x.Clock.Advance(2 * time.Hour)
	if _, err := x.M.Tick(context.Background(), exchange.Cadence{PreviewEvery: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

func TestAnOverrideHoldsUntilItExpires(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newUsaged(t, db)
		ctx := context.Background()
		if err := x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: 90}); err != nil {
			t.Fatal(err)
		}
		x.Clock.Advance(5 * time.Minute)
		if _, err := x.u.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if err := x.u.Override(ctx, "us-east/cpu", 0.3, "migration drains the cluster", x.Clock.Now().Add(2*time.Hour), "op@x"); err != nil {
			t.Fatal(err)
		}
		p := x.psi("us-east/cpu")
		if p.Source != fleet.PsiOverride || p.Psi != 0.3 || p.Measured == nil || *p.Measured != 0.9 || p.OverrideReason != "migration drains the cluster" {
			t.Fatalf("with override: %+v", p)
		}
		got, err := x.M.Utilization(ctx)
		if err != nil || got["us-east/cpu"] != 0.3 {
			t.Fatalf("market sees %v %v", got, err)
		}
		x.Clock.Advance(2 * time.Hour) // expired exactly now
		if p := x.psi("us-east/cpu"); p.Source != fleet.PsiMeasured || p.Psi != 0.9 || p.Override != nil {
			t.Fatalf("after expiry: %+v", p)
		}
		if err := x.u.Override(ctx, "us-east/cpu", 0.5, "again", x.Clock.Now().Add(time.Hour), "op@x"); err != nil {
			t.Fatal(err)
		}
		if err := x.u.ClearOverride(ctx, "us-east/cpu"); err != nil {
			t.Fatal(err)
		}
		if p := x.psi("us-east/cpu"); p.Source != fleet.PsiMeasured {
			t.Fatalf("after clearing: %+v", p)
		}
	})
}

// A pool with no usage data says so and falls back to held/capacity: ads holds 60
// of us-east/cpu's 100 cores; nobody holds eu-west/cpu.
func TestAPoolWithNoDataFallsBackToHeldOverCapacity(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newUsaged(t, db)
		rep, err := x.u.Refresh(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Measured != 0 || len(rep.NoData) != 3 {
			t.Fatalf("refresh: %+v", rep)
		}
		if p := x.psi("us-east/cpu"); p.Source != fleet.PsiHeld || p.Psi != 0.6 || p.Measured != nil {
			t.Fatalf("us-east/cpu: %+v", p)
		}
		if p := x.psi("eu-west/cpu"); p.Source != fleet.PsiHeld || p.Psi != 0 {
			t.Fatalf("eu-west/cpu: %+v", p)
		}
	})
}

// Pools no agent reports on are measured from the reservation plan: a
// reservation of 40 cores for an hour shows as 40% for its 12 slots and 0%
// around it.
func TestPoolsWithoutAnAgentAreMeasuredFromThePlan(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newUsaged(t, db)
		ctx := context.Background()
		v := x.reserve("member@ads", x.job("eu-west/cpu", 40, time.Hour, 0, 2*time.Hour, 100))
		if v.Status != fleet.ReservationAccepted {
			t.Fatalf("reservation: %+v", v)
		}
		x.Clock.Advance(2 * time.Hour)
		if _, err := x.u.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		series, err := x.u.Series(ctx, "eu-west/cpu", x.Clock.Now().Add(-3*time.Hour), x.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		var busy int
		for _, s := range series {
			switch s.Ratio {
			case 0.4:
				busy++
			case 0:
			default:
				t.Errorf("sample %+v", s)
			}
		}
		if busy != 12 || len(series) < 24 {
			t.Fatalf("%d busy slots of %d: %+v", busy, len(series), series)
		}
		if p := x.psi("eu-west/cpu"); p.Source != fleet.PsiMeasured || p.Psi != 0.4 {
			t.Fatalf("psi: %+v", p)
		}
		// Nothing reserved in us-east/ram: still no data.
		if p := x.psi("us-east/ram"); p.Source != fleet.PsiHeld {
			t.Fatalf("us-east/ram: %+v", p)
		}
	})
}

func TestRetentionDeletesOldSamplesAndHours(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newUsaged(t, db)
		ctx := context.Background()
		if err := x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: 50}); err != nil {
			t.Fatal(err)
		}
		x.Clock.Advance(time.Hour)
		if _, err := x.u.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		x.Clock.Advance(15 * 24 * time.Hour)
		rep, err := x.u.Refresh(ctx)
		if err != nil || rep.PrunedRaw != 1 || rep.PrunedHourly != 0 {
			t.Fatalf("after 15 days: %+v %v", rep, err)
		}
		if p := x.psi("us-east/cpu"); p.Source != fleet.PsiHeld {
			t.Fatalf("old data still measured: %+v", p)
		}
		x.Clock.Advance(360 * 24 * time.Hour)
		if rep, err := x.u.Refresh(ctx); err != nil || rep.PrunedHourly != 1 {
			t.Fatalf("after a year: %+v %v", rep, err)
		}
	})
}

func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newUsaged(t, db)
		ctx := context.Background()
		future := x.Clock.Now().Add(time.Hour)
		for name, err := range map[string]error{
			"percentile 80":       x.u.SetPolicy(ctx, "us-east/cpu", 80, 7),
			"window 0":            x.u.SetPolicy(ctx, "us-east/cpu", 95, 0),
			"window 15":           x.u.SetPolicy(ctx, "us-east/cpu", 95, 15),
			"psi 1.5":             x.u.Override(ctx, "us-east/cpu", 1.5, "why", future, "op"),
			"psi NaN":             x.u.Override(ctx, "us-east/cpu", math.NaN(), "why", future, "op"),
			"no reason":           x.u.Override(ctx, "us-east/cpu", 0.5, "  ", future, "op"),
			"past expiry":         x.u.Override(ctx, "us-east/cpu", 0.5, "why", x.Clock.Now().Add(-time.Minute), "op"),
			"expiry over a year":  x.u.Override(ctx, "us-east/cpu", 0.5, "why", x.Clock.Now().Add(400*24*time.Hour), "op"),
			"other cluster pool":  x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: 5}, fleet.PoolUsageReport{Pool: "eu-west/cpu", Used: 5}),
			"negative used":       x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: -1}),
			"absurd used":         x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: 1_000_000}),
			"pool reported twice": x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: 1}, fleet.PoolUsageReport{Pool: "us-east/cpu", Used: 2}),
			"negative capacity":   x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: 1, Capacity: i64(-1)}),
			"other cluster capacity": x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: 1, Capacity: i64(5)},
				fleet.PoolUsageReport{Pool: "eu-west/cpu", Used: 1, Capacity: i64(5)}),
		} {
			if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
				t.Errorf("%s: %v, want EINVALID", name, err)
			}
		}
		if err := x.u.SetPolicy(ctx, "us-east/gpu", 95, 7); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			t.Errorf("unknown pool: %v", err)
		}
		var samples, settings, measured int64
		db.Read.Table("usage_samples").Count(&samples)
		db.Read.Table("pool_utilization").Count(&settings)
		db.Read.Table("pool_measured_capacity").Count(&measured)
		if samples != 0 || settings != 0 || measured != 0 {
			t.Fatalf("bad input saved %d samples and %d settings", samples, settings)
		}
	})
}

// Agents reporting, the job running on two servers, and operators changing
// settings, all at once: every call succeeds, each pool has one sample a slot, and
// every stored psi is the percentile its own setting asks for.
func TestUtilizationWritesAreSafeUnderConcurrency(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newUsaged(t, db)
		ctx := context.Background()
		other := fleet.NewUtilization(storetest.Another(t, db), x.Clock.Now, fleet.DefaultUtilizationConfig)
		otherPlan := fleet.NewReservations(storetest.Another(t, db), x.L, x.Clock.Now, fleet.DefaultPlanConfig)
		for i := 0; i < 6; i++ {
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					var err error
					switch g % 4 {
					case 0:
						err = x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: int64(10 * (i + 1))}, fleet.PoolUsageReport{Pool: "us-east/ram", Used: int64(40 + g)})
					case 1:
						_, err = otherPlan.Report(ctx, "us-east", fleet.AgentReport{Pools: []fleet.PoolUsageReport{{Pool: "us-east/cpu", Used: int64(10 * (i + 1))}}})
					case 2:
						_, err = x.u.Refresh(ctx)
						if err == nil {
							_, err = other.Refresh(ctx)
						}
					case 3:
						pct := fleet.Percentiles[(g+i)%4]
						if err = x.u.SetPolicy(ctx, "us-east/cpu", pct, 7); err == nil {
							err = other.Override(ctx, "us-east/ram", 0.5, "test", x.Clock.Now().Add(time.Hour), "op")
						}
					}
					if err != nil {
						errs <- err
					}
				}(g)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			x.Clock.Advance(5 * time.Minute)
		}
		if _, err := x.u.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		var dup int64
		if err := db.Read.Raw(`SELECT COUNT(*) FROM (SELECT pool_id, slot_at FROM usage_samples GROUP BY pool_id, slot_at HAVING COUNT(*) > 1) d`).Scan(&dup).Error; err != nil || dup != 0 {
			t.Fatalf("%d duplicate samples (%v)", dup, err)
		}
		var n int64
		db.Read.Table("usage_samples").Where("pool_id = ?", "us-east/cpu").Count(&n)
		if n != 6 {
			t.Fatalf("us-east/cpu has %d samples, want one a slot (6)", n)
		}
		series, _ := x.u.Series(ctx, "us-east/cpu", x.Clock.Now().Add(-time.Hour), x.Clock.Now())
		ratios := make([]float64, len(series))
		for i, s := range series {
			ratios[i] = s.Ratio
		}
		p := x.psi("us-east/cpu")
		if want := fleet.Percentile(ratios, p.Percentile); p.Measured == nil || *p.Measured != want {
			t.Fatalf("psi %+v, want p%d of %v = %v", p, p.Percentile, ratios, want)
		}
		if p := x.psi("us-east/ram"); p.Source != fleet.PsiOverride {
			t.Fatalf("us-east/ram: %+v", p)
		}
	})
}

func TestUtilizationModelsMatchSchema(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		storetest.AssertModelsMatchSchema(t, db, &fleet.UsageSample{}, &fleet.UsageHour{}, &fleet.PoolSetting{})
	})
}

// An agent's measured capacity is kept, the latest replacing the earlier, with its
// time; the configured capacity (what the market prices with) does not change.
func TestMeasuredCapacityIsKept(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newUsaged(t, db)
		ctx := context.Background()
		if _, ok, err := x.u.MeasuredCapacity(ctx, "us-east/cpu"); ok || err != nil {
			t.Fatalf("before any report: ok %v, %v", ok, err)
		}
		if err := x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: 10, Capacity: i64(120)}); err != nil {
			t.Fatal(err)
		}
		first := x.Clock.Now().UTC()
		x.Clock.Advance(10 * time.Minute)
		if err := x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: 10, Capacity: i64(80)}); err != nil {
			t.Fatal(err)
		}
		m, ok, err := x.u.MeasuredCapacity(ctx, "us-east/cpu")
		if err != nil || !ok || m.Capacity != 80 || !m.MeasuredAt.Equal(first.Add(10*time.Minute)) {
			t.Fatalf("measured %+v ok %v %v, want 80 at %v", m, ok, err, first.Add(10*time.Minute))
		}
		// A report without a capacity keeps the last measured one.
		x.Clock.Advance(10 * time.Minute)
		if err := x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: 10}); err != nil {
			t.Fatal(err)
		}
		if m2, _, _ := x.u.MeasuredCapacity(ctx, "us-east/cpu"); m2 != m {
			t.Fatalf("a report without capacity changed it: %+v, was %+v", m2, m)
		}
		var configured int64
		db.Read.Table("pools").Where("id = ?", "us-east/cpu").Pluck("capacity", &configured)
		if configured != 100 {
			t.Fatalf("configured capacity changed to %d", configured)
		}
	})
}
func i64(v int64) *int64 { return &v }
