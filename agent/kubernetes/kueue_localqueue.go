package kubernetes

import (
	"context"
	"errors"
	"fmt"

	"github.com/clearhouse/clearhouse/agent"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueac "sigs.k8s.io/kueue/client-go/applyconfiguration/kueue/v1beta2"
)

// applyLocalQueues makes each namespace of nss hold the LocalQueue "clearhouse"
// (LocalQueueName), labelled as the backend's and pointing at the team's ClusterQueue
// cq (see applyLocalQueue). changed is whether it wrote one; the errors are joined,
// one namespace's not stopping the others.
func (r *queueReconciler) applyLocalQueues(ctx context.Context, team, cq string, nss []string) (changed bool, err error) {
	var errs []error
	for _, ns := range nss {
		c, err := r.applyLocalQueue(ctx, team, ns, cq)
		if err != nil {
			errs = append(errs, fmt.Errorf("LocalQueue %s/%s: %w", ns, LocalQueueName, err))
		}
		changed = changed || c
	}
	return changed, errors.Join(errs...)
}

// applyLocalQueue puts back namespace ns's LocalQueue where it is missing or points
// elsewhere than cq. The informer holding it as wanted is enough. Otherwise the API
// server is asked (the informer may not hold this process's own write yet) and what it
// holds decides, so a correction is made and reported once:
//
//   - missing: the queue is applied; a queue this process had seen or written was
//     deleted by someone else, and its recreation is a Correction (Was "");
//   - pointing elsewhere and labelled as the backend's: Kueue makes spec.clusterQueue
//     immutable, so the queue is deleted (that version only: preconditions on its uid
//     and resourceVersion, read again and decided again when a newer version, such as
//     one with the status Kueue's controller writes, took its place) and applied again;
//     the Correction's Was is where it pointed;
//   - pointing elsewhere without the label: someone else's, left alone and named in
//     the error;
//   - pointing at cq without the label: the label is applied, nothing reported.
//
// A correction is kept for the next poll's report and recorded as an Event
// (LocalQueueRestored) on the queue put back.
func (r *queueReconciler) applyLocalQueue(ctx context.Context, team, ns, cq string) (bool, error) {
	key := ns + "/" + LocalQueueName
	if lq, err := r.localQueues.LocalQueues(ns).Get(LocalQueueName); err == nil && string(lq.Spec.ClusterQueue) == cq {
		r.known[key] = true
		return false, nil
	}
	api := r.kq.KueueV1beta2().LocalQueues(ns)
	var fix *agent.Correction
	for attempt := 1; ; attempt++ {
		cur, err := api.Get(ctx, LocalQueueName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cur, err = nil, nil
		}
		if err != nil {
			return false, err
		}
		fix = &agent.Correction{Team: team, Object: "LocalQueue " + key + " clusterQueue", Now: cq}
		switch {
		case cur == nil:
			if !r.known[key] {
				fix = nil
			}
		case string(cur.Spec.ClusterQueue) == cq:
			if cur.Labels[ManagedBy] == FieldManager {
				r.known[key] = true
				return false, nil // the informer has not seen it yet
			}
			fix = nil
		case cur.Labels[ManagedBy] != FieldManager:
			return false, fmt.Errorf("exists, points at ClusterQueue %q and is not Clearhouse's (no %s=%s label): left alone; delete it", cur.Spec.ClusterQueue, ManagedBy, FieldManager)
		case cur.DeletionTimestamp != nil:
			return false, fmt.Errorf("points at ClusterQueue %q and is being deleted: put back once it is gone", cur.Spec.ClusterQueue)
		default:
			fix.Was = string(cur.Spec.ClusterQueue)
			pre := metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}
			err := api.Delete(ctx, LocalQueueName, metav1.DeleteOptions{Preconditions: &pre})
			if apierrors.IsConflict(err) && attempt < 5 {
				continue // a newer version (Kueue's controller writes the status): decide on it
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("points at ClusterQueue %q; deleting it to put it back: %w", cur.Spec.ClusterQueue, err)
			}
		}
		break
	}
	lq := kueueac.LocalQueue(LocalQueueName, ns).WithLabels(map[string]string{ManagedBy: FieldManager}).
		WithSpec(kueueac.LocalQueueSpec().WithClusterQueue(kueue.ClusterQueueReference(cq)))
	got, err := api.Apply(ctx, lq, kueueApply)
	if err != nil {
		return false, err
	}
	r.known[key] = true
	if fix != nil {
		r.corrected(*fix)
		what := "it was deleted; recreated"
		if fix.Was != "" {
			what = fmt.Sprintf("it pointed at ClusterQueue %s; replaced (spec.clusterQueue is immutable)", fix.Was)
		}
		r.b.recorder.Eventf(ref(kueueGroupVersion, "LocalQueue", ns, LocalQueueName, got.UID, got.ResourceVersion), corev1.EventTypeWarning,
			ReasonLocalQueueRestored, "Clearhouse put back team %s's LocalQueue, pointing at ClusterQueue %s: %s", team, cq, what)
	}
	return true, nil
}
