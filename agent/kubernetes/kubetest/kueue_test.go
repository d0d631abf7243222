package kubetest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var clusterQueues = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}

func clusterQueue(name string, covered []any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2",
		"kind":       "ClusterQueue",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"cohortName": "kubetest",
			"resourceGroups": []any{map[string]any{
				"coveredResources": covered,
				"flavors": []any{map[string]any{
					"name": "default",
					"resources": []any{map[string]any{
						"name": "cpu", "nominalQuota": "8", "borrowingLimit": "4", "lendingLimit": "2",
					}},
				}},
			}},
		},
	}}
}

// Kueue's CRDs (kube-up.sh installs them unless --no-kueue) are established and the API
// server validates ClusterQueues against their schema: a valid one is stored, one whose
// flavor does not list every covered resource is refused.
func TestKueueClusterQueuesValidatedByAPIServer(t *testing.T) {
	cfg := kubetest.Config(t)
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubetest.Client(t)
	if _, err := cs.Discovery().ServerResourcesForGroupVersion("kueue.x-k8s.io/v1beta2"); apierrors.IsNotFound(err) {
		t.Skip("Kueue's CRDs are not installed (kube-up.sh --no-kueue)")
	} else if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A name of this run's own: Kueue's controller, where it runs, holds a deleted queue
	// by its finalizer for a moment, so a fixed name could still be taken by the last run's.
	name := fmt.Sprintf("t-%s-%x", strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-"))[:20], time.Now().UnixNano())
	cqs := dc.Resource(clusterQueues)
	if _, err := cqs.Create(ctx, clusterQueue(name, []any{"cpu"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a valid ClusterQueue was refused: %v", err)
	}
	t.Cleanup(func() { _ = cqs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	got, err := cqs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q, _, _ := unstructured.NestedString(got.Object, "spec", "cohortName"); q != "kubetest" {
		t.Fatalf("stored cohortName = %q, want kubetest", q)
	}
	_, err = cqs.Create(ctx, clusterQueue(name+"-bad", []any{"cpu", "memory"}), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("a ClusterQueue whose flavor lacks a covered resource: err = %v, want Invalid", err)
	}
}
