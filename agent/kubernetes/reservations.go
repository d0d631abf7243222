package kubernetes

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// FollowReservations reports what the pods of reservations did. A pod belongs to a
// reservation's job by its labels clearhouse.io/reservation=<id> and
// clearhouse.io/request=<n> (a job of request 0 when the second is missing), in a
// namespace of the job's team; pods outside the namespaces the config maps are never
// read nor deleted. The
// quota does the rest: while a reservation runs, the loop adds it to its team's quota.
// A waiting job (planned later) with a Running pod started early: reported as a start
// at its first pod's start. A running job whose pods have all ended (and at least one
// did) ended: reported at its last pod's end, failed when one failed. Usage is the
// requests of each running job's Running pods per pool; waiting its Pending pods. A
// job in plan.Refused has its pods deleted. Starts and ends are reported once per
// process while the plan lists the job; after a restart again, and the server ignores
// what it has. Like Measure,
// it reports nothing when the API server does not answer (verify).
func (b *Backend) FollowReservations(ctx context.Context, plan agent.Plan) (agent.JobReport, error) {
	if err := b.verify(ctx); err != nil {
		return agent.JobReport{}, err
	}
	has, _ := labels.NewRequirement(LabelReservation, selection.Exists, nil)
	pods, err := b.pods.List(labels.NewSelector().Add(*has))
	if err != nil {
		return agent.JobReport{}, err
	}
	mapped, err := b.teamOfNamespace()
	if err != nil {
		return agent.JobReport{}, err
	}
	byJob := map[agent.JobKey][]*corev1.Pod{}
	for _, pod := range pods {
		if _, ok := mapped[pod.Namespace]; !ok {
			continue // outside the mapping: never read nor deleted
		}
		res, err := strconv.ParseInt(pod.Labels[LabelReservation], 10, 64)
		if err != nil {
			continue
		}
		req := 0
		if v, ok := pod.Labels[LabelRequest]; ok {
			if req, err = strconv.Atoi(v); err != nil {
				continue
			}
		}
		k := agent.JobKey{Reservation: res, Request: req}
		byJob[k] = append(byJob[k], pod)
	}
	// A job's pods are its team's: pods labelled with its key in another team's
	// namespaces neither start nor end it.
	for _, j := range slices.Concat(plan.Running, plan.Waiting) {
		if ps := byJob[j.Key()]; len(ps) > 0 && j.Team != "" {
			byJob[j.Key()] = slices.DeleteFunc(ps, func(p *corev1.Pod) bool { return mapped[p.Namespace] != j.Team })
		}
	}
	var out agent.JobReport
	now := plan.Now
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, j := range plan.Waiting {
		ps := byJob[j.Key()]
		first := time.Time{}
		for _, p := range ps {
			if p.Status.Phase == corev1.PodRunning || ended(p) && p.Status.StartTime != nil {
				if at := startedAt(p, now); first.IsZero() || at.Before(first) {
					first = at
				}
			}
		}
		if seen := b.jobs[j.Key()]; !first.IsZero() && !seen.started {
			seen.started = true
			b.jobs[j.Key()] = seen
			out.Starts = append(out.Starts, agent.JobStart{Reservation: j.Reservation, Request: j.Request, At: first.UTC()})
		}
	}
	for _, j := range plan.Running {
		ps := byJob[j.Key()]
		if len(ps) == 0 {
			continue
		}
		usage := map[string]int64{}
		live, failed, last := 0, false, time.Time{}
		var pending int64
		for _, p := range ps {
			switch {
			case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
				failed = failed || p.Status.Phase == corev1.PodFailed
				if at := finishedAt(p, now); at.After(last) {
					last = at
				}
			case p.Status.Phase == corev1.PodRunning:
				live++
				for r, q := range podRequests(p) {
					for _, pl := range b.m.pools {
						if pl.resource == r {
							usage[pl.name] += q
						}
					}
				}
			default:
				live++
				pending++
			}
		}
		for _, name := range slices.Sorted(maps.Keys(usage)) {
			pl, _ := b.m.pool(name)
			out.Usage = append(out.Usage, agent.JobUsage{Reservation: j.Reservation, Request: j.Request, Pool: name, Units: pl.unitsUp(usage[name])})
		}
		if pending > 0 {
			out.Waiting = append(out.Waiting, agent.JobWaiting{Reservation: j.Reservation, Request: j.Request, Tasks: pending})
		}
		if seen := b.jobs[j.Key()]; live == 0 && !seen.ended {
			seen.ended = true
			b.jobs[j.Key()] = seen
			out.Ends = append(out.Ends, agent.JobEnd{Reservation: j.Reservation, Request: j.Request, At: last.UTC(), Failed: failed})
		}
	}
	var errs []error
	for _, k := range plan.Refused {
		for _, p := range byJob[k] {
			if err := b.deletePod(ctx, p); err != nil {
				errs = append(errs, err)
			}
		}
		delete(b.jobs, k)
	}
	// What this process saw of a job the plan lists no more is forgotten, so the state
	// stays bounded by the plan (a job listed again is reported again; the server
	// ignores what it has).
	planned := map[agent.JobKey]bool{}
	for _, j := range slices.Concat(plan.Running, plan.Waiting) {
		planned[j.Key()] = true
	}
	for k := range b.jobs {
		if !planned[k] {
			delete(b.jobs, k)
		}
	}
	if len(errs) > 0 {
		return out, errs[0]
	}
	return out, nil
}
