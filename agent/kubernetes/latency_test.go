package kubernetes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkPollToQuota is the time from ApplyQuotas with a new limit for a team to
// the API server answering a GET of its ResourceQuota with that limit, on the test
// control plane (server-side apply; skipped without CLEARHOUSE_TEST_KUBECONFIG).
func BenchmarkPollToQuota(b *testing.B) {
	cs := kubetest.Client(b)
	ns := kubetest.Namespace(b, cs)
	cfg, err := agent.ParseConfig("bench.yaml", fmt.Appendf(nil, "cluster: c\nteams:\n  ads: {namespaces: [%s]}\npools:\n  c/cpu: {resource: cpu, unit: \"1\"}\nkubernetes: {kueue: \"off\"}\n", ns))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	be, err := kubernetes.New(ctx, kubetest.Config(b), cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		units := int64(10 + i%2)
		start := time.Now()
		if _, err := be.ApplyQuotas(ctx, []agent.Quota{{Team: "ads", Pool: "c/cpu", Units: units}}); err != nil {
			b.Fatal(err)
		}
		q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{})
		if h := q.Spec.Hard[corev1.ResourceRequestsCPU]; err != nil || h.Value() != units {
			b.Fatalf("quota %v after applying %d: %v", q.Spec.Hard, units, err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/quota")
}
