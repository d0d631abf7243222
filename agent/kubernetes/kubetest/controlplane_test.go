package kubetest_test

import (
	"context"
	"testing"

	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// These tests prove what the Kubernetes backend relies on in the control plane that
// scripts/kube-up.sh starts: real quota admission, scheduling onto kwok's nodes, and
// ResourceQuota scopes by PriorityClass.

func pod(name, cpu, priorityClass string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			PriorityClassName: priorityClass,
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "busybox:1.36",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
				},
			}},
		},
	}
}

func quota(name, cpu string) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourceRequestsCPU: resource.MustParse(cpu),
		}},
	}
}

// createQuota creates q, waits until the quota controller has filled in its status and
// until admission refuses beyond, a pod that exceeds q: only then is q enforced.
func createQuota(t *testing.T, cs kubernetes.Interface, ns string, q *corev1.ResourceQuota, beyond *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create quota %s: %v", q.Name, err)
	}
	kubetest.Eventually(t, "quota "+q.Name+" status", func() (bool, error) {
		got, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, q.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, ok := got.Status.Hard[corev1.ResourceRequestsCPU]
		return ok, nil
	})
	kubetest.WaitForQuotaAdmission(t, cs, ns, beyond)
}

func usedCPU(t *testing.T, cs kubernetes.Interface, ns, name string) resource.Quantity {
	t.Helper()
	q, err := cs.CoreV1().ResourceQuotas(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get quota %s: %v", name, err)
	}
	return q.Status.Used[corev1.ResourceRequestsCPU]
}

func TestQuotaAdmissionRefusesBeyondHardAndAdmitsAfterRaise(t *testing.T) {
	cs := kubetest.Client(t)
	ns := kubetest.Namespace(t, cs)
	ctx := context.Background()
	createQuota(t, cs, ns, quota("clearhouse", "2"), pod("probe", "3", ""))

	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod("fits", "1500m", ""), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod within the quota was refused: %v", err)
	}
	_, err := cs.CoreV1().Pods(ns).Create(ctx, pod("beyond", "1", ""), metav1.CreateOptions{})
	if !kubetest.IsQuotaRefusal(err) {
		t.Fatalf("a pod beyond requests.cpu=2 (1.5 used): err = %v, want a Forbidden 'exceeded quota'", err)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, "beyond", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused pod exists: err = %v", err)
	}
	if used := usedCPU(t, cs, ns, "clearhouse"); used.Cmp(resource.MustParse("1500m")) != 0 {
		t.Fatalf("quota used requests.cpu = %s, want 1500m", used.String())
	}

	q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "clearhouse", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("3")
	if _, err := cs.CoreV1().ResourceQuotas(ns).Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("raise quota: %v", err)
	}
	// Admission reads quotas from an informer, so the raise reaches it a moment later;
	// until then the pod is refused as before, and nothing else is acceptable.
	kubetest.Eventually(t, "the pod admitted under the raised quota", func() (bool, error) {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, pod("beyond", "1", ""), metav1.CreateOptions{})
		if kubetest.IsQuotaRefusal(err) {
			return false, nil
		}
		return err == nil, err
	})
	if used := usedCPU(t, cs, ns, "clearhouse"); used.Cmp(resource.MustParse("2500m")) != 0 {
		t.Fatalf("quota used requests.cpu = %s after the second pod, want 2500m", used.String())
	}
}

func TestPodIsScheduledOnAKwokNodeAndRuns(t *testing.T) {
	cs := kubetest.Client(t)
	ns := kubetest.Namespace(t, cs)
	ctx := context.Background()
	p := pod("runs", "2", "")
	p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
	p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = resource.MustParse("1")
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	got := kubetest.WaitForPodPhase(t, cs, ns, "runs", corev1.PodRunning)
	node, err := cs.CoreV1().Nodes().Get(ctx, got.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pod's node %q: %v", got.Spec.NodeName, err)
	}
	if node.Annotations["kwok.x-k8s.io/node"] != "fake" {
		t.Fatalf("pod scheduled on %s, which kwok does not manage", node.Name)
	}
	gpus := node.Status.Allocatable["nvidia.com/gpu"]
	if gpus.Value() != 4 {
		t.Fatalf("node %s allocatable nvidia.com/gpu = %s, want 4", node.Name, gpus.String())
	}

	// A pod that no node can hold stays Pending, unscheduled: the scheduler is real.
	huge := pod("too-big", "1000", "")
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, huge, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	kubetest.Eventually(t, "too-big reported unschedulable", func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "too-big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("a pod requesting 1000 cpu was bound to %s", p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})
}

func TestScopedQuotaDoesNotCountPodsOfExcludedPriorityClass(t *testing.T) {
	cs := kubetest.Client(t)
	ns := kubetest.Namespace(t, cs)
	ctx := context.Background()
	never := corev1.PreemptLowerPriority
	pc, err := cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta:       metav1.ObjectMeta{GenerateName: "t-best-effort-"},
		Value:            -10,
		PreemptionPolicy: &never,
		Description:      "kubetest: pods outside the team's quota",
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create priority class: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.SchedulingV1().PriorityClasses().Delete(context.Background(), pc.Name, metav1.DeleteOptions{})
	})

	q := quota("clearhouse", "1")
	q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
		ScopeName: corev1.ResourceQuotaScopePriorityClass,
		Operator:  corev1.ScopeSelectorOpNotIn,
		Values:    []string{pc.Name},
	}}}
	createQuota(t, cs, ns, q, pod("probe", "2", ""))

	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod("best-effort", "4", pc.Name), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod of the excluded class, beyond the quota, was refused: %v", err)
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod("own", "500m", ""), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod within the quota was refused: %v", err)
	}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, pod("own-beyond", "1", ""), metav1.CreateOptions{})
	if !kubetest.IsQuotaRefusal(err) {
		t.Fatalf("a pod beyond the scoped quota: err = %v, want a Forbidden 'exceeded quota'", err)
	}
	if used := usedCPU(t, cs, ns, "clearhouse"); used.Cmp(resource.MustParse("500m")) != 0 {
		t.Fatalf("scoped quota used requests.cpu = %s, want 500m (the best-effort pod's 4 not counted)", used.String())
	}
	be := kubetest.WaitForPodPhase(t, cs, ns, "best-effort", corev1.PodRunning)
	if be.Spec.Priority == nil || *be.Spec.Priority != -10 {
		t.Fatalf("best-effort pod priority = %v, want -10 from its class", be.Spec.Priority)
	}
}
