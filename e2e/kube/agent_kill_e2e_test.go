package kube

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/e2e/e2etest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// follow keeps the server's clock on the real time, which the cluster's events carry.
func (m *agentMarket) follow() {
	if now := time.Now().UTC(); now.After(m.Clock.Now()) {
		m.Clock.Set(now)
	}
}

// `clearhouse-agent --backend kubernetes` (the binary, built) killed with SIGKILL while the report
// carrying a best-effort task's start is on its way to the server (the gate holds it),
// and restarted: the restarted agent finds the task's pod, creates no other, and
// reports the start again from the pod. In the end there is exactly one pod of the
// task, the start reached the server once, at the pod's start, the job has one run,
// running, and `clearhouse verify` is clean.
func TestKubernetesAgentKilledMidReportCreatesOnePodAndLosesNoEvent(t *testing.T) {
	m := newAgentMarket(t)
	ctx := context.Background()
	cs := kubetest.Client(t)
	ns, text := kubeAgentConfig(t, nil, os.Getenv(kubetest.EnvKubeconfig))
	config := filepath.Join(t.TempDir(), "us-east.yaml")
	if err := os.WriteFile(config, text, 0o600); err != nil {
		t.Fatal(err)
	}
	token := m.Token("us-east")
	gate := e2etest.NewReportGate(t, m.App.Server.URL())
	args := []string{"--server", gate.URL, "--token", token, "--cluster", "us-east", "--backend", "kubernetes", "--config", config}
	job := m.submitSleeper(t)
	view := func() besteffort.JobView {
		v, err := m.App.Idle.Job(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	pods := func() []corev1.Pod {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelTask})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}

	// 1. Killed with the task's start in a report the gate holds.
	gate.HoldStart(e2etest.AnyTask)
	bin := buildAgentBinary(t)
	first := startAgentBinary(t, bin, args)
	kubetest.Eventually(t, "the agent reporting the task's start", func() (bool, error) {
		m.follow()
		return gate.IsHeld(), nil
	})
	first.Kill()
	task := gate.HeldTask()
	if v := view(); len(v.Runs) != 1 || v.Runs[0].ID != task || v.Runs[0].ConfirmedAt != nil {
		t.Fatalf("after the kill: runs %+v, want task %d alone, its start not confirmed\nagent:\n%s", v.Runs, task, first.Output())
	}
	if got := pods(); len(got) != 1 || got[0].Name != kubernetes.PodName(task) {
		t.Fatalf("best-effort pods after the kill: %d, want task %d's alone\nagent:\n%s", len(got), task, first.Output())
	}

	// 2. Restarted: the start reaches the server, once, and no pod is added.
	second := startAgentBinary(t, bin, args)
	kubetest.Eventually(t, "the server confirming the task's start", func() (bool, error) {
		m.follow()
		return view().Runs[0].ConfirmedAt != nil, nil
	})
	_, after := gate.Counts(task)
	kubetest.Eventually(t, "three more reports", func() (bool, error) {
		m.follow()
		_, n := gate.Counts(task)
		return n >= after+3, nil
	})
	second.Kill()

	got := pods()
	if len(got) != 1 || got[0].Name != kubernetes.PodName(task) || got[0].Status.Phase != corev1.PodRunning {
		t.Fatalf("best-effort pods in the end: %d, want task %d's alone, running\nagent:\n%s", len(got), task, second.Output())
	}
	var start time.Time
	for _, c := range got[0].Status.ContainerStatuses {
		if c.State.Running != nil {
			start = c.State.Running.StartedAt.Time
		}
	}
	if started, _ := gate.Counts(task); started != 1 {
		t.Errorf("reports with task %d's start the server accepted: %d, want 1", task, started)
	}
	v := view()
	if len(v.Runs) != 1 || v.Running != 1 || v.Runs[0].Status != besteffort.TaskRunning || v.Runs[0].ConfirmedAt == nil || !v.Runs[0].ConfirmedAt.Equal(start.UTC()) {
		t.Errorf("the job on the server: %d running, runs %+v, want one, running, confirmed at the pod's start %v", v.Running, v.Runs, start)
	}
	m.Verify()
}

// buildAgentBinary builds clearhouse-agent (cmd/clearhouse-agent, as make build does)
// into the test's temporary directory and returns its path.
func buildAgentBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "clearhouse-agent")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/clearhouse/clearhouse/cmd/clearhouse-agent").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/clearhouse-agent: %v\n%s", err, out)
	}
	return bin
}

// startAgentBinary starts the clearhouse-agent binary bin with args and --every 1s,
// in a process group of its own; it is killed when the test ends.
func startAgentBinary(t *testing.T, bin string, args []string) *e2etest.Process {
	t.Helper()
	return e2etest.StartProcess(t, exec.Command(bin, append(args, "--every", "1s")...))
}
