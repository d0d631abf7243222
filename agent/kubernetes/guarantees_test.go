package kubernetes_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// These tests prove what the backend guarantees (docs/kubernetes.md, "Guarantees") on
// the real control plane: each fails on a backend that lacks the guarantee.

// classPod is a pod of the best-effort PriorityClass requesting cpu cores (and 1Gi),
// as a team member could write it.
func (f *fixture) classPod(name, cpu string) *corev1.Pod {
	p := ownerPod(name, cpu)
	p.Spec.PriorityClassName = f.class
	return p
}

// The best-effort PriorityClass is no way around a team's quota: with a grant of 0 a
// team member's own 30-core pod of the class is refused by the API server's quota
// admission; the grant admits the agent's task and nothing beyond it; a change of the
// grant is no drift, someone's edit of the best-effort quota is.
func TestTheBestEffortClassRunsOnlyWithinTheGrant(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	team := kubetest.TeamClient(t, f.cs, f.ns, "ads-member")
	if cs := f.applyGrant(0, nil); len(cs) != 0 {
		t.Fatalf("a first write reported corrections: %v", cs)
	}
	q := f.waitQuota(kubernetes.BestEffortQuotaName, "0")
	if q.Labels[kubernetes.ManagedBy] != "clearhouse" || q.Spec.ScopeSelector == nil || len(q.Spec.ScopeSelector.MatchExpressions) != 1 ||
		q.Spec.ScopeSelector.MatchExpressions[0].Operator != corev1.ScopeSelectorOpIn || !slices.Equal(q.Spec.ScopeSelector.MatchExpressions[0].Values, []string{f.class}) {
		t.Fatalf("best-effort quota: labels %v, scope %+v", q.Labels, q.Spec.ScopeSelector)
	}
	// The class exists (the agent makes it when it first runs a task; here the test).
	if _, err := f.b.SyncTasks(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitForQuotaAdmission(t, f.cs, f.ns, f.classPod("probe", "1"))
	_, err := team.CoreV1().Pods(f.ns).Create(ctx, f.classPod("bypass", "30"), metav1.CreateOptions{})
	if !kubetest.IsQuotaRefusal(err) || !strings.Contains(err.Error(), kubernetes.BestEffortQuotaName) {
		t.Fatalf("a team's 30-core pod of the best-effort class with a grant of 0: %v; want refused by quota %s", err, kubernetes.BestEffortQuotaName)
	}
	// The market grants one task's configuration: the task runs, a second pod of the
	// class beyond the grant is refused.
	if cs := f.applyGrant(0, map[string]int64{"us-east/cpu": 6, "us-east/ram": 2, "us-east/gpu": 1}); len(cs) != 0 {
		t.Fatalf("a change of the grant reported as drift: %v", cs)
	}
	f.waitQuota(kubernetes.BestEffortQuotaName, "6")
	f.sync(f.b, "the granted task started", []agent.Task{task(1)}, nil, func(e []agent.TaskEvent) bool { return len(e) > 0 })
	kubetest.WaitForQuotaAdmission(t, f.cs, f.ns, f.classPod("probe", "1"))
	if _, err := team.CoreV1().Pods(f.ns).Create(ctx, f.classPod("bypass", "1"), metav1.CreateOptions{}); !kubetest.IsQuotaRefusal(err) {
		t.Fatalf("a pod of the class beyond a grant the task uses up: %v", err)
	}
	// Someone raises the best-effort quota: put back, and reported as drift.
	q = f.waitQuota(kubernetes.BestEffortQuotaName, "6")
	q.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("100")
	if _, err := f.cs.CoreV1().ResourceQuotas(f.ns).Update(ctx, q, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	grant := map[string]int64{"us-east/cpu": 6, "us-east/ram": 2, "us-east/gpu": 1}
	var corrections []agent.Correction
	kubetest.Eventually(t, "the drift seen and corrected", func() (bool, error) {
		cs, err := f.b.ApplyQuotas(ctx, f.want(0, grant))
		corrections = append(corrections, cs...)
		return len(corrections) > 0, err
	})
	want := agent.Correction{Team: "ads", Pool: "us-east/cpu", Object: "ResourceQuota " + f.ns + "/" + kubernetes.BestEffortQuotaName, Was: "100", Now: "6"}
	if len(corrections) != 1 || corrections[0] != want {
		t.Fatalf("corrections %v, want [%v]", corrections, want)
	}
	f.waitQuota(kubernetes.BestEffortQuotaName, "6")
	// Settled: the same grant again writes nothing and reports nothing.
	kubetest.Eventually(t, "a quiet apply", func() (bool, error) {
		before, err := f.cs.CoreV1().ResourceQuotas(f.ns).Get(ctx, kubernetes.BestEffortQuotaName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cs := f.applyGrant(0, grant)
		after, err := f.cs.CoreV1().ResourceQuotas(f.ns).Get(ctx, kubernetes.BestEffortQuotaName, metav1.GetOptions{})
		return err == nil && len(cs) == 0 && after.ResourceVersion == before.ResourceVersion, err
	})
}

// A team with several namespaces: its whole grant is in its first namespace, where
// its tasks run, and 0 in the others.
func TestTheGrantIsAllInTheTeamsFirstNamespace(t *testing.T) {
	cs := kubetest.Client(t)
	first, second := kubetest.Namespace(t, cs), kubetest.Namespace(t, cs)
	nss := []string{first, second}
	slices.Sort(nss) // the selector's order
	label := "clearhouse.io/test-team-" + nss[0][len(nss[0])-5:]
	for _, ns := range nss {
		n, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels[label] = "ads"
		if _, err := cs.CoreV1().Namespaces().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := agent.ParseConfig("t.yaml", fmt.Appendf(nil, "cluster: us-east\nteams:\n  ads: {selector: %q}\npools:\n  us-east/cpu: {resource: cpu, unit: \"1\"}\nkubernetes: {kueue: \"off\"}\n", label+"=ads"))
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
	kubetest.Eventually(t, "both namespaces' quotas written", func() (bool, error) {
		_, err := b.ApplyQuotas(ctx, []agent.Quota{{Team: "ads", Pool: "us-east/cpu", Units: 5, BestEffort: 7}})
		if err != nil && !strings.Contains(err.Error(), "none of its namespaces") {
			return false, err
		}
		got := map[string]string{}
		for _, ns := range nss {
			for _, name := range []string{kubernetes.QuotaName, kubernetes.BestEffortQuotaName} {
				q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return false, nil
				}
				if err != nil {
					return false, err
				}
				h := q.Spec.Hard[corev1.ResourceRequestsCPU]
				got[ns+"/"+name] = h.String()
			}
		}
		return got[nss[0]+"/"+kubernetes.QuotaName] == "3" && got[nss[1]+"/"+kubernetes.QuotaName] == "2" &&
			got[nss[0]+"/"+kubernetes.BestEffortQuotaName] == "7" && got[nss[1]+"/"+kubernetes.BestEffortQuotaName] == "0", nil
	})
}

// The backend touches only what it maps: a pod labelled as its task, and one labelled
// as a reservation's, in a namespace it does not map survive a sync that would delete
// them were they in its own; the same pods in its namespace are deleted.
func TestPodsOutsideTheMappingAreNeverTouched(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	other := kubetest.Namespace(t, f.cs)
	labelled := func(ns, name string, labels map[string]string) {
		p := ownerPod(name, "100m")
		p.Labels = labels
		if _, err := f.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{f.ns, other} {
		labelled(ns, kubernetes.PodName(4242), map[string]string{kubernetes.ManagedBy: "clearhouse", kubernetes.LabelTask: "4242"})
		labelled(ns, "res-0", map[string]string{kubernetes.LabelReservation: "77", kubernetes.LabelRequest: "0"})
	}
	kubetest.Eventually(t, "the informer holding the pods", func() (bool, error) {
		// Task 4242 is listed neither to run nor to stop: the backend deletes its pod
		// (in what it maps) once its informer holds it.
		if _, err := f.b.SyncTasks(ctx, nil, nil); err != nil {
			return false, err
		}
		return f.gone(f.ns, kubernetes.PodName(4242))
	})
	// Reservation 77's early start was refused: its pods are deleted, in what it maps.
	if _, err := f.b.FollowReservations(ctx, agent.Plan{Now: time.Now(), Refused: []agent.JobKey{{Reservation: 77}}}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, "the mapped namespace's reservation pod deleted", func() (bool, error) {
		return f.gone(f.ns, "res-0")
	})
	for _, name := range []string{kubernetes.PodName(4242), "res-0"} {
		p, err := f.cs.CoreV1().Pods(other).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("pod %s/%s outside the mapping: %v (deleting %v)", other, name, err, p != nil && p.DeletionTimestamp != nil)
		}
	}
}

// gone reports whether the pod is deleted or being deleted.
func (f *fixture) gone(ns, name string) (bool, error) {
	p, err := f.cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return err == nil && p.DeletionTimestamp != nil, err
}

// ownUsage is ads's own usage of us-east/cpu in a measurement, and whether it is listed.
func ownUsage(m agent.Measurement) (int64, bool) {
	for _, o := range m.Owners {
		if o.Team == "ads" && o.Pool == "us-east/cpu" {
			return o.Units, true
		}
	}
	return 0, false
}

// A team whose last pod ended is measured at 0, not left out (which would leave the
// server with its last usage).
func TestATeamsLastPodEndingIsMeasuredAsZero(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.cs.CoreV1().Pods(f.ns).Create(ctx, ownerPod("own", "8"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitForPodPhase(t, f.cs, f.ns, "own", corev1.PodRunning)
	kubetest.Eventually(t, "8 cores measured", func() (bool, error) {
		m, err := f.b.Measure(ctx, time.Now())
		u, _ := ownUsage(m)
		return u == 8, err
	})
	exit := []byte(`{"metadata": {"annotations": {"clearhouse.io/kwok-exit": "0"}}}`)
	if _, err := f.cs.CoreV1().Pods(f.ns).Patch(ctx, "own", "application/merge-patch+json", exit, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitForPodPhase(t, f.cs, f.ns, "own", corev1.PodSucceeded)
	kubetest.Eventually(t, "0 cores measured, listed", func() (bool, error) {
		m, err := f.b.Measure(ctx, time.Now())
		u, listed := ownUsage(m)
		return listed && u == 0, err
	})
}

// Reclaim evicts the team's newest own pods until the excess is freed, through the
// Eviction API: a pod its PodDisruptionBudget protects is skipped (and named in the
// error), best-effort and reservation pods are never taken, and the next measurement
// leaves the evicted pods out.
func TestReclaimEvictsTheNewestOwnPods(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.applyGrant(100, taskGrant)
	f.waitQuota(kubernetes.BestEffortQuotaName, "12")
	// Created in this order; pods created within one second (creation timestamps are in
	// whole seconds) are ordered by name, which is the same order.
	create := func(p *corev1.Pod) {
		t.Helper()
		if _, err := f.cs.CoreV1().Pods(f.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		kubetest.WaitForPodPhase(t, f.cs, f.ns, p.Name, corev1.PodRunning)
	}
	for _, name := range []string{"p1-oldest", "p2-middle", "p3-newer"} {
		create(ownerPod(name, "2"))
	}
	protected := ownerPod("p4-protected", "2")
	protected.Labels = map[string]string{"app": "protected"}
	create(protected)
	res := ownerPod("p5-reservation", "2")
	res.Labels = map[string]string{kubernetes.LabelReservation: "9"}
	create(res)
	f.sync(f.b, "a best-effort task started", []agent.Task{task(5)}, nil, func(e []agent.TaskEvent) bool { return len(e) > 0 })
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "protected"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "protected"}}}}
	if _, err := f.cs.PolicyV1().PodDisruptionBudgets(f.ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, "the informer holding every pod", func() (bool, error) {
		m, err := f.b.Measure(ctx, time.Now())
		u, _ := ownUsage(m)
		return u == 10, err // five own pods of 2 cores (the reservation's too); the task not
	})
	got, err := f.b.Reclaim(ctx, []agent.Reclaim{{Team: "ads", Pool: "us-east/cpu", Units: 3}})
	if err == nil || !strings.Contains(err.Error(), "p4-protected") || !strings.Contains(err.Error(), "PodDisruptionBudget") {
		t.Fatalf("reclaim: %v; want the protected pod named", err)
	}
	want := []agent.Reclaimed{{Team: "ads", Pool: "us-east/cpu", Object: "Pod " + f.ns + "/p3-newer", Units: 2}, {Team: "ads", Pool: "us-east/cpu", Object: "Pod " + f.ns + "/p2-middle", Units: 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("reclaimed %+v, want %+v", got, want)
	}
	// The next measurement leaves the evicted pods out, whether or not the informer has
	// seen them go: the report after an eviction shows the excess freed.
	m, err := f.b.Measure(ctx, time.Now())
	if u, _ := ownUsage(m); err != nil || u != 6 {
		t.Fatalf("own usage after evicting 4 of 10 cores: %d (%v), want 6", u, err)
	}
	for _, name := range []string{"p3-newer", "p2-middle"} {
		kubetest.Eventually(t, name+" evicted", func() (bool, error) { return f.gone(f.ns, name) })
	}
	for _, name := range []string{"p1-oldest", "p4-protected", "p5-reservation", kubernetes.PodName(5)} {
		if gone, err := f.gone(f.ns, name); gone || err != nil {
			t.Fatalf("pod %s taken: %v", name, err)
		}
	}
}
