package besteffort_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// usage reports ads's own usage of us-east/cpu now.
func (x *idle) usage(units int64) {
	x.T.Helper()
	if err := x.be.Report(context.Background(), "us-east", besteffort.Report{Usage: []besteffort.OwnerUsage{{Team: "ads", Pool: "us-east/cpu", Units: units}}}); err != nil {
		x.T.Fatal(err)
	}
}

func (x *idle) history() besteffort.HistoryReport {
	x.T.Helper()
	r, err := x.be.RecordHistory(context.Background())
	if err != nil {
		x.T.Fatal(err)
	}
	return r
}

// dayReport is the fairness report of us-east/cpu over the last day.
func (x *idle) dayReport() besteffort.PoolFairness {
	x.T.Helper()
	reports, err := x.be.ComputeFairness(context.Background())
	if err != nil {
		x.T.Fatal(err)
	}
	for _, r := range reports {
		if r.Cluster == "us-east" && r.Span == "day" && len(r.Pools) == 1 {
			return r.Pools[0]
		}
	}
	x.T.Fatalf("no day report of us-east: %+v", reports)
	return besteffort.PoolFairness{}
}

func simulated(p besteffort.PoolFairness, team, policy string) float64 {
	for _, tf := range p.Teams {
		if tf.Team == team {
			return tf.Simulated[policy]
		}
	}
	return -1
}

// The fairness report replays owners' own usage: ads holds 60 of us-east's 100
// cores and uses all of them for the first hour of search's 40 one-hour tasks. With
// ads's cores lent too, the replay would start them all at once (the old report gave
// every team its whole quota, so no wait); with them busy, only the operator's 40
// cores less the exposure threshold's 30 are free, so search's tasks wait. The usage
// recorded by the history job is replayed as its means between points (60 for the
// first hour, then 0), and the report says how much it replayed.
func TestFairnessReportReplaysOwnersUsage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		x.usage(60)
		if r := x.history(); r.Usage != 1 {
			t.Fatalf("history recorded %d usage points, want 1", r.Usage)
		}
		x.submit("member@search", besteffort.JobSpec{Configuration: cpu(1), Tasks: 40, MaxTaskDuration: time.Hour})
		x.Clock.Advance(30 * time.Minute)
		x.usage(60) // a report at the same units changes no mean
		x.Clock.Advance(30 * time.Minute)
		x.usage(0)
		x.history()
		x.Clock.Advance(time.Hour)
		p := x.dayReport()
		if !near(p.OwnerLoad, 60) {
			t.Fatalf("owners' load replayed: %g unit-hours, want 60 (60 cores for an hour)", p.OwnerLoad)
		}
		for _, policy := range []string{"fairshare", "direct-orig", "round-robin"} {
			if w := simulated(p, "search", policy); !(w > 0) {
				t.Errorf("search's simulated wait under %s is %g; want above zero", policy, w)
			}
		}
		if !(p.CoalitionValue > 0) {
			t.Fatalf("coalition wait %g with ads busy", p.CoalitionValue)
		}
	})
}

