package kubernetes_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func task(id int64) agent.Task {
	return agent.Task{ID: id, Job: 7, Team: "ads", Configuration: map[string]int64{"us-east/cpu": 6, "us-east/ram": 2, "us-east/gpu": 1},
		Workload: &agent.Workload{Kubernetes: &agent.KubernetesWorkload{Image: "busybox:1.36", Command: []string{"sh", "-c", "sleep 600"}, Env: map[string]string{"K": "V"}}}}
}

// sync calls SyncTasks until cond holds of the events gathered, and returns them. A
// pod create refused because the API server's admission has not yet seen a
// PriorityClass or a quota just written (each read through its own informer) is
// retried, as the next poll would.
func (f *fixture) sync(b *kubernetes.Backend, what string, run, stop []agent.Task, cond func([]agent.TaskEvent) bool) []agent.TaskEvent {
	f.t.Helper()
	var all []agent.TaskEvent
	kubetest.Eventually(f.t, what, func() (bool, error) {
		evs, err := b.SyncTasks(context.Background(), run, stop)
		all = append(all, evs...)
		if err != nil && admissionLag(err) {
			err = nil
		}
		return cond(all), err
	})
	return all
}

func admissionLag(err error) bool {
	return strings.Contains(err.Error(), "no PriorityClass with name") || strings.Contains(err.Error(), "exceeded quota")
}

func events(evs []agent.TaskEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Event)
	}
	return out
}

// taskGrant is what the market grants ads's best-effort tasks in these tests: two
// tasks' configurations.
var taskGrant = map[string]int64{"us-east/cpu": 12, "us-east/ram": 4, "us-east/gpu": 2}

