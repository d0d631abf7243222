package kubernetes_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuecs "sigs.k8s.io/kueue/client-go/clientset/versioned"
)

// kueueWebhooks is the MutatingWebhookConfiguration scripts/kube-up.sh registers once
// Kueue's controller is ready.
const kueueWebhooks = "kueue-mutating-webhook-configuration"

// queueNameLabel names the LocalQueue a Job is submitted to (Kueue's
// kueue.x-k8s.io/queue-name).
const queueNameLabel = "kueue.x-k8s.io/queue-name"

// requireKueueController skips the test unless the control plane runs Kueue's controller
// (scripts/kube-up.sh without --no-kueue: Kueue's CRDs served and its webhooks
// registered), and fails it instead when CI is set: CI must prove admission by Kueue.
func requireKueueController(t *testing.T, cs k8s.Interface) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + " (scripts/kube-up.sh without --no-kueue starts it)"
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set and Kueue's controller does not run: " + msg)
		}
		t.Skip(msg)
	}
	if _, err := cs.Discovery().ServerResourcesForGroupVersion("kueue.x-k8s.io/v1beta2"); err != nil {
		missing("the control plane does not serve Kueue's API: %v", err)
	}
	_, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), kueueWebhooks, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		missing("no %s: Kueue's controller was not started", kueueWebhooks)
	} else if err != nil {
		t.Fatal(err)
	}
}

// sleeperJob is a Job of one pod requesting cores CPUs, submitted to the team's
// LocalQueue, created as a user would (not suspended: Kueue's webhook suspends it).
func sleeperJob(name string, cores int64) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{queueNameLabel: kubernetes.LocalQueueName}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "work", Image: "busybox", Command: []string{"sleep", "3600"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cores, resource.DecimalSI)}}}},
		}}},
	}
}

