package kubernetes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/util/retry"
)

// quotaEvents are the Events recorded on the team's quota with that reason.
func (f *fixture) quotaEvents(name, reason string) []corev1.Event {
	f.t.Helper()
	evs, err := f.cs.CoreV1().Events(f.ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=ResourceQuota,involvedObject.name=" + name + ",reason=" + reason})
	if err != nil {
		f.t.Fatal(err)
	}
	return evs.Items
}

// An operator raises the hard limits of a quota the agent owns. No poll follows (the
// test never calls ApplyQuotas again until the end): the quota reconciler's informer
// sees the edit and puts the limit back, records a QuotaRestored Event on the quota
// saying what it put back and who had set it, and the next poll reports the correction
// once.
func TestAnEditedQuotaIsPutBackBetweenPolls(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if cs := f.apply(4); len(cs) != 0 {
		t.Fatalf("a first write reported corrections: %v", cs)
	}
	q := f.waitHard("4")
	if _, ok := q.Annotations[kubernetes.AnnotationHard]; ok {
		t.Fatalf("the quota carries the old annotation %s", kubernetes.AnnotationHard)
	}
	q.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("100")
	if _, err := f.cs.CoreV1().ResourceQuotas(f.ns).Update(ctx, q, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	f.waitHard("4") // put back, with no poll
	var ev corev1.Event
	kubetest.Eventually(t, "a QuotaRestored Event on the quota", func() (bool, error) {
		evs := f.quotaEvents(kubernetes.QuotaName, kubernetes.ReasonQuotaRestored)
		if len(evs) > 0 {
			ev = evs[0]
		}
		return len(evs) > 0, nil
	})
	if ev.Type != corev1.EventTypeWarning || ev.Source.Component != kubernetes.EventSource ||
		!strings.Contains(ev.Message, "requests.cpu 100 -> 4") || !strings.Contains(ev.Message, "kubectl-edit") || !strings.Contains(ev.Message, "team ads") {
		t.Fatalf("event %s %s from %q: %q", ev.Type, ev.Reason, ev.Source.Component, ev.Message)
	}
	// The poll then reports it, once.
	want := agent.Correction{Team: "ads", Pool: "us-east/cpu", Object: "ResourceQuota " + f.ns + "/clearhouse", Was: "100", Now: "4"}
	if cs := f.apply(4); len(cs) != 1 || cs[0] != want {
		t.Fatalf("corrections %v, want [%v]", cs, want)
	}
	if cs := f.apply(4); len(cs) != 0 {
		t.Fatalf("a second poll reported %v again", cs)
	}
	// A change of want is no correction and records no Event.
	f.apply(6)
	f.waitHard("6")
	if n := len(f.quotaEvents(kubernetes.QuotaName, kubernetes.ReasonQuotaRestored)); n != 1 {
		t.Fatalf("%d QuotaRestored Events after a change of want, want the 1 of the edit", n)
	}
}

// A ResourceQuota written by an older agent (server-side apply by the same field
// manager, with the clearhouse.io/hard annotation of what it last applied) is adopted:
// the first poll applies it again without the annotation, which server-side apply then
// removes; the fields stay the backend's in managedFields; a value someone else changed
// while no agent ran is put back and reported, the others are not.
func TestAQuotaOfAnOlderAgentIsAdopted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	old := map[string]string{"requests.cpu": "4", "requests.memory": "64Gi", "requests.nvidia.com/gpu": "0"}
	note, _ := json.Marshal(old)
	rl := corev1.ResourceList{}
	for k, v := range old {
		rl[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	// What the older agent applied (quota.go before the reconcilers).
	ac := corev1ac.ResourceQuota(kubernetes.QuotaName, f.ns).
		WithLabels(map[string]string{kubernetes.ManagedBy: kubernetes.FieldManager, kubernetes.LabelTeam: "ads"}).
		WithAnnotations(map[string]string{kubernetes.AnnotationHard: string(note)}).
		WithSpec(corev1ac.ResourceQuotaSpec().WithHard(rl).WithScopeSelector(corev1ac.ScopeSelector().WithMatchExpressions(
			corev1ac.ScopedResourceSelectorRequirement().WithScopeName(corev1.ResourceQuotaScopePriorityClass).
				WithOperator(corev1.ScopeSelectorOpNotIn).WithValues(f.class))))
	if _, err := f.cs.CoreV1().ResourceQuotas(f.ns).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: kubernetes.FieldManager, Force: true}); err != nil {
		t.Fatal(err)
	}
	// Someone doubles the memory limit while no agent runs (read again on a conflict:
	// the quota controller writes the status meanwhile).
	var q *corev1.ResourceQuota
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if q, err = f.cs.CoreV1().ResourceQuotas(f.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{}); err != nil {
			return err
		}
		q.Spec.Hard[corev1.ResourceRequestsMemory] = resource.MustParse("128Gi")
		_, err = f.cs.CoreV1().ResourceQuotas(f.ns).Update(ctx, q, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The new agent starts: its informer's first list holds both.
	b := f.open()
	cs, err := b.ApplyQuotas(ctx, f.want(4, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Correction{Team: "ads", Pool: "us-east/ram", Object: "ResourceQuota " + f.ns + "/clearhouse", Was: "128Gi", Now: "64Gi"}
	if len(cs) != 1 || cs[0] != want {
		t.Fatalf("corrections %v, want [%v]", cs, want)
	}
	kubetest.Eventually(t, "the adopted quota", func() (bool, error) {
		q, err = f.cs.CoreV1().ResourceQuotas(f.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, annotated := q.Annotations[kubernetes.AnnotationHard]
		m := q.Spec.Hard[corev1.ResourceRequestsMemory]
		return !annotated && m.String() == "64Gi", nil
	})
	for _, e := range q.ManagedFields {
		if e.Manager == "kubectl-edit" && strings.Contains(e.FieldsV1.GetRawString(), "requests.memory") {
			t.Fatalf("kubectl-edit still owns requests.memory: %s", e.FieldsV1.GetRawString())
		}
	}
	owned := false
	for _, e := range q.ManagedFields {
		if e.Manager == kubernetes.FieldManager && e.Operation == metav1.ManagedFieldsOperationApply {
			raw := e.FieldsV1.GetRawString()
			owned = strings.Contains(raw, `"f:requests.cpu"`) && strings.Contains(raw, `"f:requests.memory"`) && !strings.Contains(raw, "clearhouse.io/hard")
		}
	}
	if !owned {
		t.Fatalf("managedFields after adoption: %+v", q.ManagedFields)
	}
	kubetest.Eventually(t, "a QuotaAdopted Event", func() (bool, error) {
		return len(f.quotaEvents(kubernetes.QuotaName, kubernetes.ReasonQuotaAdopted)) == 1, nil
	})
	// Adopted: the next polls are quiet.
	if cs, err := b.ApplyQuotas(ctx, f.want(4, nil)); len(cs) != 0 || err != nil {
		t.Fatalf("after adoption a poll reported %v (%v)", cs, err)
	}
}

// Over many tasks and reservations the backend's state stays bounded by what the
// server lists now: a task the server lists no more, whose pod is gone, is forgotten,
// and so is a reservation's job the plan lists no more.
func TestStateStaysBoundedOverManyTasks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.applyGrant(4, taskGrant)
	f.waitQuota(kubernetes.BestEffortQuotaName, "12")
	// 10 rounds of 100 tasks; each round the server lists only that round's tasks.
	// They have no kubernetes workload, so each is reported failed without a pod.
	const round = 100
	for r := range 10 {
		var run []agent.Task
		for i := range round {
			tk := task(int64(1000 + r*round + i))
			tk.Workload = &agent.Workload{Slurm: &agent.SlurmWorkload{Command: "true"}}
			run = append(run, tk)
		}
		evs, _ := f.b.SyncTasks(ctx, run, nil)
		if len(evs) != round {
			t.Fatalf("round %d: %d events, want %d failed", r, len(evs), round)
		}
		if tasks, _ := f.b.Tracked(); tasks > round {
			t.Fatalf("round %d: %d tasks tracked, want at most the %d listed", r, tasks, round)
		}
	}
	// Two tasks with pods: tracked while listed, forgotten once unlisted and their pods are gone.
	f.sync(f.b, "tasks 1 and 2 started", []agent.Task{task(1), task(2)}, nil, func(e []agent.TaskEvent) bool { return len(e) == 2 })
	if tasks, _ := f.b.Tracked(); tasks != 2 {
		t.Fatalf("%d tasks tracked with 2 listed", tasks)
	}
	if _, err := f.b.SyncTasks(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, "no task tracked once their pods are gone", func() (bool, error) {
		tasks, _ := f.b.Tracked()
		return tasks == 0, nil
	})

	// Reservations: 3 jobs start early, then the plan lists none.
	var waiting []agent.Job
	for i := range 3 {
		p := ownerPod(fmt.Sprintf("res-%d", i), "500m")
		p.Labels = map[string]string{kubernetes.LabelReservation: fmt.Sprint(50 + i)}
		if _, err := f.cs.CoreV1().Pods(f.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		kubetest.WaitForPodPhase(t, f.cs, f.ns, p.Name, corev1.PodRunning)
		waiting = append(waiting, agent.Job{Reservation: int64(50 + i), Team: "ads"})
	}
	starts := 0
	kubetest.Eventually(t, "3 early starts", func() (bool, error) {
		rep, err := f.b.FollowReservations(ctx, agent.Plan{Now: time.Now(), Waiting: waiting})
		starts += len(rep.Starts)
		_, jobs := f.b.Tracked()
		return starts == 3 && jobs == 3, err
	})
	if _, err := f.b.FollowReservations(ctx, agent.Plan{Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, jobs := f.b.Tracked(); jobs != 0 {
		t.Fatalf("%d jobs tracked with none planned", jobs)
	}
}

// BenchmarkEditToCorrection is the time from an operator's edit of a quota the backend
// owns (requests.cpu raised to 100) to the API server answering with the limit put
// back, with no poll in between: the quota reconciler's informer, workqueue and apply.
// Without the pause between edits it measures the backoff instead (see the loop).
func BenchmarkEditToCorrection(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	f.apply(4)
	f.waitHard("4")
	var total time.Duration
	for b.Loop() {
		var q *corev1.ResourceQuota
		start := time.Now()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var err error
			if q, err = f.cs.CoreV1().ResourceQuotas(f.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{}); err != nil {
				return err
			}
			q.Spec.Hard[corev1.ResourceRequestsCPU] = resource.MustParse("100")
			start = time.Now()
			_, err = f.cs.CoreV1().ResourceQuotas(f.ns).Update(ctx, q, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		for {
			got, err := f.cs.CoreV1().ResourceQuotas(f.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if h := got.Spec.Hard[corev1.ResourceRequestsCPU]; h.String() == "4" {
				break
			}
			if time.Since(start) > kubetest.Timeout {
				b.Fatalf("not put back within %s", kubetest.Timeout)
			}
			time.Sleep(time.Millisecond)
		}
		total += time.Since(start)
		f.apply(4) // the poll drains the correction, as the agent's would
		// Edits back to back are a fight, which the reconciler backs off from
		// exponentially (an edit seen before the echo of its last correction keeps the
		// key's backoff growing): an operator's next edit comes later than this.
		time.Sleep(200 * time.Millisecond)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/correction")
}
