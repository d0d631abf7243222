package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// BenchmarkPoll is one poll of the backend (ApplyQuotas, SyncTasks, Measure) over
// 1,000 team namespaces holding 10,000 running pods on 100 nodes, with 100
// best-effort tasks running, in steady state (the quotas already hold what is
// wanted, so a poll writes nothing). The objects sit in a fake clientset's tracker
// and reach the backend through the same informers as on a real cluster, so this is
// the backend's own cost: the informers' stores read, and one API round trip (the
// live check that the API server answers, verify).
func BenchmarkPoll(b *testing.B) {
	const teams, podsPer, nodes, tasks = 1000, 10, 100, 100
	var objs []runtime.Object
	var yaml strings.Builder
	yaml.WriteString("cluster: c\nteams:\n")
	for i := range teams {
		ns := fmt.Sprintf("team-%04d", i)
		fmt.Fprintf(&yaml, "  t%04d: {namespaces: [%s]}\n", i, ns)
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		for j := range podsPer {
			objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", j), Namespace: ns},
				Spec: corev1.PodSpec{NodeName: fmt.Sprintf("n%d", (i*podsPer+j)%nodes), Containers: []corev1.Container{{Name: "m",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}})
		}
	}
	yaml.WriteString("pools:\n  c/cpu: {resource: cpu, unit: \"1\"}\n  c/ram: {resource: memory, unit: 1Gi}\n")
	for i := range nodes {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi")}}})
	}
	cfg, err := agent.ParseConfig("bench.yaml", []byte(yaml.String()))
	if err != nil {
		b.Fatal(err)
	}
	m, err := newMapping(cfg)
	if err != nil {
		b.Fatal(err)
	}
	cs := fake.NewClientset(objs...)
	ctx := context.Background()
	be, err := newBackend(ctx, cs, nil, m, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	var want []agent.Quota
	for i := range teams {
		want = append(want, agent.Quota{Team: fmt.Sprintf("t%04d", i), Pool: "c/cpu", Units: 8}, agent.Quota{Team: fmt.Sprintf("t%04d", i), Pool: "c/ram", Units: 32})
	}
	var run []agent.Task
	for i := range tasks {
		run = append(run, agent.Task{ID: int64(i + 1), Job: 1, Team: fmt.Sprintf("t%04d", i), Configuration: map[string]int64{"c/cpu": 1},
			Workload: &agent.Workload{Kubernetes: &agent.KubernetesWorkload{Image: "busybox"}}})
	}
	// The first poll writes every quota and task pod; wait until the informers hold them.
	if _, err := be.ApplyQuotas(ctx, want); err != nil {
		b.Fatal(err)
	}
	if _, err := be.SyncTasks(ctx, run, nil); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		qs, _ := be.quotas.List(everything())
		ps, _ := be.allPods()
		if len(qs) == 2*teams && len(ps) == teams*podsPer+tasks {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("informers hold %d quotas and %d pods", len(qs), len(ps))
		}
		time.Sleep(10 * time.Millisecond)
	}
	writes := len(cs.Actions())
	b.ResetTimer()
	for range b.N {
		if _, err := be.ApplyQuotas(ctx, want); err != nil {
			b.Fatal(err)
		}
		if _, err := be.SyncTasks(ctx, run, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := be.Measure(ctx, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(cs.Actions())-writes)/float64(b.N), "api-calls/poll")
}
