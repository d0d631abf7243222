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
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// fixture is a backend on the test control plane for team "ads" in a fresh namespace,
// with pools us-east/cpu (1 core), us-east/ram (1Gi) and us-east/gpu, and a
// PriorityClass of its own (cluster-scoped, so unique per test).
type fixture struct {
	t     testing.TB
	cs    *k8s.Clientset
	ns    string
	class string
	cfg   *agent.Config
	b     *kubernetes.Backend
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	cs := kubetest.Client(t)
	f := &fixture{t: t, cs: cs, ns: kubetest.Namespace(t, cs)}
	f.class = "ch-be-" + f.ns[len(f.ns)-5:]
	yaml := fmt.Sprintf(`cluster: us-east
teams:
  ads: {namespaces: [%s]}
pools:
  us-east/cpu: {resource: cpu, unit: "1"}
  us-east/ram: {resource: memory, unit: "1Gi"}
  us-east/gpu: {resource: nvidia.com/gpu, unit: "1"}
kubernetes: {priority_class: %s, kueue: "off"}
`, f.ns, f.class)
	cfg, err := agent.ParseConfig("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate("us-east"); err != nil {
		t.Fatal(err)
	}
	f.cfg = cfg
	f.b = f.open()
	t.Cleanup(func() {
		_ = cs.SchedulingV1().PriorityClasses().Delete(context.Background(), f.class, metav1.DeleteOptions{})
	})
	return f
}

// open starts a backend (as a restarted agent would).
func (f *fixture) open() *kubernetes.Backend {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := kubernetes.New(ctx, kubetest.Config(f.t), f.cfg, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = b.Close() })
	return b
}

func (f *fixture) apply(units int64) []agent.Correction { return f.applyGrant(units, nil) }

// applyGrant applies ads's limit of units cores and 64 GiB, and the best-effort grant
// of each pool (pool -> units).
func (f *fixture) applyGrant(units int64, grant map[string]int64) []agent.Correction {
	f.t.Helper()
	cs, err := f.b.ApplyQuotas(context.Background(), f.want(units, grant))
	if err != nil {
		f.t.Fatal(err)
	}
	return cs
}

func (f *fixture) want(units int64, grant map[string]int64) []agent.Quota {
	return []agent.Quota{{Team: "ads", Pool: "us-east/cpu", Units: units, BestEffort: grant["us-east/cpu"]},
		{Team: "ads", Pool: "us-east/gpu", BestEffort: grant["us-east/gpu"]},
		{Team: "ads", Pool: "us-east/ram", Units: 64, BestEffort: grant["us-east/ram"]}}
}

// waitHard waits until the informer-independent API shows requests.cpu = want in the
// team's own quota.
func (f *fixture) waitHard(want string) *corev1.ResourceQuota {
	f.t.Helper()
	return f.waitQuota(kubernetes.QuotaName, want)
}

// waitQuota waits until the API shows requests.cpu = want in the quota of that name,
// in its spec and in the status the quota controller fills (then admission enforces it).
func (f *fixture) waitQuota(name, want string) *corev1.ResourceQuota {
	f.t.Helper()
	var q *corev1.ResourceQuota
	kubetest.Eventually(f.t, "quota "+name+" requests.cpu "+want, func() (bool, error) {
		var err error
		q, err = f.cs.CoreV1().ResourceQuotas(f.ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		h := q.Spec.Hard[corev1.ResourceRequestsCPU]
		// The quota controller fills status.hard once it has seen the spec: admission then enforces it.
		s := q.Status.Hard[corev1.ResourceRequestsCPU]
		return h.String() == want && s.String() == want, nil
	})
	return q
}

func ownerPod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
}

