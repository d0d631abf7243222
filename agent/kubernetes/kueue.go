package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	kueuecs "sigs.k8s.io/kueue/client-go/clientset/versioned"
	kueueinformers "sigs.k8s.io/kueue/client-go/informers/externalversions"
	kueuelisters "sigs.k8s.io/kueue/client-go/listers/kueue/v1beta2"
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

// queueReconciler keeps the Kueue objects as the last poll wants them: the
// cluster's ResourceFlavor, a ClusterQueue per team and a LocalQueue in each team
// namespace. Its keys: "flavor", "team:<team>" (the poll: the team's ClusterQueue and
// LocalQueues), "cq:<name>" and "lq:<namespace>/<name>" (informer events). Its state is
// bounded by the teams and namespaces wanted now.
type queueReconciler struct {
	*reconciler
	b  *Backend
	kq kueuecs.Interface // nil: no Kueue

	served        bool
	flavorOK      bool                            // this process saw or wrote the ResourceFlavor
	clusterQueues kueuelisters.ClusterQueueLister // the ClusterQueues it owns; nil until Kueue is found
	localQueues   kueuelisters.LocalQueueLister   // the LocalQueues it owns; nil until Kueue is found
	flavors       kueuelisters.ResourceFlavorLister
	synced        []cache.InformerSynced

	desired map[string]queueWant         // team -> what the last poll wants
	sharing map[string]agent.PoolSharing // pool -> its idle-sharing settings, from the allocation
	written map[string]string            // ClusterQueue -> what this process last wrote
	fixed   map[string]string            // ClusterQueue -> the resourceVersion whose drift this process put back
	known   map[string]bool              // "ns/name" -> this process saw or wrote the LocalQueue
}

// queueWant is a team's queues as the last poll wants them: its units of each pool,
// and its namespaces.
type queueWant struct {
	units map[string]int64
	nss   []string
}

func newQueueReconciler(b *Backend, kq kueuecs.Interface) *queueReconciler {
	r := &queueReconciler{b: b, kq: kq, desired: map[string]queueWant{}, written: map[string]string{}, fixed: map[string]string{}, known: map[string]bool{}}
	r.reconciler = newReconciler("queues", b.out, r.reconcileQueues)
	return r
}

// on reports whether to write Kueue queues: kueue auto or on, and the API server serves
// Kueue's API (discovery, asked until it answers yes). Under kueue on, an API server
// without it is an error. The first yes starts informers of the ClusterQueues,
// LocalQueues and ResourceFlavors the backend owns (label managed-by), whose events
// queue reconciles, and the reconciler's worker.
func (r *queueReconciler) on(ctx context.Context) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.b
	if r.served {
		return true, nil
	}
	if b.m.kueue == "off" || r.kq == nil {
		return false, nil
	}
	if _, err := b.cs.Discovery().ServerResourcesForGroupVersion(kueueGroupVersion); err != nil {
		if b.m.kueue == "on" {
			return false, fmt.Errorf("kueue: on, but the API server does not serve %s: %w", kueueGroupVersion, err)
		}
		return false, nil
	}
	if r.synced == nil {
		f := kueueinformers.NewSharedInformerFactoryWithOptions(r.kq, 0, kueueinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = ManagedBy + "=" + FieldManager
		}))
		v := f.Kueue().V1beta2()
		r.clusterQueues, r.localQueues, r.flavors = v.ClusterQueues().Lister(), v.LocalQueues().Lister(), v.ResourceFlavors().Lister()
		cqs, lqs, fls := v.ClusterQueues().Informer(), v.LocalQueues().Informer(), v.ResourceFlavors().Informer()
		_, err1 := cqs.AddEventHandler(r.queueOn(func(obj any) string { return "cq:" + objectKey(obj) }, metaChanged))
		_, err2 := lqs.AddEventHandler(r.queueOn(func(obj any) string { return "lq:" + objectKey(obj) }, metaChanged))
		_, err3 := fls.AddEventHandler(r.queueOn(func(any) string { return "flavor" }, metaChanged))
		if err := errors.Join(err1, err2, err3); err != nil {
			return false, fmt.Errorf("kueue: %w", err)
		}
		r.synced = []cache.InformerSynced{cqs.HasSynced, lqs.HasSynced, fls.HasSynced}
		f.Start(b.stop)
	}
	if !cache.WaitForCacheSync(ctx.Done(), r.synced...) {
		return false, fmt.Errorf("kueue: the first list of the ClusterQueues, LocalQueues and ResourceFlavors did not complete (does the agent's role let it list and watch them? see deploy/kubernetes/rbac-kueue.yaml): %w", ctx.Err())
	}
	r.served = true
	work, cancel := context.WithCancel(context.Background())
	go func() { <-b.stop; cancel() }()
	go r.run(work)
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
// See docs/kubernetes-backend.md. It sets what the queue reconciler wants and
// reconciles every team's queues at once; between polls the informers' events put
// back what someone else changed. It returns the corrections made since the last call.
func (b *Backend) applyKueue(ctx context.Context, byTeam map[string]map[string]int64) ([]agent.Correction, error) {
	r := b.queues
	if on, err := r.on(ctx); !on {
		return nil, err
	}
	desired := map[string]queueWant{}
	keys := []string{"flavor"}
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
		desired[t.name] = queueWant{units: units, nss: nss}
		keys = append(keys, "team:"+t.name)
	}
	r.want(desired)
	if err := r.reconcileNow(ctx, keys[:1]); len(err) > 0 {
		return r.drain(), errors.Join(err...)
	}
	errs = append(errs, r.reconcileNow(ctx, keys[1:])...)
	return r.drain(), errors.Join(errs...)
}

