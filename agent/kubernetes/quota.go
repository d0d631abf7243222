package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/clearhouse/clearhouse/agent"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

type metav1ListOptions = metav1.ListOptions

// ApplyQuotas makes two ResourceQuotas of each team namespace hold the team's limits,
// requests.<resource> of each pool (the pool's units times its unit):
//   - "clearhouse", scoped to pods outside the best-effort PriorityClass, holds the
//     team's own limit (Quota.Units), split evenly among its namespaces, the first
//     ones taking the remainder;
//   - "clearhouse-best-effort", scoped to pods of the best-effort PriorityClass, holds
//     what the market granted the team's best-effort tasks now (Quota.BestEffort),
//     all of it in the team's first namespace (where SyncTasks runs its tasks) and 0
//     in the others. So a pod of the class is refused by the API server beyond the
//     grant, whoever creates it: the class is no way around the team's quota.
//
// Both list every pool of the config (0 where the team has nothing). ApplyQuotas sets
// what the quota reconciler wants and reconciles every quota at once (see
// reconcileQuota); between polls the reconciler's informer puts back what someone else
// changes. It returns the corrections made since the last call, by the poll or between
// polls. A ResourceQuota of either name that the backend does not own (no managed-by
// label) is left alone and named in the error. Teams and pools not in the config are
// skipped (see docs/kubernetes-backend.md).
func (b *Backend) ApplyQuotas(ctx context.Context, want []agent.Quota) ([]agent.Correction, error) {
	byTeam := map[string]map[string]int64{}
	granted := map[string]map[string]int64{}
	for _, q := range want {
		if _, ok := b.m.team(q.Team); !ok {
			continue
		}
		if _, ok := b.m.pool(q.Pool); !ok {
			continue
		}
		if byTeam[q.Team] == nil {
			byTeam[q.Team], granted[q.Team] = map[string]int64{}, map[string]int64{}
		}
		byTeam[q.Team][q.Pool] = q.Units
		granted[q.Team][q.Pool] = max(q.BestEffort, 0)
	}
	var errs []error
	desired := map[string]quotaWant{}
	var keys []string
	for _, t := range b.m.teams {
		units, ok := byTeam[t.name]
		if !ok {
			continue
		}
		nss, err := b.namespacesOf(t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(nss) == 0 {
			errs = append(errs, fmt.Errorf("team %s: none of its namespaces exists: its quota is not applied", t.name))
			continue
		}
		for i, ns := range nss {
			own, be := map[string]string{}, map[string]string{}
			for _, p := range b.m.pools {
				n := units[p.name]
				share := n / int64(len(nss))
				if int64(i) < n%int64(len(nss)) {
					share++
				}
				q := p.quantity(share)
				own[string(p.quotaKey())] = q.String()
				g := int64(0)
				if i == 0 {
					g = granted[t.name][p.name]
				}
				q = p.quantity(g)
				be[string(p.quotaKey())] = q.String()
			}
			for _, w := range []quotaWant{{t.name, ns, QuotaName, corev1.ScopeSelectorOpNotIn, own}, {t.name, ns, BestEffortQuotaName, corev1.ScopeSelectorOpIn, be}} {
				k := ns + "/" + w.name
				desired[k] = w
				keys = append(keys, k)
			}
		}
	}
	b.quota.want(desired)
	errs = append(errs, b.quota.reconcileNow(ctx, keys)...)
	corrections := b.quota.drain()
	cs, err := b.applyKueue(ctx, byTeam)
	corrections = append(corrections, cs...)
	if err != nil {
		errs = append(errs, err)
	}
	return corrections, errors.Join(errs...)
}

// quotaReconciler keeps the backend's ResourceQuotas as the last poll wants them. Its
// state is bounded by the quotas wanted now: a quota no longer wanted is forgotten
// (and left in the cluster as it is, as before).
type quotaReconciler struct {
	*reconciler
	b       *Backend
	desired map[string]quotaWant         // "ns/name" -> what the last poll wants
	written map[string]map[string]string // "ns/name" -> the limits this process last applied
	fixed   map[string]string            // "ns/name" -> the resourceVersion whose drift it put back
}

// quotaWant is one ResourceQuota as the backend wants it: hard (resource key ->
// quantity), scoped to the best-effort PriorityClass by op (In or NotIn).
type quotaWant struct {
	team, ns, name string
	op             corev1.ScopeSelectorOperator
	hard           map[string]string
}

func newQuotaReconciler(b *Backend) *quotaReconciler {
	r := &quotaReconciler{b: b, desired: map[string]quotaWant{}, written: map[string]map[string]string{}, fixed: map[string]string{}}
	r.reconciler = newReconciler("quota", b.out, r.reconcileQuota)
	return r
}

// want replaces the desired quotas, forgetting what it kept of the others.
func (r *quotaReconciler) want(desired map[string]quotaWant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.desired = desired
	forget(r.written, desired)
	forget(r.fixed, desired)
}

// forget deletes from m each key that keep does not hold.
func forget[V, W any](m map[string]V, keep map[string]W) {
	for k := range m {
		if _, ok := keep[k]; !ok {
			delete(m, k)
		}
	}
}

// reconcileQuota brings the quota key ("ns/name") to what the last poll wants, by
// server-side apply with field manager "clearhouse", forcing its own fields back, and
// only where the quota differs from it. A wanted value the cluster holds otherwise and
// that the backend's apply no longer owns (managedFields) was changed by someone else:
// it is put back, kept as a Correction for the next poll's report, and an Event
// (QuotaRestored) is recorded on the quota saying what was put back and why. A value
// the backend still owns differs only because want changed: written, not reported. A
// quota this process wrote that is gone was deleted by someone else: it is recreated
// and reported (Was ""). A quota from an older agent (the clearhouse.io/hard
// annotation) is adopted: applied again without the annotation, which server-side
// apply then removes, as the same field manager wrote it. Nothing wanted for key (no
// poll yet, or the team left the config): nothing done.
func (r *quotaReconciler) reconcileQuota(ctx context.Context, key string) (bool, error) {
	w, ok := r.desired[key]
	if !ok {
		return false, nil
	}
	b := r.b
	cur, err := b.quotas.ResourceQuotas(w.ns).Get(w.name)
	if apierrors.IsNotFound(err) {
		// The informer may lag, and holds only the backend's own quotas: ask the API
		// server before writing what may be someone else's quota.
		cur, err = b.cs.CoreV1().ResourceQuotas(w.ns).Get(ctx, w.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cur, err = nil, nil
		}
	}
	if err != nil {
		return false, err
	}
	object := "ResourceQuota " + key
	var drift []agent.Correction
	var changes []string // for the Event: "requests.cpu 100 -> 8 (set by kubectl-edit Update)"
	mine, written := r.written[key]
	adopt := false
	if cur != nil {
		if cur.Labels[ManagedBy] != FieldManager {
			return false, fmt.Errorf("%s exists and is not Clearhouse's (no %s=%s label): left alone; rename or delete it", object, ManagedBy, FieldManager)
		}
		// An older agent's quota, not yet applied by this process (a stale informer may
		// still show the annotation after the apply that removed it).
		_, adopt = cur.Annotations[AnnotationHard]
		adopt = adopt && !written
		same := b.scoped(cur, w.op) && len(cur.Spec.Hard) == len(w.hard)
		for _, k := range slices.Sorted(maps.Keys(w.hard)) {
			v := w.hard[k]
			q, ok := cur.Spec.Hard[corev1.ResourceName(k)]
			if ok && q.Cmp(resource.MustParse(v)) == 0 {
				continue
			}
			same = false
			path := []string{"f:spec", "f:hard", "f:" + k}
			if ownsField(cur, FieldManager, path...) {
				continue // the backend's own older value: want changed
			}
			was := ""
			if ok {
				was = q.String()
			}
			if !ok && !written {
				continue // a key the backend has not written yet (a pool new in the config)
			}
			drift = append(drift, agent.Correction{Team: w.team, Pool: b.poolOfKey(k), Object: object, Was: was, Now: v})
			changes = append(changes, fmt.Sprintf("%s %s -> %s (set by %s)", k, orNone(was), v, otherOwners(cur, FieldManager, path...)))
		}
		// The informer may not have seen this process's last apply yet: skip only when
		// that apply, too, wrote what is wanted now.
		if same && !adopt && (!written || equalHard(mine, w.hard)) {
			return false, nil
		}
		if r.fixed[key] == cur.ResourceVersion {
			drift, changes = nil, nil // put back already; the informer has not seen the write yet
		}
	} else if written {
		// This process wrote it and it is gone: someone deleted it.
		for _, k := range slices.Sorted(maps.Keys(w.hard)) {
			drift = append(drift, agent.Correction{Team: w.team, Pool: b.poolOfKey(k), Object: object, Now: w.hard[k]})
		}
		changes = append(changes, "the quota was deleted; recreated")
	}
	rl := corev1.ResourceList{}
	for k, v := range w.hard {
		rl[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	ac := corev1ac.ResourceQuota(w.name, w.ns).
		WithLabels(map[string]string{ManagedBy: FieldManager, LabelTeam: labelSafe(w.team)}).
		WithSpec(corev1ac.ResourceQuotaSpec().WithHard(rl).WithScopeSelector(corev1ac.ScopeSelector().WithMatchExpressions(
			corev1ac.ScopedResourceSelectorRequirement().WithScopeName(corev1.ResourceQuotaScopePriorityClass).
				WithOperator(w.op).WithValues(b.m.priorityClass))))
	got, err := b.cs.CoreV1().ResourceQuotas(w.ns).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return false, fmt.Errorf("%s: %w", object, err)
	}
	r.written[key] = w.hard
	on := ref("v1", "ResourceQuota", w.ns, w.name, got.UID, got.ResourceVersion)
	if len(drift) > 0 {
		if cur != nil {
			r.fixed[key] = cur.ResourceVersion
		}
		for _, c := range drift {
			r.corrected(c)
		}
		b.recorder.Eventf(on, corev1.EventTypeWarning, ReasonQuotaRestored,
			"Clearhouse put back team %s's limits, which the market allocated: %s", w.team, strings.Join(changes, "; "))
	}
	if adopt {
		b.recorder.Eventf(on, corev1.EventTypeNormal, ReasonQuotaAdopted,
			"Clearhouse adopted the quota of an older agent: its %s annotation is removed; managedFields now say which fields Clearhouse owns", AnnotationHard)
	}
	return true, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// scoped reports whether the quota's scope is the best-effort PriorityClass with op
// (In: only its pods; NotIn: all others), as the backend writes it.
func (b *Backend) scoped(q *corev1.ResourceQuota, op corev1.ScopeSelectorOperator) bool {
	s := q.Spec.ScopeSelector
	if s == nil || len(s.MatchExpressions) != 1 || len(q.Spec.Scopes) != 0 {
		return false
	}
	e := s.MatchExpressions[0]
	return e.ScopeName == corev1.ResourceQuotaScopePriorityClass && e.Operator == op && slices.Equal(e.Values, []string{b.m.priorityClass})
}

func (b *Backend) poolOfKey(key string) string {
	for _, p := range b.m.pools {
		if string(p.quotaKey()) == key {
			return p.name
		}
	}
	return ""
}

func equalQuantity(a, b string) bool {
	x, err1 := resource.ParseQuantity(a)
	y, err2 := resource.ParseQuantity(b)
	return err1 == nil && err2 == nil && x.Cmp(y) == 0
}

func equalHard(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !equalQuantity(v, w) {
			return false
		}
	}
	return true
}

// labelSafe is s as a label value (at most 63 characters of [-A-Za-z0-9_.]).
func labelSafe(s string) string {
	out := []byte{}
	for i := 0; i < len(s) && len(out) < 63; i++ {
		c := s[i]
		if c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			out = append(out, c)
		} else {
			out = append(out, '_')
		}
	}
	for len(out) > 0 && !isAlnum(out[0]) {
		out = out[1:]
	}
	for len(out) > 0 && !isAlnum(out[len(out)-1]) {
		out = out[:len(out)-1]
	}
	return string(out)
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
