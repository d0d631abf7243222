// Package kubernetes is the cluster agent's Kubernetes backend: it enforces each
// team's quota as a ResourceQuota in the team's namespaces (server-side apply, field
// manager "clearhouse"), measures what pods request and what nodes offer, follows the
// pods of reservations, runs best-effort tasks as pods of a low PriorityClass held to
// the market's grant by a second ResourceQuota scoped to that class, and evicts a
// team's newest pods to reclaim work over its limit. It reads the cluster through
// shared informers (namespaces, pods, nodes, its own ResourceQuotas) after one live
// check per poll, and touches only the namespaces its config maps. Quotas, Kueue queues
// and tasks are each a reconciler (reconcile.go) whose workqueue the poll and the
// informers' events feed, so an edit by someone else is put back between polls, with
// an Event on the object.
// docs/kubernetes-backend.md says how each part maps; docs/kubernetes.md what it
// guarantees.
package kubernetes

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/clearhouse/clearhouse/agent"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Names the backend writes and reads in the cluster.
const (
	FieldManager = "clearhouse"
	QuotaName    = "clearhouse"
	// BestEffortQuotaName is the ResourceQuota that holds a team's best-effort pods
	// (those of the best-effort PriorityClass) to what the market granted them.
	BestEffortQuotaName  = "clearhouse-best-effort"
	DefaultPriorityClass = "clearhouse-best-effort"
	ManagedBy            = "app.kubernetes.io/managed-by" // = FieldManager on every object it owns
	LabelTask            = "clearhouse.io/task"
	LabelJob             = "clearhouse.io/job"
	LabelTeam            = "clearhouse.io/team"
	LabelReservation     = "clearhouse.io/reservation"
	LabelRequest         = "clearhouse.io/request"
	// AnnotationHard is the JSON of the hard limits an older agent last applied to a
	// ResourceQuota, from which it told drift. The backend now reads ownership from
	// managedFields; a quota still carrying it is adopted (applied again without it).
	AnnotationHard = "clearhouse.io/hard"
	// AnnotationQueue is what an older agent wrote on a ClusterQueue, as AnnotationHard;
	// a new process's first apply of the queue removes it.
	AnnotationQueue = "clearhouse.io/queue"
	// bestEffortPriority is the value of the PriorityClass the backend creates.
	bestEffortPriority = -100
)

// pool is a Clearhouse pool as the cluster counts it: a resource and how much of it
// one unit of the pool is.
type pool struct {
	name     string
	resource corev1.ResourceName // "cpu", "memory", "nvidia.com/gpu"
	unit     resource.Quantity
}

// quotaKey is the ResourceQuota's hard key of the pool: requests.<resource>.
func (p pool) quotaKey() corev1.ResourceName {
	return corev1.ResourceName("requests." + string(p.resource))
}

// quantity is n units of the pool.
func (p pool) quantity(n int64) resource.Quantity {
	if p.unit.MilliValue()%1000 == 0 {
		return *resource.NewQuantity(p.unit.Value()*n, p.unit.Format)
	}
	return *resource.NewMilliQuantity(p.unit.MilliValue()*n, p.unit.Format)
}

// unitsUp is milli thousandths of the resource in whole units of the pool, rounded up
// (what is in use: half a core in use takes a core); unitsDown rounds down
// (capacity: half a core free is no unit to sell).
func (p pool) unitsUp(milli int64) int64 {
	u := p.unit.MilliValue()
	return (milli + u - 1) / u
}

func (p pool) unitsDown(milli int64) int64 { return milli / p.unit.MilliValue() }

// extended reports whether the resource is an extended one (not cpu, memory,
// ephemeral storage): a pod must give its limit, equal to its request.
func (p pool) extended() bool {
	switch p.resource {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return false
	}
	return true
}

// team is a Clearhouse team's namespaces: a list, or the namespaces a selector picks.
type team struct {
	name       string
	namespaces []string
	selector   labels.Selector
}

// mapping is a config file's teams and pools, checked.
type mapping struct {
	cluster       string
	teams         []team
	pools         []pool // sorted by name
	priorityClass string
	kueue         string // auto, on, off
}