// Each report carries the usage's integral over the time the previous units held;
// the history job records one usage point per interval however many servers run it,
// and its points are thinned by the history's retention rule.
func TestUsageHistoryIntegratesReportsAndIsPruned(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		x.usage(60)
		x.Clock.Advance(time.Hour)
		x.usage(30)
		x.Clock.Advance(10 * time.Minute)
		var u besteffort.IdleUsage
		if err := db.Read.Where("team_id = ? AND pool_id = ?", "ads", "us-east/cpu").First(&u).Error; err != nil {
			t.Fatal(err)
		}
		if !near(u.UnitSeconds, 60*3600) || u.Units != 30 {
			t.Fatalf("idle_usage: %d units, integral %g; want 30 and %d", u.Units, u.UnitSeconds, 60*3600)
		}
		a := x.history()
		b, err := besteffort.New(db, x.L, x.Clock.Now, besteffort.DefaultConfig).RecordHistory(ctx)
		if err != nil || a.Usage != 1 || b.Usage != 0 {
			t.Fatalf("usage points recorded: %d then %d (%v); want 1 then 0", a.Usage, b.Usage, err)
		}
		var points []besteffort.IdleUsagePoint
		if err := db.Read.Find(&points).Error; err != nil || len(points) != 1 {
			t.Fatalf("points %+v %v", points, err)
		}
		if p := points[0]; !near(p.UnitSeconds, 60*3600+30*600) || p.ClusterID != "us-east" || !p.At.Equal(x.Clock.Now().Truncate(besteffort.HistoryInterval)) {
			t.Fatalf("point %+v; want the integral carried to now (%d)", p, 60*3600+30*600)
		}
		// Points every interval over 40 days: quarter-hour points older than 2 days
		// and hourly points older than 30 days go.
		x.Clock.Advance(40 * 24 * time.Hour)
		var old []besteffort.IdleUsagePoint
		for at := points[0].At; at.Before(x.Clock.Now()); at = at.Add(besteffort.HistoryInterval) {
			p := points[0]
			p.At, p.ReadAt = at, at
			old = append(old, p)
		}
		if err := db.Write.Where("1 = 1").Delete(&besteffort.IdleUsagePoint{}).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Write.CreateInBatches(old, 500).Error; err != nil {
			t.Fatal(err)
		}
		r := x.history()
		if err := db.Read.Find(&points).Error; err != nil {
			t.Fatal(err)
		}
		now := x.Clock.Now()
		for _, p := range points {
			at, age := p.At.UTC(), now.Sub(p.At)
			if (age >= besteffort.HistoryFine && at.Minute() != 0) || (age >= besteffort.HistoryHourly && at.Hour() != 0) {
				t.Fatalf("kept a point %s, %s old", at, age)
			}
		}
		if r.Pruned < int64(len(old)-len(points)) || len(points) < 2*24*4+27*24 {
			t.Fatalf("pruned %d of %d, %d left", r.Pruned, len(old), len(points))
		}
	})
}

// A cluster's fairness reports are stale with none stored or when the newest is
// older than the age asked for; a server that starts computes them then.
func TestFairnessStaleUntilComputedAndAfterAnHour(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		stale := func() bool {
			t.Helper()
			s, err := x.be.FairnessStale(ctx, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		if stale() {
			t.Fatal("no cluster has best-effort state yet: nothing can be stale")
		}
		x.submit("member@search", besteffort.JobSpec{Configuration: cpu(1), Tasks: 2})
		x.step("us-east")
		if !stale() {
			t.Fatal("us-east has no report: stale")
		}
		if _, err := x.be.ComputeFairness(ctx); err != nil {
			t.Fatal(err)
		}
		if stale() {
			t.Fatal("just computed: not stale")
		}
		x.Clock.Advance(61 * time.Minute)
		if !stale() {
			t.Fatal("computed 61 minutes ago: stale")
		}
	})
}

// An agent lists every team its config maps, 0 where it runs nothing: a team's usage
// goes to 0 when its last work ends, and a 0 of a team the market does not know is
// skipped (there is nothing to record), while any other row of an unknown team
// refuses the whole report, as before.
func TestOwnersUsageOfZeroIsRecordedAndOfAnUnknownTeamSkipped(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		x.usage(8)
		x.Clock.Advance(time.Minute)
		zero := besteffort.Report{Usage: []besteffort.OwnerUsage{{Team: "ads", Pool: "us-east/cpu"}, {Team: "not-in-the-market", Pool: "us-east/cpu"}}}
		if err := x.be.ValidateReport(ctx, "us-east", zero); err != nil {
			t.Fatalf("validate: %v", err)
		}
		if err := x.be.Report(ctx, "us-east", zero); err != nil {
			t.Fatal(err)
		}
		var rows []besteffort.IdleUsage
		if err := db.Read.Order("team_id").Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].TeamID != "ads" || rows[0].Units != 0 {
			t.Fatalf("idle_usage after a report of 0: %+v; want ads at 0 and nothing of the unknown team", rows)
		}
		bad := besteffort.Report{Usage: []besteffort.OwnerUsage{{Team: "ads", Pool: "us-east/cpu", Units: 4}, {Team: "not-in-the-market", Pool: "us-east/cpu", Units: 1}}}
		if err := x.be.Report(ctx, "us-east", bad); clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(err.Error(), "no team") {
			t.Fatalf("a non-zero row of an unknown team: %v, want EINVALID", err)
		}
		if err := db.Read.Find(&rows).Error; err != nil || len(rows) != 1 || rows[0].Units != 0 {
			t.Fatalf("after a refused report: %+v %v", rows, err)
		}
	})
}