// want replaces the desired queues, forgetting what it kept of teams and namespaces no
// longer wanted.
func (r *queueReconciler) want(desired map[string]queueWant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.desired = desired
	queues, lqs := map[string]bool{}, map[string]bool{}
	for team, w := range desired {
		_, _, cq := KueueNames(r.b.m.cluster, team)
		queues[cq] = true
		for _, ns := range w.nss {
			lqs[ns+"/"+LocalQueueName] = true
		}
	}
	forget(r.written, queues)
	forget(r.fixed, queues)
	forget(r.known, lqs)
}

// reconcileQueues reconciles one key (see queueReconciler).
func (r *queueReconciler) reconcileQueues(ctx context.Context, key string) (bool, error) {
	if !r.served {
		return false, nil
	}
	b := r.b
	flavor, _, _ := KueueNames(b.m.cluster, "")
	kind, name, _ := strings.Cut(key, ":")
	if kind == "flavor" {
		return r.applyFlavor(ctx, flavor)
	}
	for _, team := range slices.Sorted(maps.Keys(r.desired)) {
		w := r.desired[team]
		_, _, cq := KueueNames(b.m.cluster, team)
		switch kind {
		case "team":
			if team != name {
				continue
			}
			changed, err := r.applyClusterQueue(ctx, team, cq, w.nss, w.units)
			if err != nil {
				return changed, err
			}
			more, err := r.applyLocalQueues(ctx, team, cq, w.nss)
			return changed || more, err
		case "cq":
			if cq == name {
				return r.applyClusterQueue(ctx, team, cq, w.nss, w.units)
			}
		case "lq":
			ns, _, _ := strings.Cut(name, "/")
			if slices.Contains(w.nss, ns) {
				changed, err := r.applyLocalQueue(ctx, team, ns, cq)
				if err != nil {
					err = fmt.Errorf("LocalQueue %s/%s: %w", ns, LocalQueueName, err)
				}
				return changed, err
			}
		}
	}
	return false, nil
}

// covered are the resources of the config's pools, each once, in pool order.
func (b *Backend) covered() []corev1.ResourceName {
	var covered []corev1.ResourceName
	for _, p := range b.m.pools {
		if !slices.Contains(covered, p.resource) {
			covered = append(covered, p.resource)
		}
	}
	return covered
}

