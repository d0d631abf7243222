package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/notify"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// An excess is kept from its first report while reports list it, cleared by a report
// that does not; under an evict policy it is to be taken back once it has lasted the
// grace period, never before, and never under report only. The team is told once per
// excess, and of what was taken back.
func TestOverLimitIsKeptSinceItsFirstReportAndReclaimedAfterTheGrace(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		storetest.AssertModelsMatchSchema(t, db, &fleet.OverLimitRow{}, &fleet.ReclaimRow{})
		pl := newPlanned(t, db)
		ctx := context.Background()
		start := pl.Clock.Now()
		if p, err := pl.r.OverLimitPolicy(ctx); err != nil || p != fleet.DefaultOverLimitPolicy || p.Action != fleet.OverLimitReport || p.Grace != 10*time.Minute {
			t.Fatalf("default policy %+v %v, want report with 10 minutes' grace", p, err)
		}
		over := []fleet.OverLimitUsage{{Team: "ads", Pool: "us-east/cpu", Used: 70, Limit: 60}}
		if err := pl.r.RecordOverLimit(ctx, "us-east", over, nil); err != nil {
			t.Fatal(err)
		}
		pl.Clock.Advance(11 * time.Minute)
		over[0].Used = 75
		if err := pl.r.RecordOverLimit(ctx, "us-east", over, nil); err != nil {
			t.Fatal(err)
		}
		got, err := pl.r.OverLimits(ctx, "ads")
		if err != nil || len(got) != 1 || !got[0].Since.Equal(start) || got[0].Excess() != 15 || got[0].Cluster != "us-east" {
			t.Fatalf("over limits %+v %v, want ads 15 over since the first report", got, err)
		}
		if _, re, err := pl.r.Reclaims(ctx, "us-east"); err != nil || len(re) != 0 {
			t.Fatalf("report only reclaimed %+v %v", re, err)
		}
		if err := pl.r.SetOverLimitPolicy(ctx, fleet.OverLimitPolicy{Action: fleet.OverLimitEvict, Grace: 15 * time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, re, _ := pl.r.Reclaims(ctx, "us-east"); len(re) != 0 {
			t.Fatalf("reclaimed before the grace ended: %+v", re)
		}
		pl.Clock.Advance(4 * time.Minute)
		p, re, err := pl.r.Reclaims(ctx, "us-east")
		if err != nil || p.Action != fleet.OverLimitEvict || len(re) != 1 || re[0].Team != "ads" || re[0].Excess() != 15 {
			t.Fatalf("after the grace: %+v %+v %v", p, re, err)
		}
		if _, re, _ := pl.r.Reclaims(ctx, "eu-west"); len(re) != 0 {
			t.Fatalf("another cluster's reclaims: %+v", re)
		}
		if err := pl.r.RecordOverLimit(ctx, "us-east", nil, []fleet.ReclaimedReport{{Team: "ads", Pool: "us-east/cpu", Object: "pod ads/train-7", Units: 16}}); err != nil {
			t.Fatal(err)
		}
		if got, _ := pl.r.OverLimits(ctx, ""); len(got) != 0 {
			t.Fatalf("a report without ads's excess left %+v", got)
		}
		rec, err := pl.r.RecentlyReclaimed(ctx, "ads", 10)
		if err != nil || len(rec) != 1 || rec[0].Object != "pod ads/train-7" || rec[0].Units != 16 {
			t.Fatalf("reclaimed %+v %v", rec, err)
		}
		ns, err := notify.New(db, pl.Clock.Now).Notifications(ctx, pl.Users["owner@ads"].ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, n := range ns {
			kinds[n.Kind]++
			if n.Kind == fleet.NoticeOverLimit && (!strings.Contains(n.Body, "10 above its limit of 60") || !strings.Contains(n.Body, "only reports")) {
				t.Errorf("over-limit notice: %q", n.Body)
			}
			if n.Kind == fleet.NoticeReclaimed && !strings.Contains(n.Body, "pod ads/train-7") {
				t.Errorf("reclaimed notice: %q", n.Body)
			}
		}
		if kinds[fleet.NoticeOverLimit] != 1 || kinds[fleet.NoticeReclaimed] != 1 {
			t.Fatalf("ads's owner was told %v, want one over-limit and one reclaimed notice", kinds)
		}
	})
}

// A bad report or policy changes nothing.
func TestOverLimitRefusesBadReportsAndPolicies(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	pl := newPlanned(t, storetest.New(t))
	ctx := context.Background()
	ok := fleet.OverLimitUsage{Team: "ads", Pool: "us-east/cpu", Used: 70, Limit: 60}
	if err := pl.r.RecordOverLimit(ctx, "us-east", []fleet.OverLimitUsage{ok}, nil); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		over []fleet.OverLimitUsage
		re   []fleet.ReclaimedReport
	}{
		"another cluster's pool": {over: []fleet.OverLimitUsage{{Team: "ads", Pool: "eu-west/cpu", Used: 2, Limit: 1}}},
		"no such team":           {over: []fleet.OverLimitUsage{{Team: "ghost", Pool: "us-east/cpu", Used: 2, Limit: 1}}},
		"not above the limit":    {over: []fleet.OverLimitUsage{{Team: "ads", Pool: "us-east/cpu", Used: 60, Limit: 60}}},
		"a negative limit":       {over: []fleet.OverLimitUsage{{Team: "ads", Pool: "us-east/cpu", Used: 1, Limit: -1}}},
		"listed twice":           {over: []fleet.OverLimitUsage{ok, ok}},
		"an unnamed object":      {re: []fleet.ReclaimedReport{{Team: "ads", Pool: "us-east/cpu", Units: 1}}},
	} {
		if err := pl.r.RecordOverLimit(ctx, "us-east", c.over, c.re); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Errorf("%s: %v, want EINVALID", name, err)
		}
	}
	if got, _ := pl.r.OverLimits(ctx, ""); len(got) != 1 || got[0].Used != 70 {
		t.Fatalf("bad reports changed the record: %+v", got)
	}
	for _, p := range []fleet.OverLimitPolicy{{Action: "kill", Grace: time.Minute}, {Action: fleet.OverLimitEvict, Grace: -time.Second},
		{Action: fleet.OverLimitEvict, Grace: 8 * 24 * time.Hour}, {Action: fleet.OverLimitEvict, Grace: 1500 * time.Millisecond}} {
		if err := pl.r.SetOverLimitPolicy(ctx, p); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Errorf("policy %+v: %v, want EINVALID", p, err)
		}
	}
	if p, _ := pl.r.OverLimitPolicy(ctx); p != fleet.DefaultOverLimitPolicy {
		t.Fatalf("bad policies changed it to %+v", p)
	}
}
