package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	kueuecs "sigs.k8s.io/kueue/client-go/clientset/versioned"
)

func init() {
	agent.Register(agent.Kind{Name: "kubernetes", Open: open, Validate: validate, NeedsConfig: true})
}

// Backend is a Kubernetes cluster as the agent's loop drives it. The loop calls one
// method at a time; the informers and the reconcilers' workers run in their own
// goroutines. Each concern the backend enforces is its own reconciler, with its own
// bounded state: quotas (ResourceQuotas), queues (Kueue) and tasks (best-effort pods).
type Backend struct {
	cs       kubernetes.Interface
	m        mapping
	out      io.Writer
	now      func() time.Time
	stop     chan struct{}
	cancel   context.CancelFunc // ends the reconcilers' workers
	events   record.EventBroadcaster
	recorder record.EventRecorder

	namespaces listerscorev1.NamespaceLister
	pods       listerscorev1.PodLister
	nodes      listerscorev1.NodeLister
	quotas     listerscorev1.ResourceQuotaLister
	informed   []cache.InformerSynced

	quota  *quotaReconciler
	queues *queueReconciler
	tasks  *taskReconciler

	mu      sync.Mutex
	jobs    map[agent.JobKey]jobSeen // reservations' jobs the plan lists now, pruned each poll
	evicted map[types.UID]string     // pods this process evicted to reclaim -> their team
	closed  bool
}

// jobSeen is what this process saw of a reservation's job: whether it reported its
// start and its end.
type jobSeen struct{ started, ended bool }

func open(ctx context.Context, s agent.Setup) (agent.Backend, error) {
	kubeconfig := ""
	if s.Config.Kubernetes != nil {
		kubeconfig = s.Config.Kubernetes.Kubeconfig
	}
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	// An API server that does not answer at start fails this attempt after a minute,
	// not a silent wait; the agent reports it and tries again (agent.Opener).
	ctx, cancel := context.WithTimeout(ctx, OpenTimeout)
	defer cancel()
	return New(ctx, cfg, s.Config, s.Out)
}

// OpenTimeout bounds the wait for the informers' first lists when the agent starts.
const OpenTimeout = time.Minute

// restConfig reads a kubeconfig file, or the in-cluster config when path is empty.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes: no kubeconfig in the config file and not in a cluster: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// New opens the backend on a cluster: it checks the config's kubernetes part, starts
// the informers and waits (until ctx ends) for their first lists. An API server that
// cannot be reached makes it return ctx's error with the last one.
func New(ctx context.Context, cfg *rest.Config, c *agent.Config, out io.Writer) (*Backend, error) {
	m, err := newMapping(c)
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "clearhouse-agent"
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	kq, err := kueuecs.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	return newBackend(ctx, cs, kq, m, out)
}

func newBackend(ctx context.Context, cs kubernetes.Interface, kq kueuecs.Interface, m mapping, out io.Writer) (*Backend, error) {
	if out == nil {
		out = io.Discard
	}
	b := &Backend{cs: cs, m: m, out: out, now: time.Now, stop: make(chan struct{}),
		jobs: map[agent.JobKey]jobSeen{}, evicted: map[types.UID]string{}}
	b.events, b.recorder = newRecorder(cs)
	b.quota, b.queues, b.tasks = newQuotaReconciler(b), newQueueReconciler(b, kq), newTaskReconciler(b)
	all := informers.NewSharedInformerFactory(cs, 0)
	own := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1ListOptions) {
		o.LabelSelector = labels.SelectorFromSet(labels.Set{ManagedBy: FieldManager}).String()
	}))
	b.namespaces = all.Core().V1().Namespaces().Lister()
	b.pods = all.Core().V1().Pods().Lister()
	b.nodes = all.Core().V1().Nodes().Lister()
	b.quotas = own.Core().V1().ResourceQuotas().Lister()
	// An edit of a quota the backend owns, or a task pod showing or going, queues a
	// reconcile (a pod's updates do not: the tasks reconciler acts on neither).
	quotas, pods := own.Core().V1().ResourceQuotas().Informer(), all.Core().V1().Pods().Informer()
	_, err1 := quotas.AddEventHandler(b.quota.queueOn(objectKey, quotaChanged))
	_, err2 := pods.AddEventHandler(b.tasks.queueOn(taskKey, never))
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	b.informed = []cache.InformerSynced{all.Core().V1().Namespaces().Informer().HasSynced, pods.HasSynced,
		all.Core().V1().Nodes().Informer().HasSynced, quotas.HasSynced}
	all.Start(b.stop)
	own.Start(b.stop)
	if !cache.WaitForCacheSync(ctx.Done(), b.informed...) {
		b.shutdown()
		return nil, fmt.Errorf("kubernetes: the informers' first lists did not complete: %w", ctx.Err())
	}
	work, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go b.quota.run(work)
	go b.tasks.run(work)
	return b, nil
}

