package kube

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A cluster smaller than configured (issue 37), on the real control plane and the
// real agent, as TestSlurmClusterSmallerThanConfiguredSellsOnlyWhatItHas on Slurm:
// the pool says 1,000 cores, the kwok nodes' allocatable CPU sums to far less (128 in
// scripts/kube-up.sh). Search is granted all but 8 of the measured cores before any
// measurement; one agent poll later the pool's effective capacity is the measured
// one, and an auction with ten 1-core bids sells only the 8 cores left: teams end
// holding exactly the measured capacity, not 2 cores more, and the agent then sets
// search's ResourceQuota to it.
func TestKubernetesClusterSmallerThanConfiguredSellsOnlyWhatItHas(t *testing.T) {
	m := newAgentMarket(t)
	ctx := context.Background()
	cs := kubetest.Client(t)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cores int64
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			continue
		}
		q := n.Status.Allocatable[corev1.ResourceCPU]
		cores += q.MilliValue() / 1000
	}
	if cores < 20 || cores > 500 {
		t.Fatalf("the nodes have %d cores allocatable: this test wants 20 to 500", cores)
	}
	if _, err := m.App.Market.UpdatePool(ctx, "us-east/cpu", exchange.PoolSpec{Unit: "core", Capacity: 1000, UnitCost: ledger.Dollar,
		Utilization: 0.8, CurveID: "standard"}); err != nil {
		t.Fatal(err)
	}
	m.Clock.Set(time.Now().UTC())
	if err := m.App.Market.GrantQuota(ctx, "search", "us-east/cpu", cores-8); err != nil {
		t.Fatal(err)
	}
	k := newKubeAgent(t, m)
	k.poll()
	c, err := m.App.Market.Capacity(ctx, "us-east/cpu")
	if err != nil || c.Source != exchange.CapacityFromMeasured || c.Effective != cores || c.Configured != 1000 || c.Held != cores-8 {
		t.Fatalf("capacity after one poll %+v (%v), want the measured %d", c, err, cores)
	}

	a, err := m.App.Market.ScheduleAuction(ctx, m.Clock.Now(), m.Clock.Now().Add(time.Hour), auction.DefaultParams)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.App.Market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		limit := ledger.Money(5+5*i) * ledger.Dollar
		if _, err := m.App.Market.PlaceOrder(ctx, m.Member, exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"us-east/cpu": 1}}, Limit: &limit}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.App.Market.Close(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	hs, err := m.App.Market.Holdings(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var held int64
	for _, h := range hs {
		if h.PoolID == "us-east/cpu" {
			held += h.Quantity
		}
	}
	if held != cores {
		t.Fatalf("teams hold %d cores of us-east/cpu after the auction, want %d: the measured capacity, not the configured 1,000", held, cores)
	}
	k.poll()
	q, err := cs.CoreV1().ResourceQuotas(k.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := q.Spec.Hard[corev1.ResourceRequestsCPU]; h.Value() != cores {
		t.Errorf("search's quota %s, want %d", h.String(), cores)
	}
	if over, err := m.App.Market.Oversold(ctx); err != nil || len(over) != 0 {
		t.Errorf("oversold pools %+v (%v), want none", over, err)
	}
}
