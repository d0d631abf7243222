package simulate

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// beTask is a best-effort task the cluster runs. When simulating, endAt is when it
// ends by itself and failed whether that end is a failure.
type beTask struct {
	task   agent.Task
	endAt  time.Time
	failed bool
}

// simTaskRuntime bounds a simulated best-effort task's run time (uniform between).
var simTaskRuntime = [2]time.Duration{15 * time.Minute, 3 * time.Hour}

// SyncTasks starts the best-effort tasks in run that the cluster does not run yet and
// stops those in stop, printing each, and returns the events: started for each start,
// and stopped for every task in stop (which confirms the stop, so the server stops
// listing it). When simulating it also ends tasks whose time came (done, or failed at
// the fail rate). The print backend's tasks never end: a real cluster's scheduler
// would report done or failed. Its clock is the plan's time at the last
// FollowReservations, which the loop calls first.
func (c *Cluster) SyncTasks(_ context.Context, run, stop []agent.Task) ([]agent.TaskEvent, error) {
	now := c.now
	var events []agent.TaskEvent
	listed := map[int64]bool{}
	for _, t := range run {
		listed[t.ID] = true
		if _, ok := c.tasks[t.ID]; ok {
			continue
		}
		bt := &beTask{task: t}
		c.tasks[t.ID] = bt
		c.printf(now, "start best-effort task %d of job %d: %s (team %s)", t.ID, t.Job, agent.ConfigText(t.Configuration), t.Team)
		events = append(events, agent.TaskEvent{Task: t.ID, Event: agent.TaskStarted, At: now})
		if c.sim != nil {
			span := simTaskRuntime[1] - simTaskRuntime[0]
			bt.endAt = now.Truncate(time.Second).Add(simTaskRuntime[0] + time.Duration(c.sim.rng.Int64N(int64(span/time.Second)))*time.Second)
			bt.failed = c.sim.rng.Float64() < c.sim.failRate
		}
	}
	for _, t := range stop {
		if _, ok := c.tasks[t.ID]; ok || !c.stopped[t.ID] {
			delete(c.tasks, t.ID)
			c.printf(now, "stop best-effort task %d of job %d (%s)", t.ID, t.Job, t.Reason)
			c.stopped[t.ID] = true
		}
		events = append(events, agent.TaskEvent{Task: t.ID, Event: agent.TaskStopped, At: now})
	}
	for _, id := range slices.Sorted(maps.Keys(c.tasks)) {
		bt := c.tasks[id]
		switch {
		case !listed[id]: // the server ended it (an end reported before)
			delete(c.tasks, id)
		case c.sim != nil && !bt.endAt.After(now):
			ev := agent.TaskDone
			if bt.failed {
				ev = agent.TaskFailed
			}
			delete(c.tasks, id)
			events = append(events, agent.TaskEvent{Task: id, Event: ev, At: bt.endAt})
			c.printf(now, "end best-effort task %d of job %d: %s at %s", id, bt.task.Job, ev, agent.Clock(bt.endAt))
		}
	}
	return events, nil
}