// objectKey is "namespace/name" of an object, or its name when cluster-scoped.
func objectKey(obj any) string {
	k, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return ""
	}
	return k
}

// Name is "kubernetes".
func (b *Backend) Name() string { return "kubernetes" }

// Close stops the reconcilers' workers, the informers and the Event recorder.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		b.shutdown()
	}
	return nil
}

func (b *Backend) shutdown() {
	if b.cancel != nil {
		b.cancel()
	}
	b.quota.queue.ShutDown()
	b.queues.queue.ShutDown()
	b.tasks.queue.ShutDown()
	close(b.stop)
	b.events.Shutdown()
}

// namespacesOf returns the team's namespaces that exist, in the config's order (a
// selector's sorted by name). The first is where its best-effort pods run.
func (b *Backend) namespacesOf(t team) ([]string, error) {
	if t.selector != nil {
		nss, err := b.namespaces.List(t.selector)
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, len(nss))
		for _, ns := range nss {
			if ns.DeletionTimestamp == nil {
				out = append(out, ns.Name)
			}
		}
		slices.Sort(out)
		return out, nil
	}
	out := make([]string, 0, len(t.namespaces))
	for _, name := range t.namespaces {
		if ns, err := b.namespaces.Get(name); err == nil && ns.DeletionTimestamp == nil {
			out = append(out, name)
		}
	}
	return out, nil
}

// teamOfNamespace maps each namespace of a configured team to the team.
func (b *Backend) teamOfNamespace() (map[string]string, error) {
	out := map[string]string{}
	for _, t := range b.m.teams {
		nss, err := b.namespacesOf(t)
		if err != nil {
			return nil, err
		}
		for _, ns := range nss {
			out[ns] = t.name
		}
	}
	return out, nil
}

// allPods lists every pod the informer holds.
func (b *Backend) allPods() ([]*corev1.Pod, error) { return b.pods.List(labels.Everything()) }

// VerifyTimeout bounds the live call with which each poll checks that the API server
// answers (verify).
const VerifyTimeout = 10 * time.Second

// verify checks that the informers have listed and that the API server answers now,
// with one cheap live call (a list of at most one namespace): the informers' stores
// keep their last state while the API server is down, so a poll that read them without
// this check would report stale usage as current. The error says the cluster could not
// be read.
func (b *Backend) verify(ctx context.Context) error {
	for _, synced := range b.informed {
		if !synced() {
			return fmt.Errorf("kubernetes: the informers have not listed the cluster: nothing measured")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, VerifyTimeout)
	defer cancel()
	if _, err := b.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("kubernetes: the API server does not answer, nothing measured (the informers' state may be stale): %w", err)
	}
	return nil
}

// Now is the backend's clock (the wall clock; tests read it).
func (b *Backend) Now() time.Time { return b.now() }

func everything() labels.Selector { return labels.Everything() }

// SetPoolSharing keeps the pools' idle-sharing settings for the Kueue queues' limits.
func (b *Backend) SetPoolSharing(ps []agent.PoolSharing) {
	m := make(map[string]agent.PoolSharing, len(ps))
	for _, p := range ps {
		m[p.Pool] = p
	}
	b.queues.mu.Lock()
	b.queues.sharing = m
	b.queues.mu.Unlock()
}
