package kube

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A free reservation (issue 37), on the real control plane and the real agent: search
// holds 8 cores; a 4-core reservation running in this slot fits in them, costs nothing and
// leaves search's ResourceQuota at 8 (a 9-core pod is still refused by the API
// server's quota admission). A second reservation of 10 cores, running beside it from the next slot, takes
// 14 cores in all, 6 beyond the 8 held: the quota rises by exactly those 6, to 14 (a
// 14-core pod admitted, a 15-core one refused).
func TestKubernetesAFreeReservationDoesNotRaiseTheQuota(t *testing.T) {
	m := newAgentMarket(t)
	k := newKubeAgent(t, m)
	ctx := context.Background()
	cs := kubetest.Client(t)
	// Both polls of the first slot fall within it: the test does not start in a slot's
	// last minute.
	if left := time.Until(time.Now().Truncate(5 * time.Minute).Add(5 * time.Minute)); left < time.Minute {
		time.Sleep(left)
	}
	slot := time.Now().UTC().Truncate(5 * time.Minute)
	m.Clock.Set(slot)
	if err := m.App.Market.GrantQuota(ctx, "search", "us-east/cpu", 8); err != nil {
		t.Fatal(err)
	}
	hard := func() string {
		t.Helper()
		q, err := cs.CoreV1().ResourceQuotas(k.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h := q.Spec.Hard[corev1.ResourceRequestsCPU]
		return h.String()
	}
	admitted := func(cores int) bool {
		t.Helper()
		_, err := cs.CoreV1().Pods(k.ns).Create(ctx, cpuPod(fmt.Sprintf("probe-%d", cores), fmt.Sprint(cores)), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && !kubetest.IsQuotaRefusal(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	first := m.Reserve(4, time.Hour, 0, time.Hour)
	second := m.Reserve(10, time.Hour, 5*time.Minute, 65*time.Minute) // its window leaves it only the next slot
	for v, want := range map[int64]time.Time{first.ID: slot, second.ID: slot.Add(5 * time.Minute)} {
		if r := m.Reservation(v); r.Requests[0].StartAt == nil || !r.Requests[0].StartAt.Equal(want) {
			t.Fatalf("reservation %d starts at %v, want %v", v, r.Requests[0].StartAt, want)
		}
	}
	k.poll()
	if got := hard(); got != "8" {
		t.Fatalf("search's quota holding 8 cores with a 4-core reservation inside them: %s, want 8", got)
	}
	kubetest.WaitForQuotaAdmission(t, cs, k.ns, cpuPod("probe-9", "9"))
	if !admitted(8) {
		t.Fatal("an 8-core pod refused under search's 8-core quota")
	}

	m.Clock.Set(slot.Add(5 * time.Minute))
	k.poll()
	if got := hard(); got != "14" {
		t.Fatalf("search's quota holding 8 cores with reservations of 4 and 10 running: %s, want 14 (8 held and the 6 beyond them)", got)
	}
	kubetest.Eventually(t, "a 14-core pod admitted under the raised quota", func() (bool, error) { return admitted(14), nil })
	if admitted(15) {
		t.Fatal("a 15-core pod admitted under a 14-core quota")
	}
}
