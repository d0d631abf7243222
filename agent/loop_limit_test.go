package agent

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// reclaimingBackend is a fake backend that is a Reclaimer: it records what it was
// asked to take back and says it stopped one object per excess.
type reclaimingBackend struct {
	fakeBackend
	asked [][]Reclaim
}

func (b *reclaimingBackend) Reclaim(_ context.Context, r []Reclaim) ([]Reclaimed, error) {
	b.asked = append(b.asked, r)
	var out []Reclaimed
	for _, x := range r {
		out = append(out, Reclaimed{Team: x.Team, Pool: x.Pool, Object: "pod " + x.Team + "/newest", Units: x.Units})
	}
	return out, nil
}

// The loop applies the server's limits (best-effort apart) and reports each team whose
// measured own usage exceeds the limit it applied: a team with no limit is over at
// any usage; usage at the limit, and best-effort grants, are not over; with a config,
// a team it does not map is not judged.
func TestLoopReportsOwnUsageAboveTheServersLimits(t *testing.T) {
	f := &fakeServer{alloc: Allocation{Cluster: "us-east", Now: epoch,
		Quotas: []HeldQuota{{Team: "ads", Pool: "us-east/cpu", Units: 6}}, // holdings less offers: not the limit
		Limits: []Limit{{Team: "ads", Pool: "us-east/cpu", Units: 10, Held: 10, BestEffort: 4}, {Team: "ml", Pool: "us-east/cpu", Units: 8, Held: 8}}}}
	b := &fakeBackend{measure: Measurement{Owners: []OwnerUsage{{Team: "ads", Pool: "us-east/cpu", Units: 9}, {Team: "ads", Pool: "us-east/cpu", Units: 3},
		{Team: "ml", Pool: "us-east/cpu", Units: 8}, {Team: "search", Pool: "us-east/cpu", Units: 2}, {Team: "ghost", Pool: "us-east/cpu", Units: 50}}}}
	l, _ := newTestLoop(t, f, b)
	l.Config = &Config{File: "us-east.yaml", Cluster: "us-east", Teams: map[string]Team{"ads": {}, "ml": {}, "search": {}}, Pools: map[string]Pool{"us-east/cpu": {Unit: "1"}}}
	if err := l.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []Quota{{Team: "ads", Pool: "us-east/cpu", Units: 10, BestEffort: 4}, {Team: "ml", Pool: "us-east/cpu", Units: 8}, {Team: "search", Pool: "us-east/cpu"}}; !slices.Equal(b.quotas[0], want) {
		t.Fatalf("applied %+v, want %+v", b.quotas[0], want)
	}
	want := []OverLimit{{Team: "ads", Pool: "us-east/cpu", Used: 12, Limit: 10}, {Team: "search", Pool: "us-east/cpu", Used: 2, Limit: 0}}
	if got := f.reports[0].OverLimit; !slices.Equal(got, want) {
		t.Fatalf("over_limit %+v, want %+v", got, want)
	}
	// Back under: the next report lists nothing, which clears it at the server.
	b.measure.Owners = []OwnerUsage{{Team: "ads", Pool: "us-east/cpu", Units: 10}}
	if err := l.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.reports[1].OverLimit; len(got) != 0 || strings.Contains(f.raw[1], `"over_limit"`) {
		t.Fatalf("over_limit after usage fell to the limit: %+v", got)
	}
}

// A Reclaimer backend is handed the allocation's reclaim after the limits are applied
// and before the backend measures; what it stopped rides the next report, is kept
// through a report that fails on the way, and is sent once. A backend that cannot
// reclaim is noted once, in the report's errors.
func TestLoopReclaimsAndReportsWhatItStopped(t *testing.T) {
	since := epoch.Add(-15 * time.Minute)
	f := &fakeServer{alloc: Allocation{Cluster: "us-east", Now: epoch, Limits: []Limit{{Team: "ads", Pool: "us-east/cpu", Units: 10, Held: 10}},
		OverLimit: OverLimitPolicy{Action: OverLimitEvict, GraceSeconds: 600}, Reclaim: []Reclaim{{Team: "ads", Pool: "us-east/cpu", Units: 4, Since: since}}},
		statuses: []int{503, 200, 200}}
	b := &reclaimingBackend{}
	l, _ := newTestLoop(t, f, b)
	ctx := context.Background()
	if err := l.Poll(ctx); err == nil {
		t.Fatal("a 503 answer did not fail the poll")
	}
	f.alloc.Reclaim = nil // taken back: the server lists it no more
	if err := l.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if len(b.asked) != 1 || !slices.Equal(b.asked[0], []Reclaim{{Team: "ads", Pool: "us-east/cpu", Units: 4, Since: since}}) {
		t.Fatalf("the backend was asked to reclaim %+v", b.asked)
	}
	want := []Reclaimed{{Team: "ads", Pool: "us-east/cpu", Object: "pod ads/newest", Units: 4}}
	if !slices.Equal(f.reports[0].Reclaimed, want) || !slices.Equal(f.reports[1].Reclaimed, want) {
		t.Fatalf("reclaimed in the failed report %+v and the next %+v, want %+v in both", f.reports[0].Reclaimed, f.reports[1].Reclaimed, want)
	}
	if err := l.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.reports[2].Reclaimed; len(got) != 0 {
		t.Fatalf("reclaimed sent twice: %+v", got)
	}

	g := &fakeServer{alloc: f.alloc}
	g.alloc.Reclaim = []Reclaim{{Team: "ads", Pool: "us-east/cpu", Units: 4, Since: since}}
	plain, _ := newTestLoop(t, g, &fakeBackend{})
	for range 2 {
		if err := plain.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if errs := g.reports[0].Agent.Errors; len(errs) != 1 || !strings.Contains(errs[0], "cannot take back work beyond limits") || len(g.reports[1].Agent.Errors) != 0 {
		t.Fatalf("errors of a backend that cannot reclaim: %q then %q", errs, g.reports[1].Agent.Errors)
	}
}
