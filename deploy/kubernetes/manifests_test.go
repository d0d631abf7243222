// Package kubernetes_test checks the manifests in deploy/kubernetes against a real API
// server (scripts/kube-up.sh; the tests skip without CLEARHOUSE_TEST_KUBECONFIG).
package kubernetes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
)

// manifests reads every object of every *.yaml file here.
func manifests(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if m != nil {
				objs = append(objs, &unstructured.Unstructured{Object: m})
			}
		}
	}
	return objs
}

// rename gives the manifests' namespaces and cluster-scoped names a suffix, so the test
// runs beside anything else on the shared control plane and cleans up after itself.
func rename(t *testing.T, objs []*unstructured.Unstructured, suffix string) {
	t.Helper()
	ns := func(n string) string { return n + "-" + suffix }
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "ClusterRole", "ClusterRoleBinding":
			o.SetName(ns(o.GetName()))
		}
		if o.GetNamespace() != "" {
			o.SetNamespace(ns(o.GetNamespace()))
		}
		if strings.HasSuffix(o.GetKind(), "Binding") {
			ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
			if kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind"); kind == "ClusterRole" {
				_ = unstructured.SetNestedField(o.Object, ns(ref), "roleRef", "name")
			}
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			for _, s := range subjects {
				s := s.(map[string]any)
				if n, ok := s["namespace"].(string); ok {
					s["namespace"] = ns(n)
				}
			}
			_ = unstructured.SetNestedSlice(o.Object, subjects, "subjects")
		}
	}
}

type cluster struct {
	cs     *kubernetes.Clientset
	dc     dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// apply server-side applies o (dry run when dryRun), with strict field validation.
func (c cluster) apply(t *testing.T, o *unstructured.Unstructured, dryRun bool) error {
	t.Helper()
	gvk := o.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	data, err := json.Marshal(o.Object)
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: "clearhouse-deploy-test", FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = c.dc.Resource(m.Resource).Namespace(o.GetNamespace()).Patch(context.Background(), o.GetName(), types.ApplyPatchType, data, opts)
	return err
}

func (c cluster) delete(o *unstructured.Unstructured) {
	gvk := o.GroupVersionKind()
	if m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		_ = c.dc.Resource(m.Resource).Namespace(o.GetNamespace()).Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
	}
}

