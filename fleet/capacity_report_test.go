package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func countRows(t *testing.T, db *store.DB, table string) int64 {
	t.Helper()
	var n int64
	if err := db.Read.Table(table).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// An agent that repeats the same capacity change every poll (30 s, for an hour)
// adds one capacity_changes row, not 120; a real change adds one and replaces the
// earlier rows it covers; a change that ended a day ago is pruned. A restarted
// server builds the same capacity from what is kept.
func TestIdenticalCapacityReportsAddNoRows(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		start := pl.Clock.Now()
		change := fleet.CapacityReport{Pool: "eu-west/cpu", From: start, To: start.Add(6 * time.Hour), Units: 80}
		for i := 0; i < 120; i++ {
			if _, err := pl.r.Report(ctx, "eu-west", fleet.AgentReport{Capacity: []fleet.CapacityReport{change, change}}); err != nil {
				t.Fatal(err)
			}
			pl.Clock.Advance(30 * time.Second)
		}
		if n := countRows(t, db, "capacity_changes"); n != 1 {
			t.Fatalf("120 identical reports left %d capacity_changes rows, want 1", n)
		}
		// A report saying what the configured capacity already says changes nothing.
		cfg := fleet.CapacityReport{Pool: "eu-west/cpu", From: start.Add(7 * time.Hour), To: start.Add(8 * time.Hour), Units: 100}
		if _, err := pl.r.Report(ctx, "eu-west", fleet.AgentReport{Capacity: []fleet.CapacityReport{cfg}}); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, db, "capacity_changes"); n != 1 {
			t.Fatalf("a change to what the plan had added a row: %d", n)
		}
		// A real change over a wider window replaces the row it covers.
		now := pl.Clock.Now()
		wider := fleet.CapacityReport{Pool: "eu-west/cpu", From: start, To: start.Add(12 * time.Hour), Units: 70}
		if _, err := pl.r.Report(ctx, "eu-west", fleet.AgentReport{Capacity: []fleet.CapacityReport{wider}}); err != nil {
			t.Fatal(err)
		}
		var units []int64
		db.Read.Table("capacity_changes").Order("id").Pluck("units", &units)
		if len(units) != 1 || units[0] != 70 {
			t.Fatalf("after a wider change the rows are %v, want [70]", units)
		}
		restarted := fleet.NewReservations(db, pl.L, pl.Clock.Now, fleet.DefaultPlanConfig)
		q, err := restarted.Quote(ctx, pl.Users["member@ads"], pl.job("eu-west/cpu", 71, time.Hour, 0, time.Hour, 0))
		if err != nil || q.Feasible {
			t.Fatalf("71 cores after a restart, capacity 70: %+v %v", q, err)
		}
		// A day after the change ended, the next stored change prunes it.
		pl.Clock.Set(now.Add(12*time.Hour + 25*time.Hour))
		later := pl.Clock.Now()
		next := fleet.CapacityReport{Pool: "eu-west/cpu", From: later, To: later.Add(time.Hour), Units: 90}
		if _, err := pl.r.Report(ctx, "eu-west", fleet.AgentReport{Capacity: []fleet.CapacityReport{next}}); err != nil {
			t.Fatal(err)
		}
		units = nil
		db.Read.Table("capacity_changes").Order("id").Pluck("units", &units)
		if len(units) != 1 || units[0] != 90 {
			t.Fatalf("rows after a day %v, want only [90]", units)
		}
	})
}

// A report whose measured capacity is absurd (2^63-1 cores, or far beyond the
// pool's configured capacity), or whose usage is far beyond the capacity measured
// with it, is refused whole with the field named: neither its capacity change, nor
// its usage, nor any measured capacity is stored.
func TestAnAbsurdMeasuredCapacityRefusesTheWholeReport(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newUsaged(t, db)
		ctx := context.Background()
		now := x.Clock.Now()
		good := fleet.CapacityReport{Pool: "us-east/cpu", From: now, To: now.Add(time.Hour), Units: 90}
		for name, c := range map[string]struct {
			pools []fleet.PoolUsageReport
			field string
		}{
			"2^63-1":                  {[]fleet.PoolUsageReport{{Pool: "us-east/ram", Used: 10}, {Pool: "us-east/cpu", Used: 10, Capacity: i64(1<<63 - 1)}}, "pools[1]: capacity"},
			"401 of a configured 100": {[]fleet.PoolUsageReport{{Pool: "us-east/cpu", Used: 10, Capacity: i64(401)}}, "pools[0]: capacity"},
			"used 4000 of 10":         {[]fleet.PoolUsageReport{{Pool: "us-east/ram", Used: 4, Capacity: i64(100)}, {Pool: "us-east/cpu", Used: 400, Capacity: i64(10)}}, "pools[1]: used"},
		} {
			_, err := x.r.Report(ctx, "us-east", fleet.AgentReport{Capacity: []fleet.CapacityReport{good}, Pools: c.pools})
			if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.HasPrefix(clearhouse.ErrorMessage(err), c.field) {
				t.Errorf("%s: %v, want invalid naming %s", name, err, c.field)
			}
		}
		for _, table := range []string{"capacity_changes", "usage_samples", "pool_measured_capacity"} {
			if n := countRows(t, db, table); n != 0 {
				t.Errorf("refused reports left %d rows in %s", n, table)
			}
		}
		if c, err := x.M.Capacity(ctx, "us-east/cpu"); err != nil || c.Source != exchange.CapacityFromConfigured || c.Effective != 100 {
			t.Errorf("capacity after refused reports: %+v %v", c, err)
		}
		// The bound is a multiple of the configured capacity: a cluster larger than
		// recorded is measured as it is, and then the market sells what it measured.
		if err := x.report(fleet.PoolUsageReport{Pool: "us-east/cpu", Used: 30, Capacity: i64(120)}); err != nil {
			t.Fatal(err)
		}
		if c, _ := x.M.Capacity(ctx, "us-east/cpu"); c.Source != exchange.CapacityFromMeasured || c.Effective != 120 {
			t.Errorf("capacity after a measurement: %+v", c)
		}
		var sampled int64
		db.Read.Table("usage_samples").Where("pool_id = ?", "us-east/cpu").Pluck("capacity", &sampled)
		if sampled != 120 {
			t.Errorf("the usage sample's capacity is %d, want the 120 measured with it", sampled)
		}
	})
}

