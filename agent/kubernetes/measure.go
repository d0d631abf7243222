package kubernetes

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Measure reads the informers' pods and nodes: a pool's used units are the requests
// of every pod bound to a node and not ended (rounded up to whole units); its
// capacity is the sum of the allocatable resource of the nodes that take pods
// (rounded down); a team's own usage of a pool is the requests of its namespaces'
// Running pods that are not best-effort (their PriorityClass is the backend's, or they
// carry a task label). Every pool of the config is listed, and every team of the
// config with every pool, 0 where it runs nothing (so a team's last pod ending takes
// its recorded usage to 0). Pods this process evicted (Reclaim) are left out at once,
// even while the informer still shows them live, so the report after an eviction
// shows the excess freed. The informers' stores are read only after a live call has
// shown the API server answering (verify): when it does not, Measure returns the
// error and no measurement, rather than the stores' last, stale state.
func (b *Backend) Measure(ctx context.Context, now time.Time) (agent.Measurement, error) {
	if err := b.verify(ctx); err != nil {
		return agent.Measurement{}, err
	}
	owners, err := b.teamOfNamespace()
	if err != nil {
		return agent.Measurement{}, err
	}
	pods, err := b.allPods()
	if err != nil {
		return agent.Measurement{}, err
	}
	used := make([]int64, len(b.m.pools)) // milli of each pool's resource
	own := map[string][]int64{}           // team -> milli per pool
	for _, t := range b.m.teams {
		own[t.name] = make([]int64, len(b.m.pools))
	}
	b.mu.Lock()
	evicted := maps.Clone(b.evicted)
	b.mu.Unlock()
	for _, pod := range pods {
		if _, out := evicted[pod.UID]; pod.Spec.NodeName == "" || ended(pod) || out {
			continue // an evicted pod may still look live in the informer: it is on its way out
		}
		req := podRequests(pod)
		team, ok := owners[pod.Namespace]
		mine := ok && pod.Status.Phase == corev1.PodRunning && !b.bestEffort(pod)
		for i, p := range b.m.pools {
			q, ok := req[p.resource]
			if !ok {
				continue
			}
			used[i] += q
			if mine {
				own[team][i] += q
			}
		}
	}
	capacity := make([]int64, len(b.m.pools))
	nodes, err := b.nodes.List(labels.Everything())
	if err != nil {
		return agent.Measurement{}, err
	}
	for _, n := range nodes {
		if n.Spec.Unschedulable {
			continue
		}
		for i, p := range b.m.pools {
			if q, ok := n.Status.Allocatable[p.resource]; ok {
				capacity[i] += q.MilliValue()
			}
		}
	}
	var m agent.Measurement
	for i, p := range b.m.pools {
		m.Pools = append(m.Pools, agent.PoolMeasure{Pool: p.name, Used: p.unitsUp(used[i]), Capacity: p.unitsDown(capacity[i])})
	}
	for _, team := range slices.Sorted(maps.Keys(own)) {
		for i, p := range b.m.pools {
			m.Owners = append(m.Owners, agent.OwnerUsage{Team: team, Pool: p.name, Units: p.unitsUp(own[team][i])})
		}
	}
	return m, nil
}

// bestEffort reports whether a pod is best-effort: a task's, or of the best-effort
// PriorityClass (held by the best-effort quota, outside the team's own).
func (b *Backend) bestEffort(pod *corev1.Pod) bool {
	_, task := pod.Labels[LabelTask]
	return task || pod.Spec.PriorityClassName == b.m.priorityClass
}

func ended(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.DeletionTimestamp != nil
}

// podRequests is what a pod requests of each resource, in thousandths, as the
// scheduler counts it: the sum of its containers' requests, at least each init
// container's (sidecars, restartPolicy Always, add to both), plus its overhead.
func podRequests(pod *corev1.Pod) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	sidecars := map[corev1.ResourceName]int64{}
	for _, c := range pod.Spec.Containers {
		for r, q := range c.Resources.Requests {
			out[r] += q.MilliValue()
		}
	}
	for _, c := range pod.Spec.InitContainers {
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		for r, q := range c.Resources.Requests {
			if sidecar {
				out[r] += q.MilliValue()
				sidecars[r] += q.MilliValue()
				continue
			}
			if v := q.MilliValue() + sidecars[r]; v > out[r] {
				out[r] = v
			}
		}
	}
	for r, q := range pod.Spec.Overhead {
		out[r] += q.MilliValue()
	}
	return out
}
