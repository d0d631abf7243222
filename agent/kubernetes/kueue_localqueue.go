package kubernetes

import (
	"context"
	"errors"
	"fmt"

	"github.com/clearhouse/clearhouse/agent"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueac "sigs.k8s.io/kueue/client-go/applyconfiguration/kueue/v1beta2"
)

// applyLocalQueues makes each namespace of nss hold the LocalQueue "clearhouse"
// (LocalQueueName), labelled as the backend's and pointing at the team's ClusterQueue
// cq (see applyLocalQueue). It returns what it put back; the errors are joined, one
// namespace's not stopping the others.
func (b *Backend) applyLocalQueues(ctx context.Context, team, cq string, nss []string) ([]agent.Correction, error) {
	var corrections []agent.Correction
	var errs []error
	for _, ns := range nss {
		c, err := b.applyLocalQueue(ctx, team, ns, cq)
		if err != nil {
			errs = append(errs, fmt.Errorf("LocalQueue %s/%s: %w", ns, LocalQueueName, err))
		}
		if c != nil {
			corrections = append(corrections, *c)
		}
	}
	return corrections, errors.Join(errs...)
}

// applyLocalQueue puts back namespace ns's LocalQueue where it is missing or points
// elsewhere than cq. The informer holding it as wanted is enough. Otherwise the API
// server is asked (the informer may not hold this process's own write yet) and what it
// holds decides, so a correction is made and reported once:
//
//   - missing: the queue is applied; a queue this process had seen or written was
//     deleted by someone else, and its recreation is the returned Correction (Was "");
//   - pointing elsewhere and labelled as the backend's: Kueue makes spec.clusterQueue
//     immutable, so the queue is deleted (that version only: preconditions on its uid
//     and resourceVersion, read again and decided again when a newer version, such as
//     one with the status Kueue's controller writes, took its place) and applied again;
//     the Correction's Was is where it pointed;
//   - pointing elsewhere without the label: someone else's, left alone and named in
//     the error;
//   - pointing at cq without the label: the label is applied, nothing reported.
func (b *Backend) applyLocalQueue(ctx context.Context, team, ns, cq string) (*agent.Correction, error) {
	key := ns + "/" + LocalQueueName
	if lq, err := b.localQueues.LocalQueues(ns).Get(LocalQueueName); err == nil && string(lq.Spec.ClusterQueue) == cq {
		b.localKnown[key] = true
		return nil, nil
	}
	api := b.kq.KueueV1beta2().LocalQueues(ns)
	var fix *agent.Correction
	for attempt := 1; ; attempt++ {
		cur, err := api.Get(ctx, LocalQueueName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cur, err = nil, nil
		}
		if err != nil {
			return nil, err
		}
		fix = &agent.Correction{Team: team, Object: "LocalQueue " + key + " clusterQueue", Now: cq}
		switch {
		case cur == nil:
			if !b.localKnown[key] {
				fix = nil
			}
		case string(cur.Spec.ClusterQueue) == cq:
			if cur.Labels[ManagedBy] == FieldManager {
				b.localKnown[key] = true
				return nil, nil // the informer has not seen it yet
			}
			fix = nil
		case cur.Labels[ManagedBy] != FieldManager:
			return nil, fmt.Errorf("exists, points at ClusterQueue %q and is not Clearhouse's (no %s=%s label): left alone; delete it", cur.Spec.ClusterQueue, ManagedBy, FieldManager)
		case cur.DeletionTimestamp != nil:
			return nil, fmt.Errorf("points at ClusterQueue %q and is being deleted: put back once it is gone", cur.Spec.ClusterQueue)
		default:
			fix.Was = string(cur.Spec.ClusterQueue)
			pre := metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}
			err := api.Delete(ctx, LocalQueueName, metav1.DeleteOptions{Preconditions: &pre})
			if apierrors.IsConflict(err) && attempt < 5 {
				continue // a newer version (Kueue's controller writes the status): decide on it
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("points at ClusterQueue %q; deleting it to put it back: %w", cur.Spec.ClusterQueue, err)
			}
		}
		break
	}
	lq := kueueac.LocalQueue(LocalQueueName, ns).WithLabels(map[string]string{ManagedBy: FieldManager}).
		WithSpec(kueueac.LocalQueueSpec().WithClusterQueue(kueue.ClusterQueueReference(cq)))
	if _, err := api.Apply(ctx, lq, kueueApply); err != nil {
		return nil, err
	}
	b.localKnown[key] = true
	return fix, nil
}