// The quota a team holds becomes its namespace's ResourceQuota, which the real quota
// admission enforces: a pod beyond it is refused, and admitted once the team holds
// more. Someone else's edit of the limits is put back and reported; a second apply of
// the same limits writes nothing and reports nothing.
func TestQuotaIsEnforcedByAdmissionAndDriftIsCorrected(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if cs := f.apply(4); len(cs) != 0 {
		t.Fatalf("a first write reported corrections: %v", cs)
	}
	q := f.waitHard("4")
	if q.Labels[kubernetes.ManagedBy] != "clearhouse" || q.Spec.ScopeSelector == nil || q.Spec.ScopeSelector.MatchExpressions[0].Values[0] != f.class {
		t.Fatalf("quota: labels %v, scope %v", q.Labels, q.Spec.ScopeSelector)
	}
	if m := q.Spec.Hard[corev1.ResourceName("requests.memory")]; m.String() != "64Gi" {
		t.Fatalf("requests.memory = %s, want 64Gi", m.String())
	}
	// The API server's quota admission learns of the new quota through its own informer.
	kubetest.WaitForQuotaAdmission(t, f.cs, f.ns, ownerPod("big", "5"))
	if _, err := f.cs.CoreV1().Pods(f.ns).Create(ctx, ownerPod("big", "5"), metav1.CreateOptions{}); !kubetest.IsQuotaRefusal(err) {
		t.Fatalf("a 5-core pod under a 4-core quota: %v", err)
	}
	if cs := f.apply(8); len(cs) != 0 {
		t.Fatalf("a change of want reported as drift: %v", cs)
	}
	f.waitHard("8")
	// The quota admission reads quotas through its own informer, which may lag the
	// written object by a moment: a refusal citing the old limit is retried.
	kubetest.Eventually(t, "the 5-core pod admitted under an 8-core quota", func() (bool, error) {
		_, err := f.cs.CoreV1().Pods(f.ns).Create(ctx, ownerPod("big", "5"), metav1.CreateOptions{})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "limited: requests.cpu=4") {
			return false, nil
		}
		return err == nil, err
	})
	// Someone edits our limit.
	q = f.waitHard("8")
	q.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("100")
	if _, err := f.cs.CoreV1().ResourceQuotas(f.ns).Update(ctx, q, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	var corrections []agent.Correction
	kubetest.Eventually(t, "the drift seen by the informer and corrected", func() (bool, error) {
		cs, err := f.b.ApplyQuotas(ctx, []agent.Quota{{Team: "ads", Pool: "us-east/cpu", Units: 8}, {Team: "ads", Pool: "us-east/ram", Units: 64}})
		corrections = append(corrections, cs...)
		return len(corrections) > 0, err
	})
	want := agent.Correction{Team: "ads", Pool: "us-east/cpu", Object: "ResourceQuota " + f.ns + "/clearhouse", Was: "100", Now: "8"}
	if len(corrections) != 1 || corrections[0] != want {
		t.Fatalf("corrections %v, want [%v]", corrections, want)
	}
	f.waitHard("8")
	// Settled: the same limits again write nothing (the resourceVersion stays) and report nothing.
	kubetest.Eventually(t, "a quiet apply", func() (bool, error) {
		before, err := f.cs.CoreV1().ResourceQuotas(f.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cs := f.apply(8)
		after, err := f.cs.CoreV1().ResourceQuotas(f.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{})
		return err == nil && len(cs) == 0 && before.Spec.Hard.Cpu() != nil && after.Generation == before.Generation &&
			after.Annotations[kubernetes.AnnotationHard] == before.Annotations[kubernetes.AnnotationHard] && sameHard(before, after), err
	})
}

func sameHard(a, b *corev1.ResourceQuota) bool {
	x, y := a.Spec.Hard[corev1.ResourceRequestsCPU], b.Spec.Hard[corev1.ResourceRequestsCPU]
	return x.Cmp(y) == 0 && a.ResourceVersion != "" && a.Labels[kubernetes.ManagedBy] == b.Labels[kubernetes.ManagedBy]
}

// A ResourceQuota named clearhouse that someone else made is never edited.
func TestAQuotaItDoesNotOwnIsLeftAlone(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	theirs := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: kubernetes.QuotaName},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("3")}}}
	if _, err := f.cs.CoreV1().ResourceQuotas(f.ns).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, "the apply refused", func() (bool, error) {
		_, err := f.b.ApplyQuotas(ctx, []agent.Quota{{Team: "ads", Pool: "us-east/cpu", Units: 8}})
		return err != nil && strings.Contains(err.Error(), "is not Clearhouse's"), nil
	})
	q, err := f.cs.CoreV1().ResourceQuotas(f.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := q.Spec.Hard[corev1.ResourceRequestsCPU]; h.String() != "3" || len(q.Labels) != 0 {
		t.Fatalf("their quota was changed: %v %v", q.Spec.Hard, q.Labels)
	}
}