// applyFlavor makes the cluster's ResourceFlavor exist, labelled as the backend's. The
// informer holding it is enough; otherwise the API server is asked (the informer may
// not hold this process's own write yet), and a flavor missing there, or without the
// label, is applied. A missing flavor that this process had seen or written was
// deleted by someone else: recreating it is kept as a Correction (Was "") and recorded
// as an Event (FlavorRestored) on the new flavor.
func (r *queueReconciler) applyFlavor(ctx context.Context, flavor string) (bool, error) {
	if _, err := r.flavors.Get(flavor); err == nil {
		r.flavorOK = true
		return false, nil
	}
	api := r.kq.KueueV1beta2().ResourceFlavors()
	cur, err := api.Get(ctx, flavor, metav1.GetOptions{})
	missing := apierrors.IsNotFound(err)
	switch {
	case missing:
	case err != nil:
		return false, fmt.Errorf("ResourceFlavor %s: %w", flavor, err)
	case cur.Labels[ManagedBy] == FieldManager:
		r.flavorOK = true
		return false, nil
	}
	got, err := api.Apply(ctx, kueueac.ResourceFlavor(flavor).WithLabels(map[string]string{ManagedBy: FieldManager}), kueueApply)
	if err != nil {
		return false, fmt.Errorf("ResourceFlavor %s: %w", flavor, err)
	}
	if missing && r.flavorOK {
		r.corrected(agent.Correction{Object: "ResourceFlavor", Now: flavor})
		r.b.recorder.Eventf(ref(kueueGroupVersion, "ResourceFlavor", "", flavor, got.UID, got.ResourceVersion), corev1.EventTypeWarning,
			ReasonFlavorRestored, "Clearhouse recreated ResourceFlavor %s, which someone deleted: its ClusterQueues name it", flavor)
	}
	r.flavorOK = true
	return true, nil
}

// applyClusterQueue writes the team's ClusterQueue name (see applyKueue) when what it
// should hold changed since this process last wrote it, or the informer holds other
// limits. Limits someone else changed are kept as corrections (see queueDrift), and
// not again while the informer still holds the version they were found in; an Event
// (QueueRestored) on the queue says what was put back.
func (r *queueReconciler) applyClusterQueue(ctx context.Context, team, name string, nss []string, units map[string]int64) (bool, error) {
	b := r.b
	covered := b.covered()
	flavor, cohort, _ := KueueNames(b.m.cluster, team)
	nominal, lending, quotas := r.queueQuotas(units, covered)
	want := queueLimits(nominal, lending, covered)
	cq := kueueac.ClusterQueue(name).WithLabels(map[string]string{ManagedBy: FieldManager, LabelTeam: labelSafe(team)}).
		WithSpec(kueueac.ClusterQueueSpec().
			WithCohortName(kueue.CohortReference(cohort)).
			WithNamespaceSelector(metav1ac.LabelSelector().WithMatchExpressions(metav1ac.LabelSelectorRequirement().
				WithKey(corev1.LabelMetadataName).WithOperator(metav1.LabelSelectorOpIn).WithValues(append([]string{}, nss...)...))).
			WithResourceGroups(kueueac.ResourceGroup().WithCoveredResources(covered...).
				WithFlavors(kueueac.FlavorQuotas().WithName(kueue.ResourceFlavorReference(flavor)).WithResources(quotas...))))
	memo := fmt.Sprint(nominal, lending, nss)
	drift, current, seen, by := r.queueDrift(team, name, want)
	same := r.written[name] == memo
	_, written := r.written[name]
	if seen != "" && r.fixed[name] == seen {
		drift = nil // already put back and reported; the informer has not seen the write yet
	}
	if same && current {
		return false, nil
	}
	if seen == "" && written { // written by this process, and not in the informer
		deleted, err := r.clusterQueueDeleted(ctx, name)
		if err != nil {
			return false, err
		}
		if deleted {
			drift = append(drift, agent.Correction{Team: team, Object: "ClusterQueue " + name, Now: name})
			by = "deleted"
		}
	}
	got, err := r.kq.KueueV1beta2().ClusterQueues().Apply(ctx, cq, kueueApply)
	if err != nil {
		return false, fmt.Errorf("ClusterQueue %s: %w", name, err)
	}
	if len(drift) > 0 {
		r.fixed[name] = seen
		var changes []string
		for _, c := range drift {
			r.corrected(c)
			if c.Was != "" || c.Object != "ClusterQueue "+name {
				changes = append(changes, fmt.Sprintf("%s %s -> %s", strings.TrimPrefix(c.Object, "ClusterQueue "+name+" "), orNone(c.Was), c.Now))
			}
		}
		what := "the queue was deleted; recreated"
		if by != "deleted" {
			what = strings.Join(changes, "; ") + " (set by " + by + ")"
		}
		b.recorder.Eventf(ref(kueueGroupVersion, "ClusterQueue", "", name, got.UID, got.ResourceVersion), corev1.EventTypeWarning,
			ReasonQueueRestored, "Clearhouse put back team %s's queue limits, which the market allocated: %s", team, what)
	}
	r.written[name] = memo
	return true, nil
}

