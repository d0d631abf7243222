package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The best-effort PriorityClass is no way around the market: with the real agent
// polling, team search, which holds nothing and was granted nothing, cannot run a
// 30-core pod of the class (its member creates it, not the agent); the best-effort
// task the server starts for it runs within the grant the agent writes.
func TestKubernetesTheBestEffortClassIsNoWayAroundTheQuota(t *testing.T) {
	m := newAgentMarket(t)
	k := newKubeAgent(t, m)
	ctx := context.Background()
	cs := kubetest.Client(t)
	member := kubetest.TeamClient(t, cs, k.ns, "search-member")
	k.poll()
	class := k.cfg.Kubernetes.PriorityClass
	bypass := cpuPod("bypass", "30")
	bypass.Spec.PriorityClassName = class
	kubetest.WaitForQuotaAdmission(t, cs, k.ns, bypass)
	if _, err := member.CoreV1().Pods(k.ns).Create(ctx, bypass, metav1.CreateOptions{}); !kubetest.IsQuotaRefusal(err) ||
		!strings.Contains(err.Error(), kubernetes.BestEffortQuotaName) {
		t.Fatalf("search's 30-core pod of class %s while it holds and was granted nothing: %v; want refused by the best-effort quota", class, err)
	}
	job := m.submitSleeper(t)
	kubetest.Eventually(t, "the granted task's pod running", func() (bool, error) {
		k.poll()
		v, err := m.App.Idle.Job(ctx, job.ID)
		if err != nil || len(v.Runs) != 1 {
			return false, err
		}
		p, err := cs.CoreV1().Pods(k.ns).Get(ctx, kubernetes.PodName(v.Runs[0].ID), metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	q, err := cs.CoreV1().ResourceQuotas(k.ns).Get(ctx, kubernetes.BestEffortQuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h, used := q.Spec.Hard[corev1.ResourceRequestsCPU], q.Status.Used[corev1.ResourceRequestsCPU]; h.String() != "2" || used.String() != "2" {
		t.Fatalf("the best-effort quota while the 2-core task runs: hard %s, used %s; want 2 and 2", h.String(), used.String())
	}
}

// A team's recorded own usage follows its pods down to 0: after its last pod ends, the
// next poll records 0, not the 8 cores it used.
func TestKubernetesATeamsLastPodEndingRecordsZeroUsage(t *testing.T) {
	m := newAgentMarket(t)
	k := newKubeAgent(t, m)
	ctx := context.Background()
	cs := kubetest.Client(t)
	m.buy(8)
	k.poll()
	kubetest.WaitForQuotaAdmission(t, cs, k.ns, cpuPod("probe", "9"))
	if _, err := cs.CoreV1().Pods(k.ns).Create(ctx, cpuPod("own", "8"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitForPodPhase(t, cs, k.ns, "own", corev1.PodRunning)
	kubetest.Eventually(t, "8 cores of own usage recorded", func() (bool, error) {
		k.poll()
		return m.OwnerUsage("search", "us-east/cpu") == 8, nil
	})
	exit := []byte(`{"metadata": {"annotations": {"clearhouse.io/kwok-exit": "0"}}}`)
	if _, err := cs.CoreV1().Pods(k.ns).Patch(ctx, "own", types.MergePatchType, exit, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitForPodPhase(t, cs, k.ns, "own", corev1.PodSucceeded)
	kubetest.Eventually(t, "0 cores of own usage recorded", func() (bool, error) {
		k.poll()
		return m.OwnerUsage("search", "us-east/cpu") == 0, nil
	})
}

// `clearhouse-agent --once` exits non-zero when the backend failed in its poll (here a
// team's namespace does not exist, so its quota cannot be written), having reported
// the error; with the namespace there it exits 0.
func TestKubernetesAgentOnceFailsWhenTheBackendFails(t *testing.T) {
	m := newAgentMarket(t)
	_, text := kubeAgentConfig(t, map[string]string{"ads": "t-no-such-namespace"}, os.Getenv(kubetest.EnvKubeconfig))
	config := filepath.Join(t.TempDir(), "us-east.yaml")
	if err := os.WriteFile(config, text, 0o600); err != nil {
		t.Fatal(err)
	}
	token := m.Token("us-east")
	code, out, errOut := m.Agent("us-east", token, "--backend", "kubernetes", "--config", config, "--once")
	if code == 0 || !strings.Contains(errOut, "team ads: none of its namespaces exists") || !strings.Contains(errOut, "errors in the cluster this poll") {
		t.Fatalf("--once with a quota it cannot write: exit %d\n%s%s", code, out, errOut)
	}
	views, err := m.App.Plan.AgentViews(context.Background())
	if err != nil || len(views) != 1 || len(views[0].Errors) == 0 || !strings.Contains(fmt.Sprint(views[0].Errors), "none of its namespaces exists") {
		t.Fatalf("operators see %+v (%v); want the error reported", views, err)
	}
	cs := kubetest.Client(t)
	adsNS := kubetest.Namespace(t, cs)
	_, text = kubeAgentConfig(t, map[string]string{"ads": adsNS}, os.Getenv(kubetest.EnvKubeconfig))
	if err := os.WriteFile(config, text, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := m.Agent("us-east", token, "--backend", "kubernetes", "--config", config, "--once"); code != 0 {
		t.Fatalf("--once with every namespace there: exit %d\n%s%s", code, out, errOut)
	}
}

// The real agent touches only what it maps: a pod labelled as a Clearhouse task that
// the server does not run is deleted in the team's namespace and left alone in a
// namespace the config does not map (another agent's, on a shared control plane).
func TestKubernetesALabelledPodOutsideTheMappingSurvives(t *testing.T) {
	m := newAgentMarket(t)
	k := newKubeAgent(t, m)
	ctx := context.Background()
	cs := kubetest.Client(t)
	other := kubetest.Namespace(t, cs)
	t.Cleanup(func() { deletePods(t, cs, other) })
	for _, ns := range []string{k.ns, other} {
		p := cpuPod(kubernetes.PodName(987654), "1")
		p.Labels = map[string]string{kubernetes.ManagedBy: "clearhouse", kubernetes.LabelTask: "987654"}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kubetest.Eventually(t, "the mapped namespace's stray task pod deleted", func() (bool, error) {
		k.poll()
		p, err := cs.CoreV1().Pods(k.ns).Get(ctx, kubernetes.PodName(987654), metav1.GetOptions{})
		if err != nil {
			return apierrors.IsNotFound(err), nil
		}
		return p.DeletionTimestamp != nil, nil
	})
	k.poll()
	p, err := cs.CoreV1().Pods(other).Get(ctx, kubernetes.PodName(987654), metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("the labelled pod in %s, a namespace the agent does not map: %v", other, err)
	}
}
