// Package simulate is the agent's simulated cluster, and the print backend that
// follows the plan without a cluster. Both print what a cluster would do: the jobs
// (a reservation's request) to start and stop, the jobs waiting in their window, the
// best-effort tasks to start and stop, and each team's quota.
//
// The simulate backend plays the cluster: jobs it starts run and report their usage
// (units times configuration, per pool; less with Use below 1), jobs waiting in their
// window report their tasks, and a job may end at a random moment before its planned
// end (FinishEarly, FailRate). Best-effort tasks run for a random 15m to 3h (failing
// at FailRate) and are reported started, done or failed; and each team's own usage of
// its quota follows a daily wave between 10% and 90% of the quota (OwnerUsage). Every
// random draw comes from one generator seeded by Seed: the same seed and the same
// allocations give the same run.
//
// The print backend is the same cluster with nothing simulated: it starts the jobs
// the plan marks "may start now" early, confirms best-effort starts and stops, and
// reports no usage and no ends (a real cluster's scheduler would). It lives here
// because it is the simulation's following of the plan, with the simulation left out:
// one copy of that logic, not two.
package simulate

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

func init() {
	agent.Register(agent.Kind{Name: "simulate", Open: func(_ context.Context, s agent.Setup) (agent.Backend, error) {
		return New(s.Out, &s.Simulate), nil
	}})
	agent.Register(agent.Kind{Name: "print", Open: func(_ context.Context, s agent.Setup) (agent.Backend, error) {
		return New(s.Out, nil), nil
	}})
}

// Cluster is the simulated (or, without a simulation, printed) cluster. It is not
// safe for concurrent use: the loop calls one method at a time.
type Cluster struct {
	out io.Writer
	sim *simulation // nil: the print backend

	running map[agent.JobKey]*runningJob
	waiting map[agent.JobKey]time.Time // the planned start last announced
	early   map[agent.JobKey]bool      // started early; the plan does not list it running yet
	usage   []agent.JobUsage           // the running jobs' usage at the last FollowReservations

	tasks   map[int64]*beTask // best-effort tasks it runs
	stopped map[int64]bool    // best-effort tasks it announced stopping

	quotas map[[2]string]int64 // team, pool -> units
	now    time.Time           // the plan's time at the last FollowReservations: SyncTasks's clock
}

// New returns a cluster printing to out that simulates with sim, or only follows the
// plan (the print backend) when sim is nil.
func New(out io.Writer, sim *agent.Simulation) *Cluster {
	c := &Cluster{out: out, running: map[agent.JobKey]*runningJob{}, waiting: map[agent.JobKey]time.Time{},
		early: map[agent.JobKey]bool{}, tasks: map[int64]*beTask{}, stopped: map[int64]bool{}, quotas: map[[2]string]int64{}}
	if sim != nil {
		c.sim = newSimulation(*sim)
	}
	return c
}

// Name is "simulate", or "print" without a simulation.
func (c *Cluster) Name() string {
	if c.sim == nil {
		return "print"
	}
	return "simulate"
}

// ApplyQuotas sets each team's quota (the simulated owners' usage follows it).
// Nobody else writes the simulated cluster's quotas: it never reports a correction.
func (c *Cluster) ApplyQuotas(_ context.Context, want []agent.Quota) ([]agent.Correction, error) {
	clear(c.quotas)
	for _, q := range want {
		c.quotas[[2]string{q.Team, q.Pool}] = q.Units
	}
	return nil, nil
}

// Measure (simulating) reports what each pool has in use: the running jobs' usage at
// the last FollowReservations and one configuration per running best-effort task;
// and each team's own usage, the daily wave of OwnerUsage over its quota. The print
// backend measures nothing.
func (c *Cluster) Measure(_ context.Context, now time.Time) (agent.Measurement, error) {
	if c.sim == nil {
		return agent.Measurement{}, nil
	}
	used := map[string]int64{}
	for _, u := range c.usage {
		used[u.Pool] += u.Units
	}
	for _, bt := range c.tasks {
		for p, n := range bt.task.Configuration {
			used[p] += n
		}
	}
	var m agent.Measurement
	for _, p := range slices.Sorted(maps.Keys(used)) {
		m.Pools = append(m.Pools, agent.PoolMeasure{Pool: p, Used: used[p]})
	}
	keys := slices.SortedFunc(maps.Keys(c.quotas), func(x, y [2]string) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) })
	for _, k := range keys {
		m.Owners = append(m.Owners, agent.OwnerUsage{Team: k[0], Pool: k[1], Units: OwnerUsage(c.sim.seed, k[0], k[1], c.quotas[k], now)})
	}
	return m, nil
}

// EndOf is when the simulation ends a running job before its planned end (zero: it
// runs to its end, or it does not run).
func (c *Cluster) EndOf(k agent.JobKey) time.Time {
	if r, ok := c.running[k]; ok {
		return r.endAt
	}
	return time.Time{}
}

// Close does nothing: the simulated cluster holds no connection.
func (c *Cluster) Close() error { return nil }

// printf writes a line stamped with the time of day of now.
func (c *Cluster) printf(now time.Time, format string, args ...any) {
	fmt.Fprintf(c.out, "%s "+format+"\n", append([]any{agent.Clock(now)}, args...)...)
}

func sortedKeys[V any](m map[agent.JobKey]V) []agent.JobKey {
	ks := slices.Collect(maps.Keys(m))
	slices.SortFunc(ks, func(x, y agent.JobKey) int {
		return cmp.Or(cmp.Compare(x.Reservation, y.Reservation), cmp.Compare(x.Request, y.Request))
	})
	return ks
}
