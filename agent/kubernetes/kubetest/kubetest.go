// Package kubetest connects tests to the real Kubernetes control plane that
// scripts/kube-up.sh starts on loopback (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok's fake nodes). A test that needs the cluster calls Config or
// Client, which skip the test when CLEARHOUSE_TEST_KUBECONFIG is unset, and Namespace for
// a namespace of its own that is deleted when the test ends. .ci/run starts the control
// plane and sets the variable, so these tests run in CI.
//
// The package depends on client-go only, never on the agent, so any package's tests can
// use it.
package kubetest

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// EnvKubeconfig names the environment variable that holds the path of an admin
// kubeconfig for the test control plane (scripts/kube-up.sh prints it).
const EnvKubeconfig = "CLEARHOUSE_TEST_KUBECONFIG"

// TestLabel labels every namespace Namespace makes, with the test's name as its value.
const TestLabel = "clearhouse.io/test"

// Timeout bounds each wait in this package: the control plane is local, so anything
// slower than this is a failure, not a slow machine.
const Timeout = 60 * time.Second

// Config returns an admin *rest.Config for the control plane named by
// CLEARHOUSE_TEST_KUBECONFIG. It skips the test under -short (a real control plane is
// the slow loop) or when the variable is unset, and fails it when the file cannot be
// loaded.
func Config(t testing.TB) *rest.Config {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the test needs a real Kubernetes control plane")
	}
	path := os.Getenv(EnvKubeconfig)
	if path == "" {
		t.Skipf("%s is not set: start a control plane with `make kube-up` and export the variable it prints", EnvKubeconfig)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("%s=%s: %v", EnvKubeconfig, path, err)
	}
	// Tests create objects in bursts; client-go's default of 5 requests a second would
	// make them wait on the client, not on the cluster.
	cfg.QPS, cfg.Burst = 200, 400
	cfg.UserAgent = "clearhouse-test"
	return cfg
}

// Client returns a clientset for Config(t) (skipping the test as Config does).
func Client(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(Config(t))
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return cs
}

var notName = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a fresh namespace for the test (named after it, with a random
// suffix, and labelled TestLabel), waits until its "default" ServiceAccount exists so that
// pods can be created in it, and deletes it when the test ends. It returns the name.
func Namespace(t testing.TB, cs kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	base := strings.Trim(notName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = strings.Trim(base[:40], "-")
	}
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "t-" + base + "-",
		Labels:       map[string]string{TestLabel: labelValue(base)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		err := cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns.Name, err)
		}
	})
	// The ServiceAccount admission plugin refuses pods until the controller manager has
	// made the namespace's default ServiceAccount.
	Eventually(t, "ServiceAccount "+ns.Name+"/default", func() (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return ns.Name
}

func labelValue(s string) string {
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-")
	}
	return s
}

// Eventually calls cond every 100ms until it returns true, and fails the test when it
// returns an error or Timeout passes first. what names the awaited state in the failure.
func Eventually(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not reached within %s", what, Timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitForPodPhase waits until the pod reaches phase and returns it. It fails the test
// when the pod disappears, ends in another terminal phase, or Timeout passes.
func WaitForPodPhase(t testing.TB, cs kubernetes.Interface, namespace, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	Eventually(t, fmt.Sprintf("pod %s/%s %s", namespace, name, phase), func() (bool, error) {
		p, err := cs.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		if p.Status.Phase != phase && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			return false, fmt.Errorf("pod ended %s", p.Status.Phase)
		}
		return p.Status.Phase == phase, nil
	})
	return pod
}

// WaitForQuotaAdmission waits until the API server's quota admission refuses probe, a
// pod that exceeds a ResourceQuota just created or changed in namespace, and fails the
// test when it does not within Timeout. The quota admission reads quotas from the API
// server's own informer, which can lag the written object (and the quota controller's
// status) under load: until it has the quota, pods are admitted as if there were none.
// The probe is a dry run, so it is never stored and never counted in the quota's usage.
func WaitForQuotaAdmission(t testing.TB, cs kubernetes.Interface, namespace string, probe *corev1.Pod) {
	t.Helper()
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	Eventually(t, fmt.Sprintf("quota admission in %s refusing pod %s", namespace, probe.Name), func() (bool, error) {
		_, err := cs.CoreV1().Pods(namespace).Create(context.Background(), probe, dryRun)
		switch {
		case err == nil:
			return false, nil
		case IsQuotaRefusal(err):
			return true, nil
		default:
			return false, err
		}
	})
}

// IsQuotaRefusal reports whether err is the quota admission's refusal of a request that
// would exceed a ResourceQuota.
func IsQuotaRefusal(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
}

// TeamClient returns a clientset that acts as user, a member of a team: it may do in
// namespace what the built-in ClusterRole "edit" allows (create pods, among others)
// and nothing cluster-wide, through the admin config's impersonation. The RoleBinding
// goes with the namespace.
func TeamClient(t testing.TB, cs kubernetes.Interface, namespace, user string) *kubernetes.Clientset {
	t.Helper()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "team-" + user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind %s to edit in %s: %v", user, namespace, err)
	}
	cfg := rest.CopyConfig(Config(t))
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	team, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset as %s: %v", user, err)
	}
	// RBAC's authorizer reads RoleBindings through an informer: wait until it allows.
	Eventually(t, user+" may create pods in "+namespace, func() (bool, error) {
		_, err := team.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{Limit: 1})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		return err == nil, err
	})
	return team
}