// With no usage data, psi falls back to held over the effective capacity: 60 cores
// held of a measured 75 is 80%, not 60% of the configured 100.
func TestTheHeldFallbackUsesEffectiveCapacity(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newUsaged(t, db)
		if p := x.psi("us-east/cpu"); p.Source != fleet.PsiHeld || p.Fallback != 0.6 {
			t.Fatalf("before a measurement: %+v", p)
		}
		if err := db.Write.Exec(`INSERT INTO pool_measured_capacity (pool_id, capacity, measured_at) VALUES (?, ?, ?)`, "us-east/cpu", 75, x.Clock.Now()).Error; err != nil {
			t.Fatal(err)
		}
		if p := x.psi("us-east/cpu"); p.Source != fleet.PsiHeld || p.Fallback != 0.8 || p.Capacity != 75 {
			t.Fatalf("after measuring 75: %+v", p)
		}
	})
}

// The reservation plan sells no more than the cluster has either: eu-west/cpu is
// configured at 100 cores and measured at 50, so a 51-core job has no room now
// while a 50-core one does, on this server and after a restart; a reservation of 60
// cores accepted before the measurement is reported at risk. An operator's override
// to 80 holds until it expires, then the measured 50 applies again.
func TestTheReservationPlanUsesTheMeasuredCapacity(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		feasible := func(r *fleet.Reservations, cores int64) bool {
			t.Helper()
			q, err := r.Quote(ctx, pl.Users["member@ads"], pl.job("eu-west/cpu", cores, time.Hour, 0, time.Hour, 0))
			if err != nil {
				t.Fatal(err)
			}
			return q.Feasible
		}
		if !feasible(pl.r, 90) {
			t.Fatal("90 cores of the configured 100 have no room before any measurement")
		}
		big := pl.reserve("member@search", pl.job("eu-west/cpu", 60, time.Hour, 0, time.Hour, 50))
		res, err := pl.r.Report(ctx, "eu-west", fleet.AgentReport{Pools: []fleet.PoolUsageReport{{Pool: "eu-west/cpu", Used: 0, Capacity: i64(50)}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.AtRisk) != 1 || res.AtRisk[0] != big.ID {
			t.Errorf("report %+v: want reservation %d (60 cores) at risk on a 50-core cluster", res, big.ID)
		}
		restarted := fleet.NewReservations(db, pl.L, pl.Clock.Now, fleet.DefaultPlanConfig)
		for name, r := range map[string]*fleet.Reservations{"this server": pl.r, "after a restart": restarted} {
			if feasible(r, 51) || !feasible(r, 50) {
				t.Errorf("%s: 51 cores feasible %v, 50 feasible %v; want only 50 on the measured 50", name, feasible(r, 51), feasible(r, 50))
			}
		}
		// The same measurement again changes nothing.
		if res, err := pl.r.Report(ctx, "eu-west", fleet.AgentReport{Pools: []fleet.PoolUsageReport{{Pool: "eu-west/cpu", Used: 0, Capacity: i64(50)}}}); err != nil || len(res.AtRisk)+len(res.Moved) != 0 {
			t.Errorf("a repeated measurement: %+v %v", res, err)
		}
		if err := pl.M.OverrideCapacity(ctx, "eu-west/cpu", 80, "nodes back from repair", pl.Clock.Now().Add(2*time.Hour), "op@x.io"); err != nil {
			t.Fatal(err)
		}
		if !feasible(pl.r, 80) || feasible(pl.r, 81) {
			t.Error("under the override to 80: want 80 cores and no more")
		}
		pl.Clock.Advance(2*time.Hour + 5*time.Minute)
		if feasible(pl.r, 51) || !feasible(pl.r, 50) {
			t.Error("after the override expired: want the measured 50 again")
		}
	})
}
