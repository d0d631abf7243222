package agent

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// abacusJob is what the agent measures of an abacus job whose tasks run: its first
// start, its last end, and the sum over polls of its share of the best-effort units
// of each of its pools.
type abacusJob struct {
	config      map[string]int64
	first, last time.Time
	polls       int
	shares      map[string]float64
	waiting     int64 // its tasks waiting at the last poll
}

// abacusMeter follows the abacus jobs whose tasks run, from the allocation and the
// task events the backend reports.
type abacusMeter struct {
	jobs    map[int64]*abacusJob
	running map[int64]Task // best-effort tasks started and not yet ended or stopped
}

// observe takes one poll: the tasks the allocation lists to run and the events of
// this poll. Each poll adds each job's share of the best-effort units of its pools
// now; a job with no task left running and none waiting, whose last task ended (done
// or failed), is done, and its measurement (the inverse of its run time in hours, and
// its mean shares) is returned and printed to out. A job whose tasks the server ended
// (cancelled, preempted) has nothing to measure.
func (m *abacusMeter) observe(run []Task, events []TaskEvent, now time.Time, out io.Writer) []JobMeasurement {
	if m.jobs == nil {
		m.jobs, m.running = map[int64]*abacusJob{}, map[int64]Task{}
	}
	listed := map[int64]Task{}
	for _, t := range run {
		listed[t.ID] = t
	}
	for _, e := range events {
		switch e.Event {
		case TaskStarted:
			if t, ok := listed[e.Task]; ok {
				m.running[e.Task] = t
			}
		case TaskDone, TaskFailed:
			if t, ok := m.running[e.Task]; ok {
				if j := m.jobs[t.Job]; j != nil && e.At.After(j.last) {
					j.last = e.At
				}
			}
			delete(m.running, e.Task)
		case TaskStopped:
			delete(m.running, e.Task)
		}
	}
	for id := range m.running {
		if _, ok := listed[id]; !ok { // the server ended it
			delete(m.running, id)
		}
	}
	for _, t := range run {
		if !t.Abacus {
			continue
		}
		j := m.jobs[t.Job]
		if j == nil {
			j = &abacusJob{config: t.Configuration, first: t.Started, shares: map[string]float64{}}
			m.jobs[t.Job] = j
		}
		j.waiting = t.JobWaiting
		if t.Started.Before(j.first) {
			j.first = t.Started
		}
	}
	total, mine := map[string]int64{}, map[int64]map[string]int64{}
	for _, t := range m.running {
		for p, u := range t.Configuration {
			total[p] += u
			if m.jobs[t.Job] != nil {
				if mine[t.Job] == nil {
					mine[t.Job] = map[string]int64{}
				}
				mine[t.Job][p] += u
			}
		}
	}
	var done []JobMeasurement
	for _, id := range slices.Sorted(maps.Keys(m.jobs)) {
		j := m.jobs[id]
		if u := mine[id]; u != nil {
			j.polls++
			for p := range j.config {
				j.shares[p] += float64(u[p]) / float64(max(total[p], 1))
			}
			continue
		}
		if j.waiting > 0 {
			continue // its tasks wait for units
		}
		hours := j.last.Sub(j.first).Hours()
		if j.last.IsZero() || hours <= 0 || j.polls == 0 {
			delete(m.jobs, id)
			continue
		}
		// The server takes utilities up to 1e6 (a job of 3.6 ms) and refuses the
		// whole report otherwise: a shorter job is measured at that bound.
		utility := min(1/hours, maxMeasuredUtility)
		jm := JobMeasurement{Job: id, Utility: &utility, Shares: map[string]float64{}}
		for p := range j.config {
			jm.Shares[p] = min(1, j.shares[p]/float64(j.polls))
		}
		done = append(done, jm)
		delete(m.jobs, id)
		fmt.Fprintf(out, "%s best-effort job %d done: utility %.3g (1/%.2f h)\n", Clock(now), id, utility, hours)
	}
	return done
}

// maxMeasuredUtility is the largest measured utility the server accepts
// (besteffort.MaxMeasuredUtility; the agent imports nothing of the server).
const maxMeasuredUtility = 1e6