// A best-effort task runs as a pod of the low PriorityClass, outside the team's own
// quota and within its best-effort grant, requesting its configuration through the
// config; started, done and stopped come from the pods; a restarted backend creates no
// second pod and reports from the cluster's state again; stop deletes the pod.
func TestBestEffortTasksRunAsPodsWithinTheirGrant(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.applyGrant(4, taskGrant) // a 6-core task would not fit the team's own quota
	f.waitHard("4")
	f.waitQuota(kubernetes.BestEffortQuotaName, "12")
	evs := f.sync(f.b, "task 1 started", []agent.Task{task(1)}, nil, func(e []agent.TaskEvent) bool { return len(e) > 0 })
	if !slices.Equal(events(evs), []string{"started"}) || evs[0].Task != 1 || evs[0].At.IsZero() {
		t.Fatalf("events %+v", evs)
	}
	pod, err := f.cs.CoreV1().Pods(f.ns).Get(ctx, kubernetes.PodName(1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	if pod.Spec.PriorityClassName != f.class || pod.Spec.Priority == nil || *pod.Spec.Priority != -100 || c.Image != "busybox:1.36" ||
		c.Resources.Requests.Cpu().String() != "6" || c.Resources.Requests.Memory().String() != "2Gi" || c.Resources.Limits.Name("nvidia.com/gpu", "").String() != "1" ||
		len(c.Env) != 1 || c.Env[0].Name != "K" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatalf("pod: class %q priority %v, container %+v", pod.Spec.PriorityClassName, pod.Spec.Priority, c)
	}
	pc, err := f.cs.SchedulingV1().PriorityClasses().Get(ctx, f.class, metav1.GetOptions{})
	if err != nil || pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptNever {
		t.Fatalf("PriorityClass: %+v %v", pc, err)
	}
	if evs, err := f.b.SyncTasks(ctx, []agent.Task{task(1)}, nil); err != nil || len(evs) != 0 {
		t.Fatalf("a second sync: %v %v", evs, err)
	}
	// A restarted agent: no second pod, and the start again (the server ignores it).
	b2 := f.open()
	evs = f.sync(b2, "the restarted backend's events", []agent.Task{task(1)}, nil, func(e []agent.TaskEvent) bool { return len(e) > 0 })
	if !slices.Equal(events(evs), []string{"started"}) {
		t.Fatalf("after a restart: %+v", evs)
	}
	pods, err := f.cs.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelTask + "=1"})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].UID != pod.UID {
		t.Fatalf("pods of task 1 after a restart: %d (%v)", len(pods.Items), err)
	}
	// The task's container exits 0 (kwok plays it).
	patch := []byte(`{"metadata": {"annotations": {"clearhouse.io/kwok-exit": "0"}}}`)
	if _, err := f.cs.CoreV1().Pods(f.ns).Patch(ctx, kubernetes.PodName(1), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	evs = f.sync(b2, "task 1 done", []agent.Task{task(1)}, nil, func(e []agent.TaskEvent) bool { return len(e) > 0 })
	if !slices.Equal(events(evs), []string{"done"}) {
		t.Fatalf("done: %+v", evs)
	}
	// Task 2 runs, then is preempted: its pod is deleted and it is reported stopped; task
	// 1, in neither list any more, has its pod removed.
	f.sync(b2, "task 2 started", []agent.Task{task(2)}, nil, func(e []agent.TaskEvent) bool { return len(e) > 0 })
	evs, err = b2.SyncTasks(ctx, nil, []agent.Task{task(2)})
	if err != nil || !slices.Equal(events(evs), []string{"stopped"}) {
		t.Fatalf("stop: %+v %v", evs, err)
	}
	for _, id := range []int64{1, 2} {
		kubetest.Eventually(t, "pod deleted", func() (bool, error) {
			_, err := f.cs.CoreV1().Pods(f.ns).Get(ctx, kubernetes.PodName(id), metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	}
	// A task whose job has no kubernetes workload fails without a pod.
	bare := task(3)
	bare.Workload = &agent.Workload{Slurm: &agent.SlurmWorkload{Command: "sleep 1"}}
	evs, err = b2.SyncTasks(ctx, []agent.Task{bare}, nil)
	if err == nil || !slices.Equal(events(evs), []string{"failed"}) {
		t.Fatalf("no kubernetes workload: %+v %v", evs, err)
	}
}

// Measure: a team's Running pods are its own usage (best-effort pods left out), every
// bound pod counts toward the pool's use, and nodes' allocatable is the capacity.
func TestMeasureReadsPodsAndNodes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.applyGrant(8, taskGrant)
	f.waitQuota(kubernetes.BestEffortQuotaName, "12")
	for _, name := range []string{"a", "b"} {
		if _, err := f.cs.CoreV1().Pods(f.ns).Create(ctx, ownerPod(name, "1500m"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		kubetest.WaitForPodPhase(t, f.cs, f.ns, name, corev1.PodRunning)
	}
	f.sync(f.b, "a best-effort task started", []agent.Task{task(9)}, nil, func(e []agent.TaskEvent) bool { return len(e) > 0 })
	nodes, err := f.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cores int64
	for _, n := range nodes.Items {
		if !n.Spec.Unschedulable {
			cores += n.Status.Allocatable.Cpu().MilliValue()
		}
	}
	kubetest.Eventually(t, "the measurement", func() (bool, error) {
		m, err := f.b.Measure(ctx, f.b.Now())
		if err != nil {
			return false, err
		}
		own := map[string]int64{}
		for _, o := range m.Owners {
			if o.Team == "ads" {
				own[o.Pool] = o.Units
			}
		}
		var cpu agent.PoolMeasure
		for _, p := range m.Pools {
			if p.Pool == "us-east/cpu" {
				cpu = p
			}
		}
		// 3 cores of owner pods (1.5 each), 2Gi; the task's 6 cores are not the owner's.
		return own["us-east/cpu"] == 3 && own["us-east/ram"] == 2 && own["us-east/gpu"] == 0 && cpu.Capacity == cores/1000 && cpu.Used >= 9, nil
	})
}
