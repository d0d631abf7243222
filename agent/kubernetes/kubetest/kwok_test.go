package kubetest_test

import (
	"context"
	"testing"

	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The control plane's kwok ends a Running pod when a test annotates it
// clearhouse.io/kwok-exit (tools/kube/kwok-stages.yaml), as its container would.
func TestKwokExitAnnotationEndsPod(t *testing.T) {
	cs := kubetest.Client(t)
	ns := kubetest.Namespace(t, cs)
	ctx := context.Background()
	for _, c := range []struct {
		name, exit string
		phase      corev1.PodPhase
		code       int32
	}{{"done", "0", corev1.PodSucceeded, 0}, {"fails", "1", corev1.PodFailed, 1}} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod(c.name, "100m", ""), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", c.name, err)
		}
		kubetest.WaitForPodPhase(t, cs, ns, c.name, corev1.PodRunning)
		patch := []byte(`{"metadata":{"annotations":{"clearhouse.io/kwok-exit":"` + c.exit + `"}}}`)
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, c.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("annotate pod %s: %v", c.name, err)
		}
		got := kubetest.WaitForPodPhase(t, cs, ns, c.name, c.phase)
		if len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].State.Terminated == nil {
			t.Fatalf("pod %s: container statuses %+v, want one terminated", c.name, got.Status.ContainerStatuses)
		}
		if term := got.Status.ContainerStatuses[0].State.Terminated; term.ExitCode != c.code {
			t.Fatalf("pod %s exit code %d, want %d", c.name, term.ExitCode, c.code)
		}
	}
}
