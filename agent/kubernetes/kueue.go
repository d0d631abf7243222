package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/clearhouse/clearhouse/agent"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueac "sigs.k8s.io/kueue/client-go/applyconfiguration/kueue/v1beta2"
	kueueinformers "sigs.k8s.io/kueue/client-go/informers/externalversions"
)

// kueueGroupVersion is the Kueue API the backend writes.
var kueueGroupVersion = kueue.GroupVersion.String()

// KueueNames are the names of the Kueue objects of a cluster: one ResourceFlavor and
// one cohort for the cluster, a ClusterQueue per team, and a LocalQueue named
// "clearhouse" in each team namespace.
func KueueNames(cluster, team string) (flavor, cohort, clusterQueue string) {
	base := "clearhouse-" + labelSafe(cluster)
	return base, base, base + "-" + labelSafe(team)
}

// LocalQueueName is the LocalQueue the backend writes in each team namespace.
const LocalQueueName = "clearhouse"

// kueueOn reports whether to write Kueue queues: kueue auto or on, and the API server
// serves Kueue's API (discovery, asked until it answers yes). Under kueue on, an API
// server without it is an error. The first yes starts informers of the ClusterQueues,
// LocalQueues and ResourceFlavors the backend owns (label managed-by), from which
// drift is found.
func (b *Backend) kueueOn(ctx context.Context) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kueueServed {
		return true, nil
	}
	if b.m.kueue == "off" || b.kq == nil {
		return false, nil
	}
	if _, err := b.cs.Discovery().ServerResourcesForGroupVersion(kueueGroupVersion); err != nil {
		if b.m.kueue == "on" {
			return false, fmt.Errorf("kueue: on, but the API server does not serve %s: %w", kueueGroupVersion, err)
		}
		return false, nil
	}
	if b.kueueSynced == nil {
		f := kueueinformers.NewSharedInformerFactoryWithOptions(b.kq, 0, kueueinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = ManagedBy + "=" + FieldManager
		}))
		v := f.Kueue().V1beta2()
		b.clusterQueues, b.localQueues, b.flavors = v.ClusterQueues().Lister(), v.LocalQueues().Lister(), v.ResourceFlavors().Lister()
		b.kueueSynced = []cache.InformerSynced{v.ClusterQueues().Informer().HasSynced, v.LocalQueues().Informer().HasSynced,
			v.ResourceFlavors().Informer().HasSynced}
		f.Start(b.stop)
	}
	synced := b.kueueSynced
	b.mu.Unlock()
	ok := cache.WaitForCacheSync(ctx.Done(), synced...)
	b.mu.Lock()
	if !ok {
		return false, fmt.Errorf("kueue: the first list of the ClusterQueues, LocalQueues and ResourceFlavors did not complete (does the agent's role let it list and watch them? see deploy/kubernetes/rbac-kueue.yaml): %w", ctx.Err())
	}
	b.kueueServed = true
	return true, nil
}

// kueueApply is how the backend writes Kueue objects: server-side apply with field
// manager "clearhouse", taking its own fields back from another manager.
var kueueApply = metav1.ApplyOptions{FieldManager: FieldManager, Force: true}

