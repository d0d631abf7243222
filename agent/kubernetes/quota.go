package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

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
// Both list every pool of the config (0 where the team has nothing). It writes by
// server-side apply with field manager "clearhouse", forcing its own fields back, and
// only where a quota differs from what it wants. A value that differs from what it
// last applied (the quota's AnnotationHard) was changed by someone else: it is put
// back and returned as a Correction; a first write, or a change because want changed,
// is none. A ResourceQuota of either name that the backend does not own (no
// managed-by label) is left alone and named in the error. Teams and pools not in the
// config are skipped (see docs/kubernetes-backend.md).
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
	var corrections []agent.Correction
	var errs []error
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
			for _, w := range []struct {
				name string
				op   corev1.ScopeSelectorOperator
				hard map[string]string
			}{{QuotaName, corev1.ScopeSelectorOpNotIn, own}, {BestEffortQuotaName, corev1.ScopeSelectorOpIn, be}} {
				cs, err := b.applyQuota(ctx, t.name, ns, w.name, w.op, w.hard)
				corrections = append(corrections, cs...)
				if err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	cs, err := b.applyKueue(ctx, byTeam)
	corrections = append(corrections, cs...)
	if err != nil {
		errs = append(errs, err)
	}
	return corrections, errors.Join(errs...)
}

// applyQuota brings one namespace's quota of that name to hard (resource key ->
// quantity), scoped to the best-effort PriorityClass by op (In or NotIn).
func (b *Backend) applyQuota(ctx context.Context, team, ns, name string, op corev1.ScopeSelectorOperator, hard map[string]string) ([]agent.Correction, error) {
	cur, err := b.quotas.ResourceQuotas(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The informer may lag, and holds only the backend's own quotas: ask the API
		// server before writing what may be someone else's quota.
		cur, err = b.cs.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cur, err = nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	object := "ResourceQuota " + ns + "/" + name
	var corrections []agent.Correction
	if cur != nil {
		if cur.Labels[ManagedBy] != FieldManager {
			return nil, fmt.Errorf("%s exists and is not Clearhouse's (no %s=%s label): left alone; rename or delete it", object, ManagedBy, FieldManager)
		}
		applied := map[string]string{}
		_ = json.Unmarshal([]byte(cur.Annotations[AnnotationHard]), &applied)
		same := b.scoped(cur, op) && len(cur.Spec.Hard) == len(hard)
		for key, v := range hard {
			q, ok := cur.Spec.Hard[corev1.ResourceName(key)]
			now := resource.MustParse(v)
			if !ok || q.Cmp(now) != 0 {
				same = false
			}
			was := ""
			if ok {
				was = q.String()
			}
			if last, ok := applied[key]; ok && was != "" && !equalQuantity(was, last) && !equalQuantity(was, v) {
				corrections = append(corrections, agent.Correction{Team: team, Pool: b.poolOfKey(key), Object: object, Was: was, Now: v})
			}
		}
		// The informer may not have seen this process's last apply yet: skip only when
		// that apply, too, wrote what is wanted now.
		b.mu.Lock()
		mine, ok := b.applied[ns+"/"+name]
		b.mu.Unlock()
		if same && equalHard(applied, hard) && (!ok || equalHard(mine, hard)) {
			return nil, nil
		}
	}
	note, _ := json.Marshal(hard)
	rl := corev1.ResourceList{}
	for k, v := range hard {
		rl[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	ac := corev1ac.ResourceQuota(name, ns).
		WithLabels(map[string]string{ManagedBy: FieldManager, LabelTeam: labelSafe(team)}).
		WithAnnotations(map[string]string{AnnotationHard: string(note)}).
		WithSpec(corev1ac.ResourceQuotaSpec().WithHard(rl).WithScopeSelector(corev1ac.ScopeSelector().WithMatchExpressions(
			corev1ac.ScopedResourceSelectorRequirement().WithScopeName(corev1.ResourceQuotaScopePriorityClass).
				WithOperator(op).WithValues(b.m.priorityClass))))
	if _, err := b.cs.CoreV1().ResourceQuotas(ns).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return nil, fmt.Errorf("%s: %w", object, err)
	}
	b.mu.Lock()
	b.applied[ns+"/"+name] = hard
	b.mu.Unlock()
	return corrections, nil
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
