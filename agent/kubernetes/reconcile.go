package kubernetes

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/clearhouse/clearhouse/agent"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// A reconciler owns one concern of the backend (quotas, Kueue queues, tasks). Its keys
// come from two sources: the agent's poll of the Clearhouse server, which sets the
// desired state and reconciles every key at once (reconcileNow), and the informers of
// the objects it owns, whose events queue the object's key so an edit by someone else
// is corrected within moments, not at the next poll. A reconcile is level-triggered: it
// reads the desired state and the cluster's, and applies the difference; running it
// twice changes nothing. Reconciles of one reconciler run one at a time (mu), whether
// the poll or the worker calls them.
type reconciler struct {
	name string
	out  io.Writer
	// queue is client-go's rate-limited workqueue with the controllers' default limits:
	// a key that keeps changing waits from 5 ms doubling up to 1,000 s, and all keys
	// together go at 10 per second (burst 100).
	queue workqueue.TypedRateLimitingInterface[string]
	// reconcile brings one key to its desired state. changed is true when it wrote
	// something: the key is then not forgotten by the rate limiter, so a fight with
	// another writer backs off exponentially rather than spinning.
	reconcile func(ctx context.Context, key string) (changed bool, err error)

	mu      sync.Mutex // held by each reconcile
	pending map[agent.Correction]struct{}
}

func newReconciler(name string, out io.Writer, reconcile func(context.Context, string) (bool, error)) *reconciler {
	return &reconciler{name: name, out: out, reconcile: reconcile, pending: map[agent.Correction]struct{}{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "clearhouse-" + name})}
}

// enqueue queues key for the worker, through the rate limiter.
func (r *reconciler) enqueue(key string) { r.queue.AddRateLimited(key) }

// run is the worker: it reconciles queued keys until the queue shuts down. A failed
// reconcile is retried with backoff and logged; the next poll tries it too.
func (r *reconciler) run(ctx context.Context) {
	for {
		key, quit := r.queue.Get()
		if quit {
			return
		}
		r.mu.Lock()
		changed, err := r.reconcile(ctx, key)
		r.mu.Unlock()
		switch {
		case err != nil:
			fmt.Fprintf(r.out, "kubernetes: %s reconciler: %s: %v (retried)\n", r.name, key, err)
			r.queue.AddRateLimited(key)
		case !changed:
			r.queue.Forget(key)
		}
		r.queue.Done(key)
	}
}

// reconcileNow reconciles keys at once (the poll), returning their errors in order.
func (r *reconciler) reconcileNow(ctx context.Context, keys []string) []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, k := range keys {
		if _, err := r.reconcile(ctx, k); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// corrected keeps a correction for the next poll's report; the caller holds mu. The
// same correction made twice between polls (a fight with another writer) is kept once.
func (r *reconciler) corrected(c agent.Correction) { r.pending[c] = struct{}{} }

// drain returns and forgets the corrections made since the last call, sorted.
func (r *reconciler) drain() []agent.Correction {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]agent.Correction, 0, len(r.pending))
	for c := range r.pending {
		out = append(out, c)
	}
	clear(r.pending)
	sortCorrections(out)
	return out
}

// queueOn returns informer handlers that queue the key of each object that shows,
// goes, or changes as changed says (keyOf "" skips it). changed keeps out the updates
// the reconciler has nothing to do about (a quota's status, which the quota controller
// rewrites as pods come and go), so they do not use up the queue's rate.
func (r *reconciler) queueOn(keyOf func(obj any) string, changed func(old, obj any) bool) cache.ResourceEventHandlerFuncs {
	add := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if k := keyOf(obj); k != "" {
			r.enqueue(k)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, DeleteFunc: add, UpdateFunc: func(old, obj any) {
		if changed(old, obj) {
			add(obj)
		}
	}}
}

