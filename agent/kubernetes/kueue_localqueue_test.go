package kubernetes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuecs "sigs.k8s.io/kueue/client-go/clientset/versioned"
)

// kueueFixture is a backend writing the Kueue queues of one team, "ads", with one
// namespace, on the test control plane.
type kueueFixture struct {
	t                   *testing.T
	ctx                 context.Context
	b                   *kubernetes.Backend
	kq                  kueuecs.Interface
	ns, flavor, cq      string
	quotas              []agent.Quota
	lqObject, elsewhere string
}

func newKueueFixture(t *testing.T) *kueueFixture {
	cs := kubetest.Client(t)
	if _, err := cs.Discovery().ServerResourcesForGroupVersion("kueue.x-k8s.io/v1beta2"); err != nil {
		t.Skipf("the control plane has no Kueue CRDs (make kube-up installs them): %v", err)
	}
	kq, err := kueuecs.NewForConfig(kubetest.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	ns := kubetest.Namespace(t, cs)
	cluster := "kl-" + ns[len(ns)-5:]
	cfg, err := agent.ParseConfig("kl.yaml", fmt.Appendf(nil, "cluster: %s\nteams:\n  ads: {namespaces: [%s]}\npools:\n  %s/cpu: {resource: cpu, unit: \"1\"}\n", cluster, ns, cluster))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	b, err := kubernetes.New(ctx, kubetest.Config(t), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	flavor, _, cq := kubernetes.KueueNames(cluster, "ads")
	t.Cleanup(func() {
		_ = kq.KueueV1beta2().ClusterQueues().Delete(context.Background(), cq, metav1.DeleteOptions{})
		_ = kq.KueueV1beta2().ResourceFlavors().Delete(context.Background(), flavor, metav1.DeleteOptions{})
	})
	return &kueueFixture{t: t, ctx: ctx, b: b, kq: kq, ns: ns, flavor: flavor, cq: cq,
		quotas:   []agent.Quota{{Team: "ads", Pool: cluster + "/cpu", Units: 10}},
		lqObject: "LocalQueue " + ns + "/" + kubernetes.LocalQueueName + " clusterQueue", elsewhere: "clearhouse-" + cluster + "-other"}
}

// apply applies the same limits and returns the corrections; an error fails the test.
func (f *kueueFixture) apply() []agent.Correction {
	f.t.Helper()
	cs, err := f.b.ApplyQuotas(f.ctx, f.quotas)
	if err != nil {
		f.t.Fatal(err)
	}
	return cs
}

// applyUntilCorrected applies the same limits until an apply reports corrections (the
// backend's informers see another client's change a moment later) and returns them.
func (f *kueueFixture) applyUntilCorrected(what string) []agent.Correction {
	f.t.Helper()
	var cs []agent.Correction
	kubetest.Eventually(f.t, "a correction of "+what, func() (bool, error) {
		cs = f.apply()
		return len(cs) > 0, nil
	})
	return cs
}

// localQueue reads the team's LocalQueue from the API server.
func (f *kueueFixture) localQueue() *kueue.LocalQueue {
	f.t.Helper()
	lq, err := f.kq.KueueV1beta2().LocalQueues(f.ns).Get(f.ctx, kubernetes.LocalQueueName, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("LocalQueue %s/%s: %v", f.ns, kubernetes.LocalQueueName, err)
	}
	return lq
}

// replaceLocalQueue deletes the team's LocalQueue and creates one pointing at cq with
// labels, as `kubectl replace --force` of an edited copy does (Kueue makes
// spec.clusterQueue immutable, so repointing takes a new object). The backend's queue
// reconciler is held meanwhile: it would put the deleted queue back within
// milliseconds, before the create.
func (f *kueueFixture) replaceLocalQueue(cq string, labels map[string]string) {
	f.t.Helper()
	defer f.b.PauseQueues()()
	api := f.kq.KueueV1beta2().LocalQueues(f.ns)
	if err := api.Delete(f.ctx, kubernetes.LocalQueueName, metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
	lq := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: kubernetes.LocalQueueName, Labels: labels},
		Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq)}}
	if _, err := api.Create(f.ctx, lq, metav1.CreateOptions{FieldManager: "someone"}); err != nil {
		f.t.Fatal(err)
	}
}

// expectOnce checks that cs is exactly want, and that an apply at once after it (before
// the informers may have seen the correction) reports nothing.
func (f *kueueFixture) expectOnce(cs []agent.Correction, want agent.Correction) {
	f.t.Helper()
	if len(cs) != 1 || cs[0] != want {
		f.t.Fatalf("corrections %+v, want [%+v]", cs, want)
	}
	if again := f.apply(); len(again) != 0 {
		f.t.Fatalf("a second apply reported %+v, want nothing", again)
	}
}