func (m mapping) pool(name string) (pool, bool) {
	i, ok := slices.BinarySearchFunc(m.pools, name, func(p pool, n string) int { return strings.Compare(p.name, n) })
	if !ok {
		return pool{}, false
	}
	return m.pools[i], true
}

func (m mapping) team(name string) (team, bool) {
	for _, t := range m.teams {
		if t.name == name {
			return t, true
		}
	}
	return team{}, false
}

// validate checks the kubernetes backend's part of a config file: each team has
// namespaces (valid names) or a selector (a valid label selector), not both; each
// pool has a resource (a valid resource name) and a unit that is a positive quantity;
// the section's priority_class is a valid name and kueue is auto, on or off.
func validate(c *agent.Config) error {
	_, err := newMapping(c)
	return err
}

func newMapping(c *agent.Config) (mapping, error) {
	var errs []error
	m := mapping{cluster: c.Cluster, priorityClass: DefaultPriorityClass, kueue: "auto"}
	for _, name := range slices.Sorted(maps.Keys(c.Teams)) {
		t, path := c.Teams[name], "teams."+name
		tm := team{name: name, namespaces: t.Namespaces}
		switch {
		case len(t.Namespaces) == 0 && t.Selector == "":
			errs = append(errs, c.Errorf(path, "%s: give namespaces (a list) or selector (a label selector of namespaces)", path))
		case len(t.Namespaces) > 0 && t.Selector != "":
			errs = append(errs, c.Errorf(path+".selector", "%s: give namespaces or selector, not both", path))
		case t.Selector != "":
			s, err := labels.Parse(t.Selector)
			if err != nil || s.Empty() {
				errs = append(errs, c.Errorf(path+".selector", "%s.selector: %q is not a non-empty label selector such as \"clearhouse.io/team=ads\"", path, t.Selector))
			}
			tm.selector = s
		}
		for _, ns := range t.Namespaces {
			if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
				errs = append(errs, c.Errorf(path+".namespaces", "%s.namespaces: %q is not a namespace name (%s)", path, ns, msgs[0]))
			}
		}
		m.teams = append(m.teams, tm)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Pools)) {
		p, path := c.Pools[name], "pools."+name
		pl := pool{name: name, resource: corev1.ResourceName(p.Resource)}
		if p.Resource == "" {
			errs = append(errs, c.Errorf(path, "%s.resource: required for the kubernetes backend (cpu, memory, nvidia.com/gpu, ...)", path))
		} else if msgs := validation.IsQualifiedName(p.Resource); len(msgs) > 0 || strings.HasPrefix(p.Resource, "requests.") || strings.HasPrefix(p.Resource, "limits.") {
			errs = append(errs, c.Errorf(path+".resource", "%s.resource: %q is not a resource name such as cpu, memory or nvidia.com/gpu (the backend adds requests.)", path, p.Resource))
		}
		if p.Unit != "" {
			q, err := resource.ParseQuantity(p.Unit)
			if err != nil || q.Sign() <= 0 || q.MilliValue() < 1 {
				errs = append(errs, c.Errorf(path+".unit", "%s.unit: %q is not a positive quantity such as \"1\", \"500m\" or \"1Gi\"", path, p.Unit))
			}
			pl.unit = q
		}
		m.pools = append(m.pools, pl)
	}
	if k := c.Kubernetes; k != nil {
		if k.PriorityClass != "" {
			if msgs := validation.IsDNS1123Subdomain(k.PriorityClass); len(msgs) > 0 {
				errs = append(errs, c.Errorf("kubernetes.priority_class", "kubernetes.priority_class: %q is not a PriorityClass name (%s)", k.PriorityClass, msgs[0]))
			}
			m.priorityClass = k.PriorityClass
		}
		switch k.Kueue {
		case "":
		case "auto", "on", "off":
			m.kueue = k.Kueue
		default:
			errs = append(errs, c.Errorf("kubernetes.kueue", "kubernetes.kueue: %q is not auto, on or off", k.Kueue))
		}
	}
	if len(errs) > 0 {
		return mapping{}, errors.Join(errs...)
	}
	return m, nil
}
