package main

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// agentTask is a best-effort task in a cluster's allocation: in best_effort (run
// it) or in preempt (stop it, for the reason given).
type agentTask struct {
	Task            int64            `json:"task"`
	Job             int64            `json:"job"`
	Team            string           `json:"team"`
	Configuration   map[string]int64 `json:"configuration"`
	Started         time.Time        `json:"started"`
	MaxTaskDuration string           `json:"max_task_duration,omitempty"`
	Reason          string           `json:"reason,omitempty"`
	JobWaiting      int64            `json:"job_waiting"`
	Abacus          bool             `json:"abacus,omitempty"`
}

// beJob is what a simulating agent measures of an abacus job it runs tasks of:
// its first start, its last end, and the sum over polls of its share of the
// best-effort units of each of its pools.
type beJob struct {
	config      map[string]int64
	first, last time.Time
	polls       int
	shares      map[string]float64
	waiting     int64 // its tasks waiting at the last poll
}

// agentTaskEvent reports a best-effort task started, done, failed or stopped.
type agentTaskEvent struct {
	Task  int64     `json:"task"`
	Event string    `json:"event"`
	At    time.Time `json:"at"`
}

// beTask is a best-effort task the agent runs. When simulating, endAt is when it
// ends by itself and failed whether that end is a failure.
type beTask struct {
	task   agentTask
	endAt  time.Time
	failed bool
}

// simTaskRuntime bounds a simulated best-effort task's run time (uniform between).
var simTaskRuntime = [2]time.Duration{15 * time.Minute, 3 * time.Hour}

// followBestEffort starts the best-effort tasks the allocation lists that the agent
// does not run yet and stops those in preempt, printing each, and queues the events
// the next report sends: started for each start, and stopped for every preempted
// task (which confirms the stop, so the server stops listing it). When simulating it
// also ends tasks whose time came (done, or failed at --fail-rate). A real cluster's
// tasks end on their own: its scheduler reports done or failed through the updates
// endpoint, which the reference agent cannot see.
func (a *clusterAgent) followBestEffort(alloc agentAllocation, now time.Time) {
	if a.tasks == nil {
		a.tasks, a.stopped = map[int64]*beTask{}, map[int64]bool{}
	}
	listed := map[int64]bool{}
	for _, t := range alloc.BestEffort {
		listed[t.Task] = true
		if _, ok := a.tasks[t.Task]; ok {
			continue
		}
		bt := &beTask{task: t}
		a.tasks[t.Task] = bt
		fmt.Fprintf(a.out, "%s start best-effort task %d of job %d: %s (team %s)\n", clock(now), t.Task, t.Job, configText(t.Configuration), t.Team)
		a.events = append(a.events, agentTaskEvent{Task: t.Task, Event: "started", At: now})
		if a.sim != nil {
			span := simTaskRuntime[1] - simTaskRuntime[0]
			bt.endAt = now.Truncate(time.Second).Add(simTaskRuntime[0] + time.Duration(a.sim.rng.Int64N(int64(span/time.Second)))*time.Second)
			bt.failed = a.sim.rng.Float64() < a.sim.failRate
		}
	}
	for _, t := range alloc.Preempt {
		if _, ok := a.tasks[t.Task]; ok || !a.stopped[t.Task] {
			delete(a.tasks, t.Task)
			fmt.Fprintf(a.out, "%s stop best-effort task %d of job %d (%s)\n", clock(now), t.Task, t.Job, t.Reason)
			a.stopped[t.Task] = true
		}
		a.events = append(a.events, agentTaskEvent{Task: t.Task, Event: "stopped", At: now})
	}
	ids := make([]int64, 0, len(a.tasks))
	for id := range a.tasks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		bt := a.tasks[id]
		switch {
		case !listed[id]: // the server ended it (an end reported before)
			delete(a.tasks, id)
		case a.sim != nil && !bt.endAt.After(now):
			ev := "done"
			if bt.failed {
				ev = "failed"
			}
			delete(a.tasks, id)
			a.events = append(a.events, agentTaskEvent{Task: id, Event: ev, At: bt.endAt})
			fmt.Fprintf(a.out, "%s end best-effort task %d of job %d: %s at %s\n", clock(now), id, bt.task.Job, ev, clock(bt.endAt))
			if j := a.jobs[bt.task.Job]; j != nil && bt.endAt.After(j.last) {
				j.last = bt.endAt
			}
		}
	}
	if a.sim != nil {
		a.measureJobs(alloc, now)
	}
}

// measureJobs (simulating) follows the abacus jobs whose tasks run: each poll adds
// each job's share of the best-effort units of its pools now; a job with no task
// left running and none waiting is done, and its measurement (the inverse of its
// run time in hours, and its mean shares) goes in the next report.
func (a *clusterAgent) measureJobs(alloc agentAllocation, now time.Time) {
	if a.jobs == nil {
		a.jobs = map[int64]*beJob{}
	}
	for _, t := range alloc.BestEffort {
		if !t.Abacus {
			continue
		}
		j := a.jobs[t.Job]
		if j == nil {
			j = &beJob{config: t.Configuration, first: t.Started, shares: map[string]float64{}}
			a.jobs[t.Job] = j
		}
		j.waiting = t.JobWaiting
		if t.Started.Before(j.first) {
			j.first = t.Started
		}
	}
	total, mine := map[string]int64{}, map[int64]map[string]int64{}
	for _, bt := range a.tasks {
		for p, u := range bt.task.Configuration {
			total[p] += u
			if a.jobs[bt.task.Job] != nil {
				if mine[bt.task.Job] == nil {
					mine[bt.task.Job] = map[string]int64{}
				}
				mine[bt.task.Job][p] += u
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(a.jobs)) {
		j := a.jobs[id]
		if m := mine[id]; m != nil {
			j.polls++
			for p := range j.config {
				j.shares[p] += float64(m[p]) / float64(max(total[p], 1))
			}
			continue
		}
		if j.waiting > 0 {
			continue // its tasks wait for units
		}
		if j.last.IsZero() { // the server ended its tasks (cancelled): nothing to measure
			delete(a.jobs, id)
			continue
		}
		hours := j.last.Sub(j.first).Hours()
		if hours <= 0 || j.polls == 0 {
			delete(a.jobs, id)
			continue
		}
		m := agentMeasurement{Job: id, Utility: 1 / hours, Shares: map[string]float64{}}
		for p := range j.config {
			m.Shares[p] = min(1, j.shares[p]/float64(j.polls))
		}
		a.measured = append(a.measured, m)
		delete(a.jobs, id)
		fmt.Fprintf(a.out, "%s best-effort job %d done: utility %.3g (1/%.2f h)\n", clock(now), id, m.Utility, hours)
	}
}
