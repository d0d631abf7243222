package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"
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

func newKubeAgent(t *testing.T, m *agentMarket) *kubeAgent { return newKubeAgentWith(t, m, nil) }

// newKubeAgentWith also maps the other teams given to their namespaces.
func newKubeAgentWith(t *testing.T, m *agentMarket, others map[string]string) *kubeAgent {
	t.Helper()
	ns, text := kubeAgentConfig(t, others, "")
	cfg, err := agent.ParseConfig("us-east.yaml", text)
	if err != nil {
		t.Fatal(err)
	}
	k := &kubeAgent{m: m, ns: ns, cfg: cfg, token: m.Token("us-east")}
	k.loop = k.start(k.token)
	return k
}

// kubeAgentConfig is the agent's config file for cluster us-east on the kubernetes
// backend (kubeconfig, when not empty, the file the backend connects with): team
// search owns a fresh namespace (returned), the other teams given theirs, and the
// best-effort PriorityClass is the test's own. The pods of these namespaces are
// deleted when the test ends.
func kubeAgentConfig(t *testing.T, others map[string]string, kubeconfig string) (string, []byte) {
	t.Helper()
	cs := kubetest.Client(t)
	ns := kubetest.Namespace(t, cs)
	class := "ch-e2e-" + ns[len(ns)-5:]
	t.Cleanup(func() {
		_ = cs.SchedulingV1().PriorityClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	// The nodes are shared by the tests: a test's pods leave them before the next test.
	t.Cleanup(func() { deletePods(t, cs, ns) })
	for _, n := range others {
		t.Cleanup(func() { deletePods(t, cs, n) })
	}
	teams := fmt.Sprintf("  search: {namespaces: [%s]}\n", ns)
	for team, n := range others {
		teams += fmt.Sprintf("  %s: {namespaces: [%s]}\n", team, n)
	}
	kube := fmt.Sprintf("priority_class: %s, kueue: \"off\"", class)
	if kubeconfig != "" {
		kube += fmt.Sprintf(", kubeconfig: %q", kubeconfig)
	}
	return ns, fmt.Appendf(nil, "cluster: us-east\nteams:\n%spools:\n  us-east/cpu: {resource: cpu, unit: \"1\"}\nkubernetes: {%s}\n", teams, kube)
}

// start opens a backend and a loop (as `clearhouse agent --backend kubernetes` does).
func (k *kubeAgent) start(token string) *agent.Loop {
	t := k.m.T
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := kubernetes.New(ctx, kubetest.Config(t), k.cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	client, err := agent.NewClient(k.m.App.Server.URL(), "us-east", token)
	if err != nil {
		t.Fatal(err)
	}
	return &agent.Loop{Client: client, Backend: b, Config: k.cfg, Out: io.Discard, ErrOut: testWriter{t}, Now: k.m.Clock.Now, Every: time.Second}
}

// poll runs one poll of the loop, the market's clock first moved to the wall clock's
// now (the cluster stamps events with the wall clock).
func (k *kubeAgent) poll() {
	k.m.T.Helper()
	if now := time.Now().UTC(); now.After(k.m.Clock.Now()) {
		k.m.Clock.Set(now)
	}
	if err := k.loop.Poll(context.Background()); err != nil {
		k.m.T.Fatal(err)
	}
}

// buy has team search win cores of us-east/cpu at an auction.
func (m *agentMarket) buy(cores int64) {
	m.T.Helper()
	ctx := context.Background()
	a, err := m.App.Market.ScheduleAuction(ctx, m.Clock.Now(), m.Clock.Now().Add(time.Hour), auction.DefaultParams)
	if err != nil {
		m.T.Fatal(err)
	}
	if _, err := m.App.Market.OpenDue(ctx); err != nil {
		m.T.Fatal(err)
	}
	limit := 500 * ledger.Dollar
	if _, err := m.App.Market.PlaceOrder(ctx, m.Member, exchange.OrderSpec{Team: m.Member.TeamID, Bundles: []exchange.Bundle{{"us-east/cpu": cores}}, Limit: &limit}); err != nil {
		m.T.Fatal(err)
	}
	if _, err := m.App.Market.Close(ctx, a.ID); err != nil {
		m.T.Fatal(err)
	}
}

// submitSleeper submits, for the member's team, a best-effort job of one task of two
// cores whose pod sleeps ten minutes.
func (m *agentMarket) submitSleeper(t *testing.T) besteffort.JobView {
	t.Helper()
	job, err := m.App.Idle.Submit(context.Background(), m.Member, besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": 2}, Tasks: 1,
		Workload: &besteffort.Workload{Kubernetes: &besteffort.KubernetesWorkload{Image: "busybox:1.36", Command: []string{"sleep", "600"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return job
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
			if err != nil && !kubetest.IsQuotaRefusal(err) {
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
	job := m.submitSleeper(t)
	view := func() besteffort.JobView {
		v, err := m.App.Idle.Job(ctx, job.ID)
		if err != nil || len(v.Runs) != 1 {
			t.Fatalf("job: %d runs, %v", len(v.Runs), err)
		}
		return v
	}
	kubetest.Eventually(t, "the task started", func() (bool, error) {
		k.poll()
		v, err := m.App.Idle.Job(ctx, job.ID)
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
	if v.Running != 1 || v.Runs[0].Status != besteffort.TaskRunning || !v.Runs[0].ConfirmedAt.Equal(confirmed) || v.Tasks != 1 {
		t.Fatalf("after a restart the job has %d running, task %s confirmed %v (first %v)", v.Running, v.Runs[0].Status, v.Runs[0].ConfirmedAt, confirmed)
	}
	if _, err := m.App.Idle.Cancel(ctx, m.Member, job.ID); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, "the pod deleted and the stop confirmed", func() (bool, error) {
		k.poll()
		_, err := cs.CoreV1().Pods(k.ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) && view().Runs[0].StopAckedAt != nil, nil
	})
	m.Verify()
}

// testWriter logs each write to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// A reservation running now raises its team's quota by its units; a reservation
// planned after it, whose pods start early in the capacity the first leaves unused, is
// reported started: the plan moves its start to the slot of its first pod's start,
// and its units join the quota. Their pods, found by their labels, end them: each end
// (at the pod's finish) reaches its reservation, and the quota goes back down.
func TestKubernetesReservationRaisesTheQuotaAndItsPodsStartAndEndIt(t *testing.T) {
	m := newAgentMarket(t)
	k := newKubeAgent(t, m)
	ctx := context.Background()
	cs := kubetest.Client(t)
	// The early start fits in the current slot, freed by the running job's under-use:
	// the test runs within one 5-minute slot, not at the end of one.
	if left := time.Until(time.Now().Truncate(5 * time.Minute).Add(5 * time.Minute)); left < time.Minute {
		time.Sleep(left)
	}
	m.Clock.Set(time.Now().UTC().Truncate(5 * time.Minute))
	job := m.Reserve(60, time.Hour, 0, time.Hour)
	later := m.Reserve(50, 5*time.Minute, 0, 3*time.Hour) // 110 of 100 cores: after the first
	planned := *later.Requests[0].StartAt
	if !planned.After(m.Clock.Now()) {
		t.Fatalf("the second reservation is planned at %v, beside the first", planned)
	}
	k.poll()
	quota := func() string {
		t.Helper()
		q, err := cs.CoreV1().ResourceQuotas(k.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h := q.Spec.Hard[corev1.ResourceRequestsCPU]
		return h.String()
	}
	if got := quota(); got != "60" {
		t.Fatalf("quota while the first reservation runs: %s, want 60", got)
	}
	run := func(name string, res int64) *corev1.Pod {
		pod := cpuPod(name, "2")
		pod.Labels = map[string]string{kubernetes.LabelReservation: fmt.Sprint(res), kubernetes.LabelRequest: "0"}
		if _, err := cs.CoreV1().Pods(k.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return kubetest.WaitForPodPhase(t, cs, k.ns, name, corev1.PodRunning)
	}
	run("train-0", job.ID)
	k.poll()
	if v := m.Reservation(job.ID); v.Status == fleet.ReservationDone {
		t.Fatal("the reservation ended while its pod runs")
	}

	// The second reservation's pod starts now, an hour before its planned start.
	early := run("early-0", later.ID)
	var started time.Time
	for _, c := range early.Status.ContainerStatuses {
		if c.State.Running != nil {
			started = c.State.Running.StartedAt.Time
		}
	}
	kubetest.Eventually(t, "the early start reaching the plan", func() (bool, error) {
		k.poll()
		return m.Reservation(later.ID).Requests[0].StartAt.Before(planned), nil
	})
	if got, want := *m.Reservation(later.ID).Requests[0].StartAt, started.UTC().Truncate(5*time.Minute); !got.Equal(want) {
		t.Fatalf("the second reservation starts at %v, want the slot of its pod's start %v (planned %v)", got, want, planned)
	}
	k.poll()
	if got := quota(); got != "110" {
		t.Fatalf("quota while both reservations run: %s, want 110", got)
	}

	finished := map[string]time.Time{}
	for _, name := range []string{"train-0", "early-0"} {
		exit := []byte(`{"metadata": {"annotations": {"clearhouse.io/kwok-exit": "0"}}}`)
		if _, err := cs.CoreV1().Pods(k.ns).Patch(ctx, name, types.MergePatchType, exit, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		done := kubetest.WaitForPodPhase(t, cs, k.ns, name, corev1.PodSucceeded)
		for _, c := range done.Status.ContainerStatuses {
			if c.State.Terminated != nil {
				finished[name] = c.State.Terminated.FinishedAt.Time
			}
		}
	}
	kubetest.Eventually(t, "the reservations ended", func() (bool, error) {
		k.poll()
		return m.Reservation(job.ID).Status == fleet.ReservationDone && m.Reservation(later.ID).Status == fleet.ReservationDone, nil
	})
	for name, id := range map[string]int64{"train-0": job.ID, "early-0": later.ID} {
		if v := m.Reservation(id); v.Requests[0].EndedAt == nil || !v.Requests[0].EndedAt.Equal(finished[name].UTC()) {
			t.Fatalf("reservation %d ended at %v, its pod %s finished at %v", id, v.Requests[0].EndedAt, name, finished[name])
		}
	}
	k.poll()
	if got := quota(); got != "0" {
		t.Fatalf("quota after the reservations ended: %s, want 0", got)
	}
}

// Pods' requests are the pool's measured usage: the agent's report records them in the
// current slot, and the utilization job then measures a higher psi, which raises the
// pool's reserve price for the next auction.
func TestKubernetesPodsRequestsMoveTheReservePrice(t *testing.T) {
	m := newAgentMarket(t)
	k := newKubeAgent(t, m)
	ctx := context.Background()
	cs := kubetest.Client(t)
	m.Clock.Set(time.Now().UTC())
	m.buy(40)
	k.poll()
	m.App.RunUtilization(ctx)
	before, err := m.App.Util.Pool(ctx, "us-east/cpu")
	if err != nil {
		t.Fatal(err)
	}
	priceBefore, err := m.App.Market.ReservePrices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := cs.CoreV1().Pods(k.ns).Create(ctx, cpuPod(fmt.Sprintf("w%d", i), "10"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		kubetest.WaitForPodPhase(t, cs, k.ns, fmt.Sprintf("w%d", i), corev1.PodRunning)
	}
	k.poll()
	var sample struct{ Used int64 }
	if err := m.App.DB.Read.Raw("SELECT used FROM usage_samples WHERE pool_id = ? ORDER BY slot_at DESC LIMIT 1", "us-east/cpu").Scan(&sample).Error; err != nil {
		t.Fatal(err)
	}
	if sample.Used < 30 {
		t.Fatalf("the slot's measured usage is %d cores; the team's pods request 30", sample.Used)
	}
	m.App.RunUtilization(ctx)
	after, err := m.App.Util.Pool(ctx, "us-east/cpu")
	if err != nil {
		t.Fatal(err)
	}
	priceAfter, err := m.App.Market.ReservePrices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Source != fleet.PsiMeasured || !(after.Psi > before.Psi) || !(priceAfter["us-east/cpu"] > priceBefore["us-east/cpu"]) {
		t.Fatalf("psi %v (%s) -> %v (%s), reserve %v -> %v", before.Psi, before.Source, after.Psi, after.Source, priceBefore["us-east/cpu"], priceAfter["us-east/cpu"])
	}
}

// Best-effort tasks run as pods on idle quota (30 tasks of 2 cores, within the
// 70 cores of the pool's 100 that may be lent) and are preempted when ads, which holds 60, runs
// 60 cores of its own: the server lists them to stop, the agent deletes their pods
// and the stops are confirmed; clearhouse verify is clean.
func TestKubernetesBestEffortPodIsPreemptedWhenTheOwnerNeedsItsQuota(t *testing.T) {
	m := newAgentMarket(t)
	ctx := context.Background()
	if _, err := m.App.Market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Budget: 100 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	if err := m.App.Market.GrantQuota(ctx, "ads", "us-east/cpu", 60); err != nil {
		t.Fatal(err)
	}
	if err := m.App.Idle.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/cpu", Policy: "direct-orig", Alpha: 0.5, MinRuntime: 10 * time.Minute, Exposure: 0.3}); err != nil {
		t.Fatal(err)
	}
	cs := kubetest.Client(t)
	adsNS := kubetest.Namespace(t, cs)
	k := newKubeAgentWith(t, m, map[string]string{"ads": adsNS})
	m.Clock.Set(time.Now().UTC())
	job, err := m.App.Idle.Submit(ctx, m.Member, besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": 2}, Tasks: 30,
		Workload: &besteffort.Workload{Kubernetes: &besteffort.KubernetesWorkload{Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}})
	if err != nil {
		t.Fatal(err)
	}
	running := func() int {
		pods, err := cs.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelTask})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	var started int
	kubetest.Eventually(t, "the tasks' pods running and confirmed", func() (bool, error) {
		k.poll()
		v, err := m.App.Idle.Job(ctx, job.ID)
		started = int(v.Running)
		return err == nil && started > 0 && running() == started, err
	})
	// An hour later ads runs 60 cores of its own in its namespace, within its quota.
	m.Clock.Advance(time.Hour)
	k.poll()
	for i := range 6 {
		if _, err := cs.CoreV1().Pods(adsNS).Create(ctx, cpuPod(fmt.Sprintf("own-%d", i), "10"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("ads's own pod %d within its 60-core quota: %v", i, err)
		}
	}
	for i := range 6 {
		kubetest.WaitForPodPhase(t, cs, adsNS, fmt.Sprintf("own-%d", i), corev1.PodRunning)
	}
	kubetest.Eventually(t, "best-effort tasks preempted", func() (bool, error) {
		k.poll()
		v, err := m.App.Idle.Job(ctx, job.ID)
		return err == nil && v.Preempted > 0, err
	})
	var preempted []int64
	if err := m.App.DB.Read.Model(&besteffort.Task{}).Where("job_id = ? AND status = ?", job.ID, besteffort.TaskPreempted).Pluck("id", &preempted).Error; err != nil || len(preempted) == 0 {
		t.Fatalf("preempted tasks: %v %v", preempted, err)
	}
	kubetest.Eventually(t, "the preempted tasks' pods deleted and their stops confirmed", func() (bool, error) {
		k.poll()
		for _, id := range preempted {
			if _, err := cs.CoreV1().Pods(k.ns).Get(ctx, kubernetes.PodName(id), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		var unacked int64
		err := m.App.DB.Read.Model(&besteffort.Task{}).Where("id IN ? AND stop_acked_at IS NULL", preempted).Count(&unacked).Error
		return unacked == 0, err
	})
	// The job's row on its owner's best-effort page counts the preempted tasks.
	tok, _, err := m.App.Identity.IssueToken(ctx, m.Member.ID, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.App.Idle.Job(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	row := m.page(tok, "/best-effort").Find(fmt.Sprintf("[data-testid=best-effort-jobs] [data-testid=job-%d]", job.ID))
	if got := row.Find("[data-testid=preempted]").Text(); got != fmt.Sprint(v.Preempted) || v.Preempted < int64(len(preempted)) {
		t.Fatalf("job #%d's preempted tasks on its owner's page: %q, want %d (%d preempted before)\n%s", job.ID, got, v.Preempted, len(preempted), strings.Join(strings.Fields(row.Text()), " "))
	}
	m.Verify()
}

// page fetches a page of the app with a user's bearer token and parses it.
func (m *agentMarket) page(token, path string) *goquery.Document {
	m.T.Helper()
	req, err := http.NewRequest(http.MethodGet, m.App.Server.URL()+path, nil)
	if err != nil {
		m.T.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		m.T.Fatal(err)
	}
	defer res.Body.Close()
	doc, err := goquery.NewDocumentFromReader(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		m.T.Fatalf("GET %s: %d %v", path, res.StatusCode, err)
	}
	return doc
}

// deletePods deletes every pod of the namespace at once and waits until they are gone.
func deletePods(t *testing.T, cs k8s.Interface, ns string) {
	ctx := context.Background()
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		t.Errorf("delete the pods of %s: %v", ns, err)
		return
	}
	kubetest.Eventually(t, "the pods of "+ns+" gone", func() (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	})
}