// A LocalQueue someone deleted or repointed is put back by the apply that finds it,
// even though the team's ClusterQueue is unchanged, and reported once.
func TestKueueLocalQueueDriftIsPutBackOnce(t *testing.T) {
	f := newKueueFixture(t)
	if cs := f.apply(); len(cs) != 0 {
		t.Fatalf("the first apply reported %+v", cs)
	}
	if lq := f.localQueue(); string(lq.Spec.ClusterQueue) != f.cq {
		t.Fatalf("LocalQueue points at %q, want %q", lq.Spec.ClusterQueue, f.cq)
	}

	// Deleted: recreated by the apply that reports it.
	if err := f.kq.KueueV1beta2().LocalQueues(f.ns).Delete(f.ctx, kubernetes.LocalQueueName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := f.applyUntilCorrected("the deleted LocalQueue")
	if lq := f.localQueue(); string(lq.Spec.ClusterQueue) != f.cq || lq.Labels[kubernetes.ManagedBy] != kubernetes.FieldManager {
		t.Fatalf("after the correction the LocalQueue points at %q with labels %v", lq.Spec.ClusterQueue, lq.Labels)
	}
	f.expectOnce(cs, agent.Correction{Team: "ads", Object: f.lqObject, Was: "", Now: f.cq})

	// Repointed (a copy with the managed-by label, pointing elsewhere): put back.
	f.replaceLocalQueue(f.elsewhere, map[string]string{kubernetes.ManagedBy: kubernetes.FieldManager})
	cs = f.applyUntilCorrected("the repointed LocalQueue")
	if lq := f.localQueue(); string(lq.Spec.ClusterQueue) != f.cq {
		t.Fatalf("after the correction the LocalQueue points at %q, want %q", lq.Spec.ClusterQueue, f.cq)
	}
	f.expectOnce(cs, agent.Correction{Team: "ads", Object: f.lqObject, Was: f.elsewhere, Now: f.cq})
}

// A LocalQueue "clearhouse" without the managed-by label that points elsewhere is
// someone else's: the backend leaves it alone and names it in the error.
func TestKueueForeignLocalQueueIsLeftAlone(t *testing.T) {
	f := newKueueFixture(t)
	f.apply()
	f.replaceLocalQueue(f.elsewhere, nil)
	var err error
	kubetest.Eventually(t, "an error naming the foreign LocalQueue", func() (bool, error) {
		var cs []agent.Correction
		cs, err = f.b.ApplyQuotas(f.ctx, f.quotas)
		if len(cs) != 0 {
			return false, fmt.Errorf("corrections %+v, want none", cs)
		}
		return err != nil, nil
	})
	if !strings.Contains(err.Error(), "LocalQueue "+f.ns+"/clearhouse") || !strings.Contains(err.Error(), "not Clearhouse's") {
		t.Fatalf("error %q does not name the foreign LocalQueue", err)
	}
	if lq := f.localQueue(); string(lq.Spec.ClusterQueue) != f.elsewhere {
		t.Fatalf("the foreign LocalQueue now points at %q", lq.Spec.ClusterQueue)
	}
}

// The cluster's ResourceFlavor, deleted by someone, is recreated and reported once.
func TestKueueDeletedResourceFlavorIsRecreated(t *testing.T) {
	f := newKueueFixture(t)
	f.apply()
	if err := f.kq.KueueV1beta2().ResourceFlavors().Delete(f.ctx, f.flavor, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Kueue's controller (scripts/kube-up.sh runs it) holds a flavor a ClusterQueue uses
	// by its finalizer; deleted anyway, as here, the finalizer goes too.
	if _, err := f.kq.KueueV1beta2().ResourceFlavors().Patch(f.ctx, f.flavor, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	cs := f.applyUntilCorrected("the deleted ResourceFlavor")
	rf, err := f.kq.KueueV1beta2().ResourceFlavors().Get(f.ctx, f.flavor, metav1.GetOptions{})
	if err != nil || rf.Labels[kubernetes.ManagedBy] != kubernetes.FieldManager {
		t.Fatalf("after the correction ResourceFlavor %s: %+v, %v", f.flavor, rf, err)
	}
	f.expectOnce(cs, agent.Correction{Object: "ResourceFlavor", Now: f.flavor})
}

// A ClusterQueue someone deleted is recreated with the team's limits by the next
// apply that sees it gone, and reported once.
func TestKueueDeletedClusterQueueIsRecreatedAndReportedOnce(t *testing.T) {
	f := newKueueFixture(t)
	f.apply()
	if err := f.kq.KueueV1beta2().ClusterQueues().Delete(f.ctx, f.cq, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := f.applyUntilCorrected("the deleted ClusterQueue")
	cq, err := f.kq.KueueV1beta2().ClusterQueues().Get(f.ctx, f.cq, metav1.GetOptions{})
	if err != nil || cq.Labels[kubernetes.ManagedBy] != kubernetes.FieldManager {
		t.Fatalf("after the correction ClusterQueue %s: %+v, %v", f.cq, cq, err)
	}
	if got := cq.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota; got.String() != "10" {
		t.Fatalf("recreated ClusterQueue nominalQuota = %s, want the team's 10", got.String())
	}
	f.expectOnce(cs, agent.Correction{Team: "ads", Object: "ClusterQueue " + f.cq, Now: f.cq})
}
