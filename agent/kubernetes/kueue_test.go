package kubernetes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	kueuecs "sigs.k8s.io/kueue/client-go/clientset/versioned"
)

// Where Kueue's CRDs are installed (kueue: auto), ApplyQuotas also writes a
// ClusterQueue per team in the cluster's cohort, with the team's limits as nominal
// quotas, a ResourceFlavor, and a LocalQueue in each team namespace; the API server's
// validation of Kueue's schema accepts them, and a new limit reaches the queue.
func TestKueueQueuesAreWrittenAndAccepted(t *testing.T) {
	cs := kubetest.Client(t)
	if _, err := cs.Discovery().ServerResourcesForGroupVersion("kueue.x-k8s.io/v1beta2"); err != nil {
		t.Skipf("the control plane has no Kueue CRDs (make kube-up installs them): %v", err)
	}
	kq, err := kueuecs.NewForConfig(kubetest.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	ns1, ns2 := kubetest.Namespace(t, cs), kubetest.Namespace(t, cs)
	cluster := "kq-" + ns1[len(ns1)-5:]
	cfg, err := agent.ParseConfig("kq.yaml", fmt.Appendf(nil, `cluster: %s
teams:
  ads: {namespaces: [%s, %s]}
pools:
  %s/cpu: {resource: cpu, unit: "1"}
  %s/ram: {resource: memory, unit: 1Gi}
`, cluster, ns1, ns2, cluster, cluster))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := kubernetes.New(ctx, kubetest.Config(t), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	flavor, cohort, name := kubernetes.KueueNames(cluster, "ads")
	t.Cleanup(func() {
		_ = kq.KueueV1beta2().ClusterQueues().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = kq.KueueV1beta2().ResourceFlavors().Delete(context.Background(), flavor, metav1.DeleteOptions{})
	})
	apply := func(cores int64) {
		t.Helper()
		if _, err := b.ApplyQuotas(ctx, []agent.Quota{{Team: "ads", Pool: cluster + "/cpu", Units: cores}, {Team: "ads", Pool: cluster + "/ram", Units: 64}}); err != nil {
			t.Fatal(err)
		}
	}
	apply(10)
	cq, err := kq.KueueV1beta2().ClusterQueues().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rg := cq.Spec.ResourceGroups
	if string(cq.Spec.CohortName) != cohort || len(rg) != 1 || len(rg[0].Flavors) != 1 || string(rg[0].Flavors[0].Name) != flavor {
		t.Fatalf("ClusterQueue %s: cohort %q, groups %+v", name, cq.Spec.CohortName, rg)
	}
	nominal := map[corev1.ResourceName]string{}
	for _, r := range rg[0].Flavors[0].Resources {
		nominal[r.Name] = r.NominalQuota.String()
	}
	if nominal[corev1.ResourceCPU] != "10" || nominal[corev1.ResourceMemory] != "64Gi" {
		t.Fatalf("nominal quotas %v", nominal)
	}
	for _, ns := range []string{ns1, ns2} {
		lq, err := kq.KueueV1beta2().LocalQueues(ns).Get(ctx, kubernetes.LocalQueueName, metav1.GetOptions{})
		if err != nil || string(lq.Spec.ClusterQueue) != name {
			t.Fatalf("LocalQueue in %s: %+v %v", ns, lq, err)
		}
	}
	apply(12)
	cq, err = kq.KueueV1beta2().ClusterQueues().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cq.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota; got.String() != "12" {
		t.Fatalf("after a new limit the nominal cpu quota is %s", got.String())
	}
	// Without sharing settings: no lending limit; borrowing is always 0.
	for _, r := range cq.Spec.ResourceGroups[0].Flavors[0].Resources {
		if r.LendingLimit != nil || r.BorrowingLimit == nil || !r.BorrowingLimit.IsZero() {
			t.Fatalf("%s: lending %v, borrowing %v; want none and 0", r.Name, r.LendingLimit, r.BorrowingLimit)
		}
	}
	// With the cpu pool's settings (30% kept free): cpu lends 70% of 12 rounded down, 8;
	// memory, whose pool has no settings, still has no lending limit. The API server's
	// validation accepts the queue.
	b.SetPoolSharing([]agent.PoolSharing{{Pool: cluster + "/cpu", Policy: "fairshare", Exposure: 0.3}})
	apply(12)
	cq, err = kq.KueueV1beta2().ClusterQueues().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cq.Spec.ResourceGroups[0].Flavors[0].Resources {
		lend := "none"
		if r.LendingLimit != nil {
			lend = r.LendingLimit.String()
		}
		want := map[corev1.ResourceName]string{corev1.ResourceCPU: "8", corev1.ResourceMemory: "none"}[r.Name]
		if lend != want || r.BorrowingLimit == nil || !r.BorrowingLimit.IsZero() {
			t.Fatalf("%s: lending %s, want %s; borrowing %v, want 0", r.Name, lend, want, r.BorrowingLimit)
		}
	}
	// Drift: someone else raises the queue's nominal cpu quota to 99 (an update by
	// another client, as kubectl edit would). The next apply of the same limits puts
	// 12 back and reports the correction; the one after reports nothing. Read again on a
	// conflict: Kueue's controller, where it runs, writes the queue's status meanwhile.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cq, err = kq.KueueV1beta2().ClusterQueues().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cq.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota = resource.MustParse("99")
		_, err = kq.KueueV1beta2().ClusterQueues().Update(ctx, cq, metav1.UpdateOptions{FieldManager: "someone"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var corrections []agent.Correction
	deadline := time.Now().Add(30 * time.Second)
	for len(corrections) == 0 && time.Now().Before(deadline) {
		// The backend's informer sees the edit a moment later.
		time.Sleep(50 * time.Millisecond)
		corrections, err = b.ApplyQuotas(ctx, []agent.Quota{{Team: "ads", Pool: cluster + "/cpu", Units: 12}, {Team: "ads", Pool: cluster + "/ram", Units: 64}})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := agent.Correction{Team: "ads", Pool: cluster + "/cpu", Object: "ClusterQueue " + name + " nominalQuota", Was: "99", Now: "12"}
	if len(corrections) != 1 || corrections[0] != want {
		t.Fatalf("corrections %+v, want [%+v]", corrections, want)
	}
	cq, err = kq.KueueV1beta2().ClusterQueues().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cq.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota; got.String() != "12" {
		t.Fatalf("after the correction the nominal cpu quota is %s", got.String())
	}
	// At once, before the informer may have seen the correction: nothing twice.
	again, err := b.ApplyQuotas(ctx, []agent.Quota{{Team: "ads", Pool: cluster + "/cpu", Units: 12}, {Team: "ads", Pool: cluster + "/ram", Units: 64}})
	if err != nil || len(again) != 0 {
		t.Fatalf("a second apply reported %+v (%v), want nothing", again, err)
	}
}