// Every manifest is accepted by the API server (server-side apply, dry run, strict field
// validation), and the agent's ServiceAccount can do what the Kubernetes backend needs
// and no more.
func TestManifestsApplyAndAgentRBACIsLeastPrivilege(t *testing.T) {
	cfg := kubetest.Config(t)
	c := cluster{cs: kubetest.Client(t)}
	var err error
	if c.dc, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.cs.Discovery()))

	suffix := utilrand.String(5)
	objs := manifests(t)
	rename(t, objs, suffix)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	for _, k := range []string{"Deployment", "Service", "PersistentVolumeClaim", "ServiceAccount", "ConfigMap", "Secret", "ClusterRole", "ClusterRoleBinding", "RoleBinding"} {
		if kinds[k] == 0 {
			t.Errorf("the manifests have no %s", k)
		}
	}

	// Namespaces first, for real: objects in them cannot be dry-run otherwise.
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			continue
		}
		if err := c.apply(t, o, false); err != nil {
			t.Fatalf("apply Namespace %s: %v", o.GetName(), err)
		}
		t.Cleanup(func() { c.delete(o) })
	}
	for _, o := range objs {
		if err := c.apply(t, o, true); err != nil {
			t.Errorf("dry-run apply %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	// The agent's identity and its RBAC for real, to ask the authorizer.
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "RoleBinding":
			if err := c.apply(t, o, false); err != nil {
				t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
			}
			t.Cleanup(func() { c.delete(o) })
		}
	}

	user := "system:serviceaccount:clearhouse-" + suffix + ":clearhouse-agent"
	team, home := "ads-"+suffix, "clearhouse-"+suffix
	type access struct{ verb, group, resource, namespace string }
	allowed := []access{
		{"list", "", "namespaces", ""}, {"watch", "", "namespaces", ""},
		{"list", "", "nodes", ""}, {"watch", "", "nodes", ""},
		{"list", "", "pods", ""}, {"watch", "", "pods", ""},
		{"list", "", "resourcequotas", ""}, {"watch", "", "resourcequotas", ""},
		{"patch", "", "resourcequotas", team}, {"create", "", "resourcequotas", team},
		{"create", "", "pods", team}, {"delete", "", "pods", team}, {"get", "", "pods", team},
		{"create", "", "pods/eviction", team}, // reclaim
		{"get", "scheduling.k8s.io", "priorityclasses", ""}, {"create", "scheduling.k8s.io", "priorityclasses", ""},
		// Events on the objects it corrects (cluster-scoped ones land in default).
		{"create", "", "events", team}, {"patch", "", "events", team}, {"create", "", "events", "default"},
		// rbac-kueue.yaml (optional): the Kueue queues the backend applies.
		{"patch", "kueue.x-k8s.io", "clusterqueues", ""}, {"create", "kueue.x-k8s.io", "clusterqueues", ""},
		{"list", "kueue.x-k8s.io", "clusterqueues", ""}, {"watch", "kueue.x-k8s.io", "clusterqueues", ""}, {"get", "kueue.x-k8s.io", "clusterqueues", ""},
		{"patch", "kueue.x-k8s.io", "resourceflavors", ""}, {"create", "kueue.x-k8s.io", "resourceflavors", ""},
		{"get", "kueue.x-k8s.io", "resourceflavors", ""}, {"list", "kueue.x-k8s.io", "resourceflavors", ""}, {"watch", "kueue.x-k8s.io", "resourceflavors", ""},
		{"patch", "kueue.x-k8s.io", "localqueues", team}, {"create", "kueue.x-k8s.io", "localqueues", team},
		{"get", "kueue.x-k8s.io", "localqueues", ""}, {"list", "kueue.x-k8s.io", "localqueues", ""}, {"watch", "kueue.x-k8s.io", "localqueues", ""},
		// a repointed LocalQueue is put back by delete and create (spec.clusterQueue is immutable)
		{"delete", "kueue.x-k8s.io", "localqueues", team},
	}
	denied := []access{
		{"delete", "", "namespaces", ""}, {"create", "", "namespaces", ""},
		{"get", "", "secrets", team}, {"list", "", "secrets", ""}, {"get", "", "secrets", "kube-system"},
		{"get", "", "secrets", home}, {"get", "", "configmaps", team},
		{"create", "", "pods", "kube-system"}, {"create", "", "pods", home}, {"delete", "", "pods", "kube-system"},
		{"patch", "", "resourcequotas", "kube-system"}, {"delete", "", "resourcequotas", team},
		{"create", "", "pods/exec", team}, {"create", "", "pods/eviction", "kube-system"}, {"update", "", "nodes", ""}, {"delete", "", "nodes", ""},
		{"update", "scheduling.k8s.io", "priorityclasses", ""}, {"delete", "scheduling.k8s.io", "priorityclasses", ""},
		{"patch", "rbac.authorization.k8s.io", "clusterroles", ""}, {"create", "rbac.authorization.k8s.io", "rolebindings", team},
		{"delete", "kueue.x-k8s.io", "clusterqueues", ""}, {"update", "kueue.x-k8s.io", "clusterqueues", ""},
		{"patch", "kueue.x-k8s.io", "cohorts", ""}, {"patch", "kueue.x-k8s.io", "workloads", team},
		{"patch", "kueue.x-k8s.io", "localqueues", "kube-system"}, {"delete", "kueue.x-k8s.io", "localqueues", "kube-system"},
		{"delete", "kueue.x-k8s.io", "localqueues", home}, {"delete", "kueue.x-k8s.io", "resourceflavors", ""},
		{"create", "", "serviceaccounts/token", home},
		{"update", "", "resourcequotas", team}, {"list", "scheduling.k8s.io", "priorityclasses", ""},
		{"delete", "", "events", team}, {"list", "", "events", team},
	}
	can := func(a access) bool {
		t.Helper()
		res := a.resource
		sub := ""
		if i := strings.Index(res, "/"); i >= 0 {
			res, sub = res[:i], res[i+1:]
		}
		sar, err := c.cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + home, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: a.verb, Group: a.group, Resource: res, Subresource: sub, Namespace: a.namespace,
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SubjectAccessReview %+v: %v", a, err)
		}
		return sar.Status.Allowed
	}
	for _, a := range allowed {
		if !can(a) {
			t.Errorf("the agent cannot %s %s %s in %q; the backend needs it", a.verb, a.group, a.resource, a.namespace)
		}
	}
	for _, a := range denied {
		if can(a) {
			t.Errorf("the agent can %s %s %s in %q; it must not", a.verb, a.group, a.resource, a.namespace)
		}
	}
}
