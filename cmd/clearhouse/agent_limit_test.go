package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/simulate"
	"github.com/clearhouse/clearhouse/fleet"
)

// ownPods is the print backend with a team's own pods in us-east/cpu that it measures
// and, as a Reclaimer, evicts newest first. It stands in for a cluster only to prove
// the server and the agent's loop agree on limits, over_limit, reclaim and reclaimed
// end to end over HTTP; the real managers' reclaim is the kubernetes and slurm
// backends' (their own end-to-end tests).
type ownPods struct {
	*simulate.Cluster
	team    string
	pods    []int64 // cores of each pod, oldest first
	applied [][]agent.Quota
	asked   [][]agent.Reclaim
}

func (b *ownPods) ApplyQuotas(ctx context.Context, want []agent.Quota) ([]agent.Correction, error) {
	b.applied = append(b.applied, want)
	return b.Cluster.ApplyQuotas(ctx, want)
}

func (b *ownPods) Measure(context.Context, time.Time) (agent.Measurement, error) {
	var used int64
	for _, n := range b.pods {
		used += n
	}
	return agent.Measurement{Owners: []agent.OwnerUsage{{Team: b.team, Pool: "us-east/cpu", Units: used}}}, nil
}

func (b *ownPods) Reclaim(_ context.Context, rs []agent.Reclaim) ([]agent.Reclaimed, error) {
	b.asked = append(b.asked, rs)
	var out []agent.Reclaimed
	for _, r := range rs {
		for freed := int64(0); freed < r.Units && len(b.pods) > 0; {
			n := b.pods[len(b.pods)-1]
			b.pods = b.pods[:len(b.pods)-1]
			freed += n
			out = append(out, agent.Reclaimed{Team: r.Team, Pool: r.Pool, Object: fmt.Sprintf("pod %s/own-%d", r.Team, len(b.pods)), Units: n})
		}
	}
	return out, nil
}

// A team holding 8 cores with a 4-core reservation inside its quota gets a limit of
// 8, not 12; running 12 cores of its own it is reported over by 4, and under an evict
// policy, once the grace has passed, the agent is told to take 4 back, evicts its
// newest pod, and the server records it, clears the excess and tells the team.
func TestTheAgentReportsWorkAboveTheLimitAndTakesItBack(t *testing.T) {
	m := newAgentMarket(t)
	ctx := context.Background()
	if err := m.app.Market.GrantQuota(ctx, "search", "us-east/cpu", 8); err != nil {
		t.Fatal(err)
	}
	m.reserve(4, time.Hour, 0, 2*time.Hour)
	if err := m.app.Plan.SetOverLimitPolicy(ctx, fleet.OverLimitPolicy{Action: fleet.OverLimitEvict, Grace: time.Minute}); err != nil {
		t.Fatal(err)
	}
	l, cluster := m.loop(m.token("us-east"), nil, io.Discard, io.Discard)
	b := &ownPods{Cluster: cluster, team: "search", pods: []int64{4, 4, 4}}
	l.Backend = b
	if err := l.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []agent.Quota{{Team: "search", Pool: "us-east/cpu", Units: 8}}; !slices.Equal(b.applied[0], want) {
		t.Fatalf("applied %+v, want %+v: a reservation inside the quota does not raise the limit", b.applied[0], want)
	}
	over, err := m.app.Plan.OverLimits(ctx, "search")
	if err != nil || len(over) != 1 || over[0].Used != 12 || over[0].Limit != 8 {
		t.Fatalf("over limits %+v %v, want search using 12 of its 8", over, err)
	}
	if len(b.asked) != 0 {
		t.Fatalf("reclaimed within the grace: %+v", b.asked)
	}
	m.clock.Advance(2 * time.Minute)
	if err := l.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if len(b.asked) != 1 || len(b.asked[0]) != 1 || b.asked[0][0].Units != 4 || b.asked[0][0].Team != "search" {
		t.Fatalf("asked to reclaim %+v, want search's 4 cores", b.asked)
	}
	if len(b.pods) != 2 {
		t.Fatalf("pods left %v, want the newest evicted", b.pods)
	}
	if over, _ := m.app.Plan.OverLimits(ctx, ""); len(over) != 0 {
		t.Fatalf("still over after the reclaim: %+v", over)
	}
	rec, err := m.app.Plan.RecentlyReclaimed(ctx, "search", 5)
	if err != nil || len(rec) != 1 || rec[0].Units != 4 || !strings.HasPrefix(rec[0].Object, "pod search/") {
		t.Fatalf("recorded reclaims %+v %v", rec, err)
	}
	ns, err := m.app.Market.Notices().Notifications(ctx, m.member.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, n := range ns {
		kinds = append(kinds, n.Kind)
	}
	if !slices.Contains(kinds, fleet.NoticeOverLimit) || !slices.Contains(kinds, fleet.NoticeReclaimed) {
		t.Fatalf("the team was told %v, want it over its limit and what was taken back", kinds)
	}
	if err := l.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if len(b.asked) != 1 {
		t.Fatalf("reclaimed again once under the limit: %+v", b.asked)
	}
}