// metaChanged reports whether an update changed what the backend writes of an object:
// its generation (the spec, for objects with a status subresource that count it), its
// labels or annotations, or its deletion.
func metaChanged(old, obj any) bool {
	a, err1 := meta.Accessor(old)
	b, err2 := meta.Accessor(obj)
	if err1 != nil || err2 != nil {
		return true
	}
	return a.GetGeneration() != b.GetGeneration() || !maps.Equal(a.GetLabels(), b.GetLabels()) ||
		!maps.Equal(a.GetAnnotations(), b.GetAnnotations()) || (a.GetDeletionTimestamp() == nil) != (b.GetDeletionTimestamp() == nil)
}

// quotaChanged is metaChanged, or a change of a ResourceQuota's spec (the API server
// counts no generation for it).
func quotaChanged(old, obj any) bool {
	a, ok1 := old.(*corev1.ResourceQuota)
	b, ok2 := obj.(*corev1.ResourceQuota)
	return !ok1 || !ok2 || metaChanged(old, obj) || !equality.Semantic.DeepEqual(a.Spec, b.Spec)
}

func never(_, _ any) bool { return false }

// EventSource is the component named on the Events the agent records.
const EventSource = "clearhouse-agent"

// Reasons of the Events the agent records on the objects it corrects.
const (
	ReasonQuotaRestored      = "QuotaRestored"
	ReasonQuotaAdopted       = "QuotaAdopted"
	ReasonQueueRestored      = "QueueRestored"
	ReasonLocalQueueRestored = "LocalQueueRestored"
	ReasonFlavorRestored     = "FlavorRestored"
	ReasonTaskPodRemoved     = "TaskPodRemoved"
)

// newRecorder records core/v1 Events through the API server, as component
// clearhouse-agent. Events on cluster-scoped objects (ClusterQueues, the
// ResourceFlavor) land in the default namespace, as Kubernetes puts them.
func newRecorder(cs kubernetes.Interface) (record.EventBroadcaster, record.EventRecorder) {
	bc := record.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	return bc, bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventSource})
}

// ref is the reference an Event names: the object by kind, API version, name and uid
// (uid may be empty for an object just recreated).
func ref(apiVersion, kind, ns, name string, uid types.UID, rv string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name, UID: uid, ResourceVersion: rv}
}

// ownsField reports whether manager's server-side apply owns the field at path (as
// managedFields' fieldsV1 spells it: "f:spec", "f:hard", "f:requests.cpu"), or an
// atomic ancestor of it. This is how the backend tells its own values from someone
// else's, without an annotation of what it last applied: a value it wants that differs
// from the cluster's and that it still owns is one it wrote before want changed; one it
// no longer owns was taken by another writer (an update, or a forced apply, moves the
// field to them).
func ownsField(meta metav1.Object, manager string, path ...string) bool {
	return slices.Contains(fieldOwners(meta, path...), manager+" "+string(metav1.ManagedFieldsOperationApply))
}

// fieldOwners names the managers ("kubectl-edit Update") whose managedFields entry
// holds the field at path or an atomic ancestor of it.
func fieldOwners(meta metav1.Object, path ...string) []string {
	var out []string
	for _, e := range meta.GetManagedFields() {
		if e.FieldsV1 == nil {
			continue
		}
		var node map[string]any
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &node) != nil {
			continue
		}
		for i, p := range path {
			child, ok := node[p].(map[string]any)
			if !ok {
				break
			}
			if len(child) == 0 || i == len(path)-1 { // a leaf, or an atomic field owned whole
				out = append(out, e.Manager+" "+string(e.Operation))
				break
			}
			node = child
		}
	}
	return out
}

// otherOwners is fieldOwners without manager's own apply, for an Event's message.
func otherOwners(meta metav1.Object, manager string, path ...string) string {
	var out []string
	for _, o := range fieldOwners(meta, path...) {
		if o != manager+" "+string(metav1.ManagedFieldsOperationApply) {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return "an unknown writer"
	}
	return strings.Join(out, ", ")
}

func sortCorrections(cs []agent.Correction) {
	slices.SortFunc(cs, func(a, b agent.Correction) int {
		return cmp.Or(strings.Compare(a.Object, b.Object), strings.Compare(a.Pool, b.Pool), strings.Compare(a.Team, b.Team),
			strings.Compare(a.Was, b.Was), strings.Compare(a.Now, b.Now))
	})
}
