package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeAgent is the real agent loop, on the kubernetes backend against the test
// control plane, for cluster us-east of an agentMarket whose team search owns a fresh
// namespace.
type kubeAgent struct {
	m     *agentMarket
	ns    string
	cfg   *agent.Config
	loop  *agent.Loop
	token string
}

func newKubeAgent(t *testing.T, m *agentMarket) *kubeAgent {
	t.Helper()
	cs := kubetest.Client(t)
	ns := kubetest.Namespace(t, cs)
	class := "ch-e2e-" + ns[len(ns)-5:]
	t.Cleanup(func() {
		_ = cs.SchedulingV1().PriorityClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	cfg, err := agent.ParseConfig("us-east.yaml", fmt.Appendf(nil, "cluster: us-east\nteams:\n  search: {namespaces: [%s]}\npools:\n  us-east/cpu: {resource: cpu, unit: \"1\"}\nkubernetes: {priority_class: %s, kueue: \"off\"}\n", ns, class))
	if err != nil {
		t.Fatal(err)
	}
	k := &kubeAgent{m: m, ns: ns, cfg: cfg, token: m.token("us-east")}
	k.loop = k.start(k.token)
	return k
}

// start opens a backend and a loop (as `clearhouse agent --backend kubernetes` does).
func (k *kubeAgent) start(token string) *agent.Loop {
	t := k.m.t
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := kubernetes.New(ctx, kubetest.Config(t), k.cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	client, err := agent.NewClient(k.m.app.Server.URL(), "us-east", token)
	if err != nil {
		t.Fatal(err)
	}
	return &agent.Loop{Client: client, Backend: b, Config: k.cfg, Out: io.Discard, ErrOut: testWriter{t}, Now: k.m.clock.Now, Every: time.Second}
}

// poll runs one poll of the loop, the market's clock first moved to the wall clock's
// now (the cluster stamps events with the wall clock).
func (k *kubeAgent) poll() {
	k.m.t.Helper()
	if now := time.Now().UTC(); now.After(k.m.clock.Now()) {
		k.m.clock.Set(now)
	}
	if err := k.loop.Poll(context.Background()); err != nil {
		k.m.t.Fatal(err)
	}
}

// buy has team search win cores of us-east/cpu at an auction.
func (m *agentMarket) buy(cores int64) {
	m.t.Helper()
	ctx := context.Background()
	a, err := m.app.Market.ScheduleAuction(ctx, m.clock.Now(), m.clock.Now().Add(time.Hour), auction.DefaultParams)
	if err != nil {
		m.t.Fatal(err)
	}
	if _, err := m.app.Market.OpenDue(ctx); err != nil {
		m.t.Fatal(err)
	}
	limit := 500 * ledger.Dollar
	if _, err := m.app.Market.PlaceOrder(ctx, m.member, exchange.OrderSpec{Team: m.member.TeamID, Bundles: []exchange.Bundle{{"us-east/cpu": cores}}, Limit: &limit}); err != nil {
		m.t.Fatal(err)
	}
	if _, err := m.app.Market.Close(ctx, a.ID); err != nil {
		m.t.Fatal(err)
	}
}

func cpuPod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

// A settlement reaches the team's ResourceQuota in one poll of the real agent, and the
// real quota admission holds the team to it: a pod beyond its quota is refused, and
// admitted after the team buys more.
func TestKubernetesSettlementBecomesTheEnforcedQuota(t *testing.T) {
	m := newAgentMarket(t)
	k := newKubeAgent(t, m)
	ctx := context.Background()
	cs := kubetest.Client(t)
	m.buy(4)
	k.poll()
	hard := func() string {
		q, err := cs.CoreV1().ResourceQuotas(k.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("after one poll: %v", err)
		}
		h := q.Spec.Hard[corev1.ResourceRequestsCPU]
		return h.String()
	}
	if got := hard(); got != "4" {
		t.Fatalf("after buying 4 cores and one poll the quota is %s", got)
	}
	admitted := func(want bool) {
		t.Helper()
		kubetest.Eventually(t, fmt.Sprintf("a 6-core pod admitted=%v", want), func() (bool, error) {
			_, err := cs.CoreV1().Pods(k.ns).Create(ctx, cpuPod("six", "6"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota")) {
				return false, err
			}
			return (err == nil) == want, nil
		})
	}
	admitted(false)
	m.buy(4)
	k.poll()
	if got := hard(); got != "8" {
		t.Fatalf("after buying 4 more cores and one poll the quota is %s", got)
	}
	admitted(true)
	if _, err := cs.CoreV1().Pods(k.ns).Create(ctx, cpuPod("six", "6"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the 6-core pod under an 8-core quota: %v", err)
	}
}

// A best-effort task runs as a pod of the job's workload; its start reaches the job.
// The agent killed and restarted leaves one pod and reports the start again, which
// the server ignores. Cancelling the job deletes the pod and the stop is confirmed;
// clearhouse verify is clean.
func TestKubernetesBestEffortTaskRunsAsAPodAcrossARestart(t *testing.T) {
	m := newAgentMarket(t)
	k := newKubeAgent(t, m)
	ctx := context.Background()
	cs := kubetest.Client(t)
	job, err := m.app.Idle.Submit(ctx, m.member, fleet.JobSpec{Configuration: map[string]int64{"us-east/cpu": 2}, Tasks: 1,
		Workload: &fleet.Workload{Kubernetes: &fleet.KubernetesWorkload{Image: "busybox:1.36", Command: []string{"sleep", "600"}}}})
	if err != nil {
		t.Fatal(err)
	}
	view := func() fleet.JobView {
		v, err := m.app.Idle.Job(ctx, job.ID)
		if err != nil || len(v.Runs) != 1 {
			t.Fatalf("job: %d runs, %v", len(v.Runs), err)
		}
		return v
	}
	kubetest.Eventually(t, "the task started", func() (bool, error) {
		k.poll()
		v, err := m.app.Idle.Job(ctx, job.ID)
		return len(v.Runs) == 1, err
	})
	task := view().Runs[0]
	name := kubernetes.PodName(task.ID)
	kubetest.WaitForPodPhase(t, cs, k.ns, name, corev1.PodRunning)
	kubetest.Eventually(t, "the start confirmed", func() (bool, error) {
		k.poll()
		return view().Runs[0].ConfirmedAt != nil, nil
	})
	confirmed := *view().Runs[0].ConfirmedAt
	// The agent is killed and restarted (a new backend and loop, the same token).
	k.loop = k.start(k.token)
	for range 3 {
		k.poll()
	}
	pods, err := cs.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelTask})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Name != name {
		t.Fatalf("best-effort pods after a restart: %d (%v)", len(pods.Items), err)
	}
	v := view()
	if v.Running != 1 || v.Runs[0].Status != fleet.TaskRunning || !v.Runs[0].ConfirmedAt.Equal(confirmed) || v.Tasks != 1 {
		t.Fatalf("after a restart the job has %d running, task %s confirmed %v (first %v)", v.Running, v.Runs[0].Status, v.Runs[0].ConfirmedAt, confirmed)
	}
	if _, err := m.app.Idle.Cancel(ctx, m.member, job.ID); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, "the pod deleted and the stop confirmed", func() (bool, error) {
		k.poll()
		_, err := cs.CoreV1().Pods(k.ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) && view().Runs[0].StopAckedAt != nil, nil
	})
	if code, out, errOut := runCLI(t, "", "verify", "--db", m.dsn); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out, errOut)
	}
}

// testWriter logs each write to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
