package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeAgent is the real agent loop, on the kubernetes backend against the test
// control plane, for cluster us-east of an agentMarket whose team search owns a fresh
// namespace.
type kubeAgent struct {
	m    *agentMarket
	ns   string
	cfg  *agent.Config
	loop *agent.Loop
}

func newKubeAgent(t *testing.T, m *agentMarket) *kubeAgent {
	t.Helper()
	cs := kubetest.Client(t)
	ns := kubetest.Namespace(t, cs)
	class := "ch-e2e-" + ns[len(ns)-5:]
	t.Cleanup(func() { _ = cs.SchedulingV1().PriorityClasses().Delete(context.Background(), class, metav1.DeleteOptions{}) })
	cfg, err := agent.ParseConfig("us-east.yaml", fmt.Appendf(nil, "cluster: us-east\nteams:\n  search: {namespaces: [%s]}\npools:\n  us-east/cpu: {resource: cpu, unit: \"1\"}\nkubernetes: {priority_class: %s, kueue: \"off\"}\n", ns, class))
	if err != nil {
		t.Fatal(err)
	}
	k := &kubeAgent{m: m, ns: ns, cfg: cfg}
	k.loop = k.start(m.token("us-east"))
	return k
}

// start opens a backend and a loop (as `clearhouse agent --backend kubernetes` does).
func (k *kubeAgent) start(token string) *agent.Loop {
	t := k.m.t
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := kubernetes.New(ctx, kubetest.Config(t), k.cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	client, err := agent.NewClient(k.m.app.Server.URL(), "us-east", token)
	if err != nil {
		t.Fatal(err)
	}
	return &agent.Loop{Client: client, Backend: b, Config: k.cfg, Out: io.Discard, ErrOut: io.Discard, Now: k.m.clock.Now, Every: time.Second}
}

func (k *kubeAgent) poll() {
	k.m.t.Helper()
	if err := k.loop.Poll(context.Background()); err != nil {
		k.m.t.Fatal(err)
	}
}

// buy has team search win cores of us-east/cpu at an auction.
func (m *agentMarket) buy(cores int64) {
	m.t.Helper()
	ctx := context.Background()
	a, err := m.app.Market.ScheduleAuction(ctx, m.clock.Now(), m.clock.Now().Add(time.Hour), auction.DefaultParams)
	if err != nil {
		m.t.Fatal(err)
	}
	if _, err := m.app.Market.OpenDue(ctx); err != nil {
		m.t.Fatal(err)
	}
	limit := 500 * ledger.Dollar
	if _, err := m.app.Market.PlaceOrder(ctx, m.member, exchange.OrderSpec{Team: m.member.TeamID, Bundles: []exchange.Bundle{{"us-east/cpu": cores}}, Limit: &limit}); err != nil {
		m.t.Fatal(err)
	}
	if _, err := m.app.Market.Close(ctx, a.ID); err != nil {
		m.t.Fatal(err)
	}
}

func cpuPod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

// A settlement reaches the team's ResourceQuota in one poll of the real agent, and the
// real quota admission holds the team to it: a pod beyond its quota is refused, and
// admitted after the team buys more.
func TestKubernetesSettlementBecomesTheEnforcedQuota(t *testing.T) {
	m := newAgentMarket(t)
	k := newKubeAgent(t, m)
	ctx := context.Background()
	cs := kubetest.Client(t)
	m.buy(4)
	k.poll()
	hard := func() string {
		q, err := cs.CoreV1().ResourceQuotas(k.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("after one poll: %v", err)
		}
		h := q.Spec.Hard[corev1.ResourceRequestsCPU]
		return h.String()
	}
	if got := hard(); got != "4" {
		t.Fatalf("after buying 4 cores and one poll the quota is %s", got)
	}
	admitted := func(want bool) {
		t.Helper()
		kubetest.Eventually(t, fmt.Sprintf("a 6-core pod admitted=%v", want), func() (bool, error) {
			_, err := cs.CoreV1().Pods(k.ns).Create(ctx, cpuPod("six", "6"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota")) {
				return false, err
			}
			return (err == nil) == want, nil
		})
	}
	admitted(false)
	m.buy(4)
	k.poll()
	if got := hard(); got != "8" {
		t.Fatalf("after buying 4 more cores and one poll the quota is %s", got)
	}
	admitted(true)
	if _, err := cs.CoreV1().Pods(k.ns).Create(ctx, cpuPod("six", "6"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the 6-core pod under an 8-core quota: %v", err)
	}
}
