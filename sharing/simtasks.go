package sharing

import (
	"container/heap"
	"fmt"
	"slices"
)

// newTask places a task in the slab.
func (s *sim) newTask(t simTask) *simTask {
	if len(s.slab) == cap(s.slab) {
		s.slab = make([]simTask, 0, 1024)
	}
	s.slab = append(s.slab, t)
	return &s.slab[len(s.slab)-1]
}

// schedule files a task under its end time.
func (s *sim) schedule(t *simTask) {
	l, ok := s.ends[t.end]
	if !ok {
		heap.Push(&s.times, t.end)
		if n := len(s.spare); n > 0 {
			l, s.spare = s.spare[n-1], s.spare[:n-1]
		}
	}
	s.ends[t.end] = append(l, t)
}

// finish ends a task at its end time (skipping preempted ones).
func (s *sim) finish(t *simTask) {
	if t.stopped {
		return
	}
	if t.job < 0 {
		s.bgRun[t.org]--
		s.bgTotal--
		s.slack[t.org]++
		return
	}
	s.release(t)
	s.res.Wait[t.org] += t.end - t.release - t.hours
	s.res.Tasks[t.org]++
	s.res.End = max(s.res.End, t.end)
}

// release takes a best-effort task off the processors and its lenders.
func (s *sim) release(t *simTask) {
	t.stopped = true
	s.nRun--
	s.useW[t.org]--
	s.useR[t.org] -= t.release
	for l, x := range t.lend {
		if x != 0 {
			s.lendW[l] -= x
			s.lendR[l] -= x * t.release
			s.slack[l] += x
		}
	}
	s.free = append(s.free, t.lend)
	t.lend = nil
}

func (s *sim) freeProcessors() int64 { return s.capacity - s.bgTotal - int64(s.nRun) }

// startBackground runs each team's local load on its own processors, preempting
// best-effort tasks when the pool is full.
func (s *sim) startBackground() {
	for o := range s.cfg.Orgs {
		for len(s.bgQueue[o]) > 0 && s.bgRun[o] < s.cfg.Orgs[o].Processors {
			if s.freeProcessors() < 1 && !s.preemptOne() {
				return
			}
			b := s.bgQueue[o][0]
			s.bgQueue[o] = s.bgQueue[o][1:]
			s.res.BackgroundWait += s.v.Now - b.release
			s.bgRun[o]++
			s.bgTotal++
			s.slack[o]--
			s.seq++
			s.schedule(s.newTask(simTask{job: -1, org: o, start: s.v.Now, end: s.v.Now + b.hours, release: b.release, hours: b.hours, seq: s.seq}))
			s.reattribute(o)
		}
	}
}

// preemptOne stops the policy's victim among tasks past the minimum runtime; false
// (and a wake-up set) when none is.
func (s *sim) preemptOne() bool {
	s.running = slices.DeleteFunc(s.running, func(t *simTask) bool { return t.stopped })
	s.v.Running = s.v.Running[:0]
	var cands []int
	for i, t := range s.running {
		s.v.Running = append(s.v.Running, RunningView{ID: fmt.Sprint(t.seq), Team: t.org, Started: t.start, Units: cpuUnit})
		if s.v.Now-t.start >= s.cfg.MinRuntime-eps {
			cands = append(cands, i)
		} else {
			s.wake = min(s.wake, t.start+s.cfg.MinRuntime)
		}
	}
	if len(cands) == 0 {
		return false
	}
	i := s.cfg.Policy.Victim(&s.v, s.acc, cands, s.rng)
	if i < 0 || i >= len(cands) {
		i = 0
	}
	t := s.running[cands[i]]
	s.release(t)
	s.res.Preemptions++
	k := t.job
	if s.v.Jobs[k].Waiting == 0 {
		s.enqueue(k)
	}
	s.v.Jobs[k].Waiting++
	return true
}

// reattribute moves what lender o lent beyond its idle processors to other lenders,
// most recently started tasks first.
func (s *sim) reattribute(o int) {
	for i := len(s.running) - 1; i >= 0 && s.slack[o] < -eps; i-- {
		t := s.running[i]
		if t.stopped || t.lend[o] <= eps {
			continue
		}
		idle := 0.0
		for k, x := range s.slack {
			if k != o && x > 0 {
				idle += x
			}
		}
		if idle <= eps {
			return
		}
		m := min(t.lend[o], -s.slack[o], idle)
		t.lend[o] -= m
		s.slack[o] += m
		s.lendW[o] -= m
		s.lendR[o] -= m * t.release
		spread(s.slack, o, m, func(k int, x float64) {
			t.lend[k] += x
			s.lendW[k] += x
			s.lendR[k] += x * t.release
		})
	}
}

// startBestEffort hands free processors to the policy's choices.
func (s *sim) startBestEffort() {
	for {
		idle := 0.0
		for _, x := range s.slack {
			idle += max(x, 0)
		}
		room := min(s.freeProcessors()-s.keep, floorUnits(idle))
		if room < 1 {
			return
		}
		s.v.Pools[0].Room = room
		k := s.cfg.Policy.Choose(&s.v, s.acc, s.rng)
		if k < 0 || k >= len(s.v.Jobs) || !s.v.Fits(k) {
			return
		}
		s.startTask(k)
	}
}

func (s *sim) startTask(k int) {
	jv := &s.v.Jobs[k]
	o := jv.Team
	var lend []float64
	if n := len(s.free); n > 0 {
		lend, s.free = s.free[n-1], s.free[:n-1]
	} else {
		lend = make([]float64, len(s.slack))
	}
	attribute(s.slack, o, 1, lend)
	hours := s.hours[k]
	s.seq++
	t := s.newTask(simTask{job: k, org: o, start: s.v.Now, end: s.v.Now + hours, release: jv.Enqueued, hours: hours, lend: lend, seq: s.seq})
	for l, x := range lend {
		if x != 0 {
			s.lendW[l] += x
			s.lendR[l] += x * t.release
		}
	}
	s.useW[o]++
	s.useR[o] += t.release
	s.nRun++
	s.running = append(s.running, t)
	s.schedule(t)
	jv.Waiting--
	if jv.Waiting == 0 {
		s.dequeue(k)
	}
	s.acc.markServed(s.orgRows[o])
	if len(s.running) > 64 && s.nRun < len(s.running)/2 {
		s.running = slices.DeleteFunc(s.running, func(t *simTask) bool { return t.stopped })
	}
}
