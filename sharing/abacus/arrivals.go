package abacus

import (
	"fmt"
	"math/rand/v2"
)

// Workload is the task mix of the system-efficiency experiment.
type Workload uint8

const (
	// WorkloadBatch: every user submits one job at time 0, of maps uniform in
	// [20, 100] one-unit tasks and reduces uniform in [5, 30]; the auction is over the
	// jobs, weighted by their task counts, budgets uniform in [50, 200].
	WorkloadBatch Workload = iota
	// WorkloadTable1: the paper's own workload of sections 7.1.2 and 7.1.3 (Table 1):
	// user k is of type k mod 3, whose map and reduce tasks take 30 and 20 s (type 1),
	// 15 and 40 s (type 2) or 60 and 10 s (type 3), whose jobs arrive as a Poisson
	// process of 2, 1.5 or 1.1 jobs a minute for the first 30 minutes, and whose
	// budget is $200 with the linear utility u = T_m x + T_r y (T in tens of seconds:
	// u1 = 3x + 2y, as the paper writes it). Task counts are not in the paper: maps
	// uniform in [2, 10] and reduces in [1, 4] per job. The auction is over the users
	// with unfinished jobs, re-run when that set changes; a unit a user wins goes to
	// its earliest job with a ready task. Time runs in steps of 5 s.
	WorkloadTable1
)

// String returns "batch" or "table1".
func (w Workload) String() string {
	if w == WorkloadTable1 {
		return "table1"
	}
	return "batch"
}

// ParseWorkload reads "batch" or "table1"; EINVALID otherwise.
func ParseWorkload(s string) (Workload, error) {
	switch s {
	case "batch":
		return WorkloadBatch, nil
	case "table1":
		return WorkloadTable1, nil
	}
	return 0, invalid("workload: must be batch or table1, got %q", s)
}

// table1 is the paper's Table 1 in steps of 5 s and jobs per step.
var table1 = [3]struct {
	mapSteps, reduceSteps int
	rate                  float64 // jobs per 5 s step
}{{6, 4, 2.0 / 12}, {3, 8, 1.5 / 12}, {12, 2, 1.1 / 12}}

const (
	table1Window   = 360 // steps of submissions: 30 minutes
	table1StepSecs = 5
)

// mrJob is one MapReduce job of the arrivals model.
type mrJob struct {
	user, arrive             int
	maps, reduces            int
	leftM, leftR, doneM, run int
}

// slot is one running task: its job and the step it ends.
type slot struct{ job, end int }

// runTable1 draws one run of WorkloadTable1 and returns the makespan and the mean
// response time (completion less arrival), in seconds, under FIFO (abacus false) or
// Abacus's per-resource draws over the users' shares.
func runTable1(users, mapSlots, reduceSlots int, opt Options, abacus bool, rng *rand.Rand) (float64, float64, error) {
	var jobs []mrJob
	for u := range users {
		typ := table1[u%3]
		for t := 0.0; ; {
			t += rng.ExpFloat64() / typ.rate
			if t >= table1Window {
				break
			}
			m, r := 2+rng.IntN(9), 1+rng.IntN(4)
			jobs = append(jobs, mrJob{user: u, arrive: int(t), maps: m, reduces: r, leftM: m, leftR: r})
		}
	}
	sortJobsByArrival(jobs)
	s := &table1Sim{jobs: jobs, users: users, opt: opt, abacus: abacus, rng: rng,
		mapQ: make([][]int, users), redQ: make([][]int, users), unfinished: make([]int, users),
		active: make([]bool, users), shares: [2][]float64{make([]float64, users), make([]float64, users)}}
	s.slots = [2][]slot{make([]slot, mapSlots), make([]slot, reduceSlots)}
	for r := range s.slots {
		for k := range s.slots[r] {
			s.slots[r][k].job = -1
		}
	}
	return s.run()
}

func sortJobsByArrival(jobs []mrJob) {
	// insertion order is by user; a stable sort by arrival keeps ties in user order.
	for i := 1; i < len(jobs); i++ {
		for k := i; k > 0 && jobs[k].arrive < jobs[k-1].arrive; k-- {
			jobs[k], jobs[k-1] = jobs[k-1], jobs[k]
		}
	}
}