// applyKueue writes, by server-side apply with field manager "clearhouse", the
// cluster's ResourceFlavor, a ClusterQueue per team in the cluster's cohort with a
// nominalQuota of each pool's resource equal to the team's limit (times the unit),
// admitting workloads of the team's namespaces, and a LocalQueue in each of them.
// Each queue has a borrowingLimit of 0: a team's own work never runs beyond the quota
// it holds (its ResourceQuota would refuse the pods anyway; idle quota reaches others
// as Clearhouse's best-effort tasks). Its lendingLimit, when the allocation gave the
// settings of every pool of the resource, is the quota less the pool's exposure share
// (kept for the owner, as best-effort work keeps it free), rounded down to whole units.
// See docs/kubernetes-backend.md. A ClusterQueue is written again only when what it
// should hold changed since this process last wrote it or its informer holds other
// limits; the flavor and a LocalQueue only when their informer does not hold them as
// wanted and the API server confirms it. What someone else changed or deleted is put
// back and returned as a Correction, once.
func (b *Backend) applyKueue(ctx context.Context, byTeam map[string]map[string]int64) ([]agent.Correction, error) {
	if on, err := b.kueueOn(ctx); !on {
		return nil, err
	}
	flavor, _, _ := KueueNames(b.m.cluster, "")
	corrections, err := b.applyFlavor(ctx, flavor)
	if err != nil {
		return corrections, err
	}
	var covered []corev1.ResourceName
	for _, p := range b.m.pools {
		if !slices.Contains(covered, p.resource) {
			covered = append(covered, p.resource)
		}
	}
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
		_, _, name := KueueNames(b.m.cluster, t.name)
		cs, err := b.applyClusterQueue(ctx, t.name, name, nss, units, covered)
		corrections = append(corrections, cs...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cs, err = b.applyLocalQueues(ctx, t.name, name, nss)
		corrections = append(corrections, cs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return corrections, errors.Join(errs...)
}

// applyFlavor makes the cluster's ResourceFlavor exist, labelled as the backend's. The
// informer holding it is enough; otherwise the API server is asked (the informer may
// not hold this process's own write yet), and a flavor missing there, or without the
// label, is applied. A missing flavor that this process had seen or written was
// deleted by someone else: recreating it is returned as a Correction (Was "").
func (b *Backend) applyFlavor(ctx context.Context, flavor string) ([]agent.Correction, error) {
	if _, err := b.flavors.Get(flavor); err == nil {
		b.flavorOK = true
		return nil, nil
	}
	api := b.kq.KueueV1beta2().ResourceFlavors()
	cur, err := api.Get(ctx, flavor, metav1.GetOptions{})
	missing := apierrors.IsNotFound(err)
	switch {
	case missing:
	case err != nil:
		return nil, fmt.Errorf("ResourceFlavor %s: %w", flavor, err)
	case cur.Labels[ManagedBy] == FieldManager:
		b.flavorOK = true
		return nil, nil
	}
	if _, err := api.Apply(ctx, kueueac.ResourceFlavor(flavor).WithLabels(map[string]string{ManagedBy: FieldManager}), kueueApply); err != nil {
		return nil, fmt.Errorf("ResourceFlavor %s: %w", flavor, err)
	}
	var corrections []agent.Correction
	if missing && b.flavorOK {
		corrections = append(corrections, agent.Correction{Object: "ResourceFlavor", Now: flavor})
	}
	b.flavorOK = true
	return corrections, nil
}

// applyClusterQueue writes the team's ClusterQueue name (see applyKueue) when what it
// should hold changed since this process last wrote it, or the informer holds other
// limits. Limits someone else changed are returned as corrections (see queueDrift),
// and not again while the informer still holds the version they were found in.
func (b *Backend) applyClusterQueue(ctx context.Context, team, name string, nss []string, units map[string]int64, covered []corev1.ResourceName) ([]agent.Correction, error) {
	flavor, cohort, _ := KueueNames(b.m.cluster, team)
	nominal, lending, quotas := b.queueQuotas(units, covered)
	want := queueLimits(nominal, lending, covered)
	note, _ := json.Marshal(want)
	cq := kueueac.ClusterQueue(name).WithLabels(map[string]string{ManagedBy: FieldManager, LabelTeam: labelSafe(team)}).
		WithAnnotations(map[string]string{AnnotationQueue: string(note)}).
		WithSpec(kueueac.ClusterQueueSpec().
			WithCohortName(kueue.CohortReference(cohort)).
			WithNamespaceSelector(metav1ac.LabelSelector().WithMatchExpressions(metav1ac.LabelSelectorRequirement().
				WithKey(corev1.LabelMetadataName).WithOperator(metav1.LabelSelectorOpIn).WithValues(append([]string{}, nss...)...))).
			WithResourceGroups(kueueac.ResourceGroup().WithCoveredResources(covered...).
				WithFlavors(kueueac.FlavorQuotas().WithName(kueue.ResourceFlavorReference(flavor)).WithResources(quotas...))))
	memo := fmt.Sprint(nominal, lending, nss)
	drift, current, seen := b.queueDrift(team, name, want)
	b.mu.Lock()
	same := b.kueueApplied[name] == memo
	_, written := b.kueueApplied[name]
	if seen != "" && b.kueueCorrected[name] == seen {
		drift = nil // already put back and reported; the informer has not seen the write yet
	}
	b.mu.Unlock()
	if same && current {
		return nil, nil
	}
	if seen == "" && written { // written by this process, and not in the informer
		deleted, err := b.clusterQueueDeleted(ctx, name)
		if err != nil {
			return nil, err
		}
		if deleted {
			drift = append(drift, agent.Correction{Team: team, Object: "ClusterQueue " + name, Now: name})
		}
	}
	if _, err := b.kq.KueueV1beta2().ClusterQueues().Apply(ctx, cq, kueueApply); err != nil {
		return nil, fmt.Errorf("ClusterQueue %s: %w", name, err)
	}
	b.mu.Lock()
	if len(drift) > 0 {
		b.kueueCorrected[name] = seen
	}
	b.kueueApplied[name] = memo
	b.mu.Unlock()
	return drift, nil
}

// clusterQueueDeleted reports whether the API server holds no ClusterQueue name (the
// informer may not hold this process's own write yet, so it is asked).
func (b *Backend) clusterQueueDeleted(ctx context.Context, name string) (bool, error) {
	_, err := b.kq.KueueV1beta2().ClusterQueues().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("ClusterQueue %s: %w", name, err)
	}
	return false, nil
}

// queueQuotas are a team's ClusterQueue quotas for its units of each pool, per covered
// resource: the nominal quota (the pools' units times their unit, summed), a
// borrowingLimit of 0 and, when every pool of the resource has sharing settings, the
// lending limit (each pool's units less its exposure share, rounded down, summed).
// lending holds only the resources that have one.
func (b *Backend) queueQuotas(units map[string]int64, covered []corev1.ResourceName) (nominal, lending map[corev1.ResourceName]resource.Quantity, quotas []*kueueac.ResourceQuotaApplyConfiguration) {
	nominal = map[corev1.ResourceName]resource.Quantity{}
	lending = map[corev1.ResourceName]resource.Quantity{}
	unknown := map[corev1.ResourceName]bool{} // a pool of the resource without settings
	b.mu.Lock()
	for _, p := range b.m.pools {
		q := nominal[p.resource]
		q.Add(p.quantity(units[p.name]))
		nominal[p.resource] = q
		st, ok := b.sharing[p.name]
		if !ok {
			unknown[p.resource] = true
			continue
		}
		l := lending[p.resource]
		l.Add(p.quantity(int64(math.Floor(float64(units[p.name]) * (1 - st.Exposure)))))
		lending[p.resource] = l
	}
	b.mu.Unlock()
	zero := resource.MustParse("0")
	for _, r := range covered {
		rq := kueueac.ResourceQuota().WithName(r).WithNominalQuota(nominal[r]).WithBorrowingLimit(zero)
		if !unknown[r] {
			rq = rq.WithLendingLimit(lending[r])
		} else {
			delete(lending, r)
		}
		quotas = append(quotas, rq)
	}
	return nominal, lending, quotas
}

// queueLimits are a ClusterQueue's limits as the backend writes them, keyed
// "<field> <resource>" (nominalQuota, lendingLimit, borrowingLimit).
func queueLimits(nominal, lending map[corev1.ResourceName]resource.Quantity, covered []corev1.ResourceName) map[string]string {
	out := map[string]string{}
	for _, r := range covered {
		q := nominal[r]
		out["nominalQuota "+string(r)] = q.String()
		out["borrowingLimit "+string(r)] = "0"
		if l, ok := lending[r]; ok {
			out["lendingLimit "+string(r)] = l.String()
		}
	}
	return out
}

// queueDrift compares the ClusterQueue the informer holds with want. A limit that
// differs from what the backend last applied (the queue's AnnotationQueue) was changed
// by someone else: it is returned as a Correction to want. current is false when the
// queue is missing or holds other limits than want (it must be written); version is
// the queue's resourceVersion as the informer holds it. An informer that has not seen
// the backend's last apply holds the old limits beside the old annotation, so it never
// reports drift, only current false; one that has not seen the backend's correction
// yet holds the very version already corrected, which the caller does not report twice.
func (b *Backend) queueDrift(team, name string, want map[string]string) (drift []agent.Correction, current bool, version string) {
	if b.clusterQueues == nil {
		return nil, false, ""
	}
	cq, err := b.clusterQueues.Get(name)
	if err != nil {
		return nil, false, ""
	}
	have := map[string]string{}
	for _, rg := range cq.Spec.ResourceGroups {
		for _, f := range rg.Flavors {
			for _, r := range f.Resources {
				have["nominalQuota "+string(r.Name)] = r.NominalQuota.String()
				if r.BorrowingLimit != nil {
					have["borrowingLimit "+string(r.Name)] = r.BorrowingLimit.String()
				}
				if r.LendingLimit != nil {
					have["lendingLimit "+string(r.Name)] = r.LendingLimit.String()
				}
			}
		}
	}
	applied := map[string]string{}
	_ = json.Unmarshal([]byte(cq.Annotations[AnnotationQueue]), &applied)
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		was, ok := have[k]
		if last, known := applied[k]; ok && known && !equalQuantity(was, last) && !equalQuantity(was, want[k]) {
			field, res, _ := strings.Cut(k, " ")
			drift = append(drift, agent.Correction{Team: team, Pool: b.poolOfResource(corev1.ResourceName(res)),
				Object: "ClusterQueue " + name + " " + field, Was: was, Now: want[k]})
		}
	}
	return drift, equalHard(have, want), cq.ResourceVersion
}

// poolOfResource names the configured pools of a resource, joined by "+" (a
// ClusterQueue's limit of a resource covers all of them).
func (b *Backend) poolOfResource(r corev1.ResourceName) string {
	var names []string
	for _, p := range b.m.pools {
		if p.resource == r {
			names = append(names, p.name)
		}
	}
	return strings.Join(names, "+")
}
