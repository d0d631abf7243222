package kubernetes

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuelisters "sigs.k8s.io/kueue/client-go/listers/kueue/v1beta2"
)

// An informer that lags (here frozen: it never sees a write) still shows the deleted
// LocalQueue and ResourceFlavor as missing, and a repointed LocalQueue as repointed,
// after the backend put them back: each is reported once, as the API server decides.
func TestKueueCorrectionsAreReportedOnceWhileTheInformerLags(t *testing.T) {
	cs := kubetest.Client(t)
	if _, err := cs.Discovery().ServerResourcesForGroupVersion(kueueGroupVersion); err != nil {
		t.Skipf("the control plane has no Kueue CRDs (make kube-up installs them): %v", err)
	}
	ns := kubetest.Namespace(t, cs)
	cluster := "kg-" + ns[len(ns)-5:]
	cfg, err := agent.ParseConfig("kg.yaml", fmt.Appendf(nil, "cluster: %s\nteams:\n  ads: {namespaces: [%s]}\npools:\n  %s/cpu: {resource: cpu, unit: \"1\"}\n", cluster, ns, cluster))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := New(ctx, kubetest.Config(t), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	flavor, _, cq := KueueNames(cluster, "ads")
	api := b.queues.kq.KueueV1beta2()
	// The listers are swapped under the reconciler's lock: its worker reads them too.
	freeze := func(f func()) { b.queues.mu.Lock(); f(); b.queues.mu.Unlock() }
	t.Cleanup(func() {
		_ = api.ClusterQueues().Delete(context.Background(), cq, metav1.DeleteOptions{})
		_ = api.ResourceFlavors().Delete(context.Background(), flavor, metav1.DeleteOptions{})
	})
	quotas := []agent.Quota{{Team: "ads", Pool: cluster + "/cpu", Units: 10}}
	twice := func(what string, want agent.Correction) {
		t.Helper()
		for i, n := range []int{1, 0} {
			got, err := b.ApplyQuotas(ctx, quotas)
			if err != nil || len(got) != n || (n == 1 && got[0] != want) {
				t.Fatalf("%s, apply %d: corrections %+v (%v), want %d: %+v", what, i+1, got, err, n, want)
			}
		}
	}
	if _, err := b.ApplyQuotas(ctx, quotas); err != nil {
		t.Fatal(err)
	}

	freeze(func() {
		b.queues.localQueues = kueuelisters.NewLocalQueueLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}))
	})
	if err := api.LocalQueues(ns).Delete(ctx, LocalQueueName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	object := "LocalQueue " + ns + "/" + LocalQueueName + " clusterQueue"
	twice("deleted LocalQueue", agent.Correction{Team: "ads", Object: object, Now: cq})

	other := cq + "-other"
	resume := b.PauseQueues() // the two steps of a replace land before the backend sees the first
	if err := api.LocalQueues(ns).Delete(ctx, LocalQueueName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	lq, err := api.LocalQueues(ns).Create(ctx, &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: LocalQueueName, Labels: map[string]string{ManagedBy: FieldManager}},
		Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(other)}}, metav1.CreateOptions{})
	resume()
	if err != nil {
		t.Fatal(err)
	}
	stale := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := stale.Add(lq); err != nil {
		t.Fatal(err)
	}
	freeze(func() { b.queues.localQueues = kueuelisters.NewLocalQueueLister(stale) })
	twice("repointed LocalQueue", agent.Correction{Team: "ads", Object: object, Was: other, Now: cq})

	freeze(func() {
		b.queues.flavors = kueuelisters.NewResourceFlavorLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	})
	if err := api.ResourceFlavors().Delete(ctx, flavor, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Kueue's controller (scripts/kube-up.sh runs it) holds a flavor a ClusterQueue uses
	// by its finalizer; deleted anyway, as here, the finalizer goes too.
	if _, err := api.ResourceFlavors().Patch(ctx, flavor, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	twice("deleted ResourceFlavor", agent.Correction{Object: "ResourceFlavor", Now: flavor})
}
