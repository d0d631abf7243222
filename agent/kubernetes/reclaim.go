package kubernetes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/clearhouse/clearhouse/agent"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

var _ agent.Reclaimer = (*Backend)(nil)

// Reclaim takes back each team's own work beyond its limit: for each r it evicts the
// team's newest pods (by creation time) that use the pool, among its own (not of the
// best-effort PriorityClass, no task label) and not a reservation's (no
// clearhouse.io/reservation label), running or bound and not ending, in the
// namespaces the config maps for the team, until the evicted pods' requests of the
// pool reach r.Units (rounded up to whole units). It evicts through the Eviction API
// (policy/v1), so the API server honours the pods' PodDisruptionBudgets and grace
// periods: a pod a budget protects now (429) is skipped for the next newest and named
// in the error. Pods this process evicted that the informer still shows count as
// freed, and Measure leaves them out, so the report after an eviction already shows
// the excess freed and the server asks for no more. Each pod
// evicted is returned as a Reclaimed ("Pod ns/name", its units of the pool). Teams and
// pools not in the config are skipped with an error.
func (b *Backend) Reclaim(ctx context.Context, rs []agent.Reclaim) ([]agent.Reclaimed, error) {
	var out []agent.Reclaimed
	var errs []error
	for _, r := range rs {
		if r.Units <= 0 {
			continue
		}
		t, ok := b.m.team(r.Team)
		p, pok := b.m.pool(r.Pool)
		if !ok || !pok {
			errs = append(errs, fmt.Errorf("reclaim %d units of %s from team %s: not in the config: nothing evicted", r.Units, r.Pool, r.Team))
			continue
		}
		got, err := b.reclaim(ctx, t, p, r.Units)
		out = append(out, got...)
		if err != nil {
			errs = append(errs, fmt.Errorf("reclaim %d units of %s from team %s: %w", r.Units, r.Pool, r.Team, err))
		}
	}
	return out, errors.Join(errs...)
}

// reclaim evicts team t's newest own pods using pool p until units are freed.
func (b *Backend) reclaim(ctx context.Context, t team, p pool, units int64) ([]agent.Reclaimed, error) {
	nss, err := b.namespacesOf(t)
	if err != nil {
		return nil, err
	}
	var cands []*corev1.Pod
	var freed int64 // milli of p's resource
	seen := map[types.UID]bool{}
	for _, ns := range nss {
		pods, err := b.pods.Pods(ns).List(labels.Everything())
		if err != nil {
			return nil, err
		}
		for _, pod := range pods {
			seen[pod.UID] = true
			q := podRequests(pod)[p.resource]
			_, reservation := pod.Labels[LabelReservation]
			if q <= 0 || b.bestEffort(pod) || reservation || pod.Spec.NodeName == "" {
				continue
			}
			b.mu.Lock()
			_, evicted := b.evicted[pod.UID]
			b.mu.Unlock()
			if evicted && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
				freed += q // on its way out
				continue
			}
			if !ended(pod) {
				cands = append(cands, pod)
			}
		}
	}
	b.mu.Lock()
	for uid, of := range b.evicted {
		if of == t.name && !seen[uid] {
			delete(b.evicted, uid) // gone: forgotten, so the set stays bounded
		}
	}
	b.mu.Unlock()
	slices.SortFunc(cands, func(x, y *corev1.Pod) int {
		return cmp.Or(y.CreationTimestamp.Compare(x.CreationTimestamp.Time), cmp.Compare(y.Namespace, x.Namespace), cmp.Compare(y.Name, x.Name))
	})
	var out []agent.Reclaimed
	var errs []error
	for _, pod := range cands {
		if p.unitsUp(freed) >= units {
			break
		}
		q := podRequests(pod)[p.resource]
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}}
		err := b.cs.PolicyV1().Evictions(pod.Namespace).Evict(ctx, ev)
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			continue // gone, or another pod of that name: nothing freed by us
		case apierrors.IsTooManyRequests(err):
			errs = append(errs, fmt.Errorf("pod %s/%s: its PodDisruptionBudget allows no eviction now: %w", pod.Namespace, pod.Name, err))
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("evict pod %s/%s: %w", pod.Namespace, pod.Name, err))
			continue
		}
		b.mu.Lock()
		b.evicted[pod.UID] = t.name
		b.mu.Unlock()
		freed += q
		out = append(out, agent.Reclaimed{Team: t.name, Pool: p.name, Object: "Pod " + pod.Namespace + "/" + pod.Name, Units: p.unitsUp(q)})
		fmt.Fprintf(b.out, "evicted pod %s/%s of team %s (%d units of %s over its limit)\n", pod.Namespace, pod.Name, t.name, units, p.name)
	}
	if p.unitsUp(freed) < units {
		errs = append(errs, fmt.Errorf("only %d units freed: no other pod of the team's own may be evicted", p.unitsUp(freed)))
	}
	return out, errors.Join(errs...)
}