type table1Sim struct {
	jobs       []mrJob
	users      int
	opt        Options
	abacus     bool
	rng        *rand.Rand
	slots      [2][]slot
	mapQ, redQ [][]int // per user: job indices with maps to hand out / ready reduces, in order
	unfinished []int   // per user
	active     []bool  // per user: the set the shares were computed for
	shares     [2][]float64
	stale      bool
}

func (s *table1Sim) run() (float64, float64, error) {
	next, finished, total := 0, 0, 0.0
	makespan := 0
	for t := 0; finished < len(s.jobs); t++ {
		for ; next < len(s.jobs) && s.jobs[next].arrive <= t; next++ {
			j := &s.jobs[next]
			s.mapQ[j.user] = append(s.mapQ[j.user], next)
			if s.unfinished[j.user]++; s.unfinished[j.user] == 1 {
				s.stale = true
			}
		}
		for r := range s.slots {
			for k := range s.slots[r] {
				sl := &s.slots[r][k]
				if sl.job < 0 || sl.end > t {
					continue
				}
				j := &s.jobs[sl.job]
				j.run--
				if r == 0 {
					if j.doneM++; j.doneM == j.maps {
						s.redQ[j.user] = append(s.redQ[j.user], sl.job)
					}
				} else if j.leftR == 0 && j.run == 0 {
					finished++
					total += float64(t - j.arrive)
					makespan = t
					if s.unfinished[j.user]--; s.unfinished[j.user] == 0 {
						s.stale = true
					}
				}
				sl.job = -1
			}
		}
		if s.abacus && s.stale {
			if err := s.resolve(); err != nil {
				return 0, 0, err
			}
		}
		for r := range s.slots {
			for k := range s.slots[r] {
				if s.slots[r][k].job >= 0 {
					continue
				}
				ji := s.pick(r)
				if ji < 0 {
					break
				}
				j := &s.jobs[ji]
				dur := table1[j.user%3].mapSteps
				if r == 0 {
					j.leftM--
				} else {
					j.leftR--
					dur = table1[j.user%3].reduceSteps
				}
				j.run++
				s.slots[r][k] = slot{job: ji, end: t + dur}
			}
		}
	}
	return float64(makespan * table1StepSecs), total * table1StepSecs / float64(len(s.jobs)), nil
}

// front returns user u's earliest job with a ready task of resource r, or -1,
// dropping jobs with none left from the front of the user's queue.
func (s *table1Sim) front(u, r int) int {
	q := &s.mapQ[u]
	if r == 1 {
		q = &s.redQ[u]
	}
	for len(*q) > 0 {
		ji := (*q)[0]
		if j := &s.jobs[ji]; r == 0 && j.leftM > 0 || r == 1 && j.leftR > 0 {
			return ji
		}
		*q = (*q)[1:]
	}
	return -1
}

// pick returns the job a free slot of resource r goes to, or -1 when none waits.
func (s *table1Sim) pick(r int) int {
	if !s.abacus {
		best := -1
		for u := range s.users {
			if ji := s.front(u, r); ji >= 0 && (best < 0 || s.jobs[ji].arrive < s.jobs[best].arrive) {
				best = ji
			}
		}
		return best
	}
	u := DrawForResource(s.shares[r], func(u int) bool { return s.front(u, r) >= 0 }, s.rng)
	if u < 0 {
		return -1
	}
	return s.front(u, r)
}

// resolve re-runs the auction over the users with unfinished jobs.
func (s *table1Sim) resolve() error {
	s.stale = false
	inst := Instance{Resources: []string{"map", "reduce"}}
	var who []int
	for u := range s.users {
		s.shares[0][u], s.shares[1][u] = 0, 0
		if s.unfinished[u] > 0 {
			typ := table1[u%3]
			who = append(who, u)
			inst.Jobs = append(inst.Jobs, Job{ID: fmt.Sprint("u", u+1), Budget: 200, Utility: Linear,
				Weights: []float64{float64(typ.mapSteps*table1StepSecs) / 10, float64(typ.reduceSteps*table1StepSecs) / 10}})
		}
	}
	if len(who) == 0 {
		return nil
	}
	res, err := Solve(inst, s.opt)
	if err != nil {
		return err
	}
	for k, u := range who {
		s.shares[0][u], s.shares[1][u] = res.Shares[k][0], res.Shares[k][1]
	}
	return nil
}