// workloadOf returns the Workload Kueue made for the Job (owned by it), or nil.
func workloadOf(ctx context.Context, kq kueuecs.Interface, job *batchv1.Job) (*kueue.Workload, error) {
	wls, err := kq.KueueV1beta2().Workloads(job.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range wls.Items {
		for _, o := range wls.Items[i].OwnerReferences {
			if o.UID == job.UID {
				return &wls.Items[i], nil
			}
		}
	}
	return nil, nil
}

// The real Kueue controller (v0.17.0, started by scripts/kube-up.sh) admits work against
// the queues the backend writes: after ApplyQuotas gives team ads 4 cores, its
// ClusterQueue and LocalQueue become Active; a 2-core Job is admitted and its pod runs
// (and, on kwok, succeeds at once); a 6-core Job, beyond the queue's nominalQuota, is held suspended with Kueue's
// "insufficient quota" verdict and no pod; once the team holds 8 cores (a new
// ApplyQuotas), Kueue admits it too.
func TestKueueControllerAdmitsWithinTheTeamsQuotaAndHoldsBeyond(t *testing.T) {
	cs := kubetest.Client(t)
	requireKueueController(t, cs)
	kq, err := kueuecs.NewForConfig(kubetest.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	ns := kubetest.Namespace(t, cs)
	cluster := "ka-" + ns[len(ns)-5:]
	cfg, err := agent.ParseConfig("ka.yaml", fmt.Appendf(nil, `cluster: %s
teams:
  ads: {namespaces: [%s]}
pools:
  %s/cpu: {resource: cpu, unit: "1"}
kubernetes: {kueue: "on"}
`, cluster, ns, cluster))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := kubernetes.New(ctx, kubetest.Config(t), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	flavor, _, cqName := kubernetes.KueueNames(cluster, "ads")
	t.Cleanup(func() {
		// The namespace's deletion (kubetest.Namespace) removes the Jobs and Workloads;
		// Kueue's finalizers hold the queues until their workloads are gone.
		bg := context.Background()
		_ = kq.KueueV1beta2().ClusterQueues().Delete(bg, cqName, metav1.DeleteOptions{})
		_ = kq.KueueV1beta2().ResourceFlavors().Delete(bg, flavor, metav1.DeleteOptions{})
	})
	apply := func(cores int64) {
		t.Helper()
		if _, err := b.ApplyQuotas(ctx, []agent.Quota{{Team: "ads", Pool: cluster + "/cpu", Units: cores}}); err != nil {
			t.Fatal(err)
		}
	}
	apply(4)

	// Kueue's controller marks the queues Active (a ClusterQueue whose flavor is missing,
	// or a LocalQueue whose ClusterQueue is, stays inactive).
	kubetest.Eventually(t, "ClusterQueue "+cqName+" Active", func() (bool, error) {
		cq, err := kq.KueueV1beta2().ClusterQueues().Get(ctx, cqName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(cq.Status.Conditions, kueue.ClusterQueueActive), nil
	})
	kubetest.Eventually(t, "LocalQueue "+ns+"/"+kubernetes.LocalQueueName+" Active", func() (bool, error) {
		lq, err := kq.KueueV1beta2().LocalQueues(ns).Get(ctx, kubernetes.LocalQueueName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(lq.Status.Conditions, kueue.LocalQueueActive), nil
	})

	jobs := cs.BatchV1().Jobs(ns)
	create := func(name string, cores int64) *batchv1.Job {
		t.Helper()
		job, err := jobs.Create(ctx, sleeperJob(name, cores), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create Job %s: %v", name, err)
		}
		// Kueue's mutating webhook (registered with a url: client config) suspended it.
		if job.Spec.Suspend == nil || !*job.Spec.Suspend {
			t.Fatalf("Job %s was created unsuspended: Kueue's webhook did not see it", name)
		}
		return job
	}
	// waitWorkload waits until Kueue's Workload for job satisfies cond and returns it.
	waitWorkload := func(job *batchv1.Job, what string, cond func(*kueue.Workload) bool) *kueue.Workload {
		t.Helper()
		var wl *kueue.Workload
		kubetest.Eventually(t, "the Workload of Job "+job.Name+" "+what, func() (bool, error) {
			var err error
			wl, err = workloadOf(ctx, kq, job)
			return wl != nil && cond(wl), err
		})
		return wl
	}
	podsOf := func(job *batchv1.Job) []corev1.Pod {
		t.Helper()
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name})
		if err != nil {
			t.Fatal(err)
		}
		return pods.Items
	}
	admitted := func(wl *kueue.Workload) bool {
		return meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted)
	}

	// Within the quota: admitted into the team's ClusterQueue, unsuspended, its pod runs.
	fits := create("fits", 2)
	wl := waitWorkload(fits, "admitted", admitted)
	if wl.Status.Admission == nil || string(wl.Status.Admission.ClusterQueue) != cqName {
		t.Fatalf("Workload %s admitted by %+v, want ClusterQueue %s", wl.Name, wl.Status.Admission, cqName)
	}
	// kwok ends a Job's pod as Succeeded as soon as it runs (tools/kube/kwok-stages.yaml).
	kubetest.Eventually(t, "Job fits unsuspended and its pod succeeded", func() (bool, error) {
		j, err := jobs.Get(ctx, fits.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return j.Spec.Suspend != nil && !*j.Spec.Suspend && j.Status.Succeeded == 1, nil
	})

	// Beyond the nominalQuota (6 cores against 4): Kueue's scheduler considers it and
	// holds it, saying why; the Job stays suspended and has no pod.
	beyond := create("beyond", 6)
	wl = waitWorkload(beyond, "held for insufficient quota", func(wl *kueue.Workload) bool {
		c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "insufficient quota for cpu")
	})
	t.Logf("held: %s", meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved).Message)
	if admitted(wl) || wl.Status.Admission != nil {
		t.Fatalf("Workload %s of the 6-core Job is admitted: %+v", wl.Name, wl.Status)
	}
	if j, err := jobs.Get(ctx, beyond.Name, metav1.GetOptions{}); err != nil || j.Spec.Suspend == nil || !*j.Spec.Suspend {
		t.Fatalf("the held Job is not suspended: %+v, %v", j.Spec.Suspend, err)
	}
	if pods := podsOf(beyond); len(pods) != 0 {
		t.Fatalf("the held Job has %d pods", len(pods))
	}

	// The team buys more: with 8 cores, the held Job fits.
	apply(8)
	waitWorkload(beyond, "admitted after the team's quota grew to 8", admitted)
	kubetest.Eventually(t, "Job beyond unsuspended", func() (bool, error) {
		j, err := jobs.Get(ctx, beyond.Name, metav1.GetOptions{})
		return err == nil && j.Spec.Suspend != nil && !*j.Spec.Suspend, err
	})
}