// clusterQueueDeleted reports whether the API server holds no ClusterQueue name (the
// informer may not hold this process's own write yet, so it is asked).
func (r *queueReconciler) clusterQueueDeleted(ctx context.Context, name string) (bool, error) {
	_, err := r.kq.KueueV1beta2().ClusterQueues().Get(ctx, name, metav1.GetOptions{})
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
func (r *queueReconciler) queueQuotas(units map[string]int64, covered []corev1.ResourceName) (nominal, lending map[corev1.ResourceName]resource.Quantity, quotas []*kueueac.ResourceQuotaApplyConfiguration) {
	nominal = map[corev1.ResourceName]resource.Quantity{}
	lending = map[corev1.ResourceName]resource.Quantity{}
	unknown := map[corev1.ResourceName]bool{} // a pool of the resource without settings
	for _, p := range r.b.m.pools {
		q := nominal[p.resource]
		q.Add(p.quantity(units[p.name]))
		nominal[p.resource] = q
		st, ok := r.sharing[p.name]
		if !ok {
			unknown[p.resource] = true
			continue
		}
		l := lending[p.resource]
		l.Add(p.quantity(int64(math.Floor(float64(units[p.name]) * (1 - st.Exposure)))))
		lending[p.resource] = l
	}
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
// differs from want while the backend's apply no longer owns the queue's
// resourceGroups (an atomic list in managedFields: whoever changes one limit takes all
// of them) was changed by someone else: it is returned as a Correction to want, and by
// names who holds it now. current is false when the queue is missing or holds other
// limits than want (it must be written); version is the queue's resourceVersion as the
// informer holds it. An informer that has not seen the backend's last apply holds the
// old limits, still the backend's, so it never reports drift, only current false; one
// that has not seen the backend's correction yet holds the very version already
// corrected, which the caller does not report twice.
func (r *queueReconciler) queueDrift(team, name string, want map[string]string) (drift []agent.Correction, current bool, version, by string) {
	if r.clusterQueues == nil {
		return nil, false, "", ""
	}
	cq, err := r.clusterQueues.Get(name)
	if err != nil {
		return nil, false, "", ""
	}
	have := map[string]string{}
	for _, rg := range cq.Spec.ResourceGroups {
		for _, f := range rg.Flavors {
			for _, rq := range f.Resources {
				have["nominalQuota "+string(rq.Name)] = rq.NominalQuota.String()
				if rq.BorrowingLimit != nil {
					have["borrowingLimit "+string(rq.Name)] = rq.BorrowingLimit.String()
				}
				if rq.LendingLimit != nil {
					have["lendingLimit "+string(rq.Name)] = rq.LendingLimit.String()
				}
			}
		}
	}
	path := []string{"f:spec", "f:resourceGroups"}
	if ownsField(cq, FieldManager, path...) {
		return nil, equalHard(have, want), cq.ResourceVersion, ""
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if was, ok := have[k]; ok && !equalQuantity(was, want[k]) {
			field, res, _ := strings.Cut(k, " ")
			drift = append(drift, agent.Correction{Team: team, Pool: r.b.poolOfResource(corev1.ResourceName(res)),
				Object: "ClusterQueue " + name + " " + field, Was: was, Now: want[k]})
		}
	}
	return drift, equalHard(have, want), cq.ResourceVersion, otherOwners(cq, FieldManager, path...)
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
