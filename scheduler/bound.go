package scheduler

import (
	"cmp"
	"slices"
)

// FractionalBound is the value-maximizing fractional allocation of jobs on one
// pool of capacity units: the offline upper bound of the ERA paper. Each job j
// may receive any amount y[j][t] >= 0 of units in each slot t of its window
// [Arrival, Deadline), at most min(Width, capacity) per slot and at most
// Width*Duration in total, with at most capacity units per slot over all jobs; it
// earns Value times the share of Width*Duration it receives. No schedule that
// runs whole jobs (or any online algorithm) can earn more than Value.
type FractionalBound struct {
	Value     float64   // total value of the allocation
	Allocated []float64 // per job (same order as the input): unit-slots allocated, in [0, Width*Duration]
	Load      []int64   // per slot from 0 to the largest deadline: units allocated
}

// UpperBound returns the value-maximizing fractional allocation of jobs on one
// pool of capacity units (see FractionalBound). It is exact: the allocation
// vectors form a polymatroid, so taking jobs in decreasing value density
// (Value/(Width*Duration)) and giving each as much as possible without reducing
// earlier jobs is optimal; each job's share is found by augmenting paths in the
// flow network source -> job -> slot -> sink. All amounts are whole units.
//
// Jobs that cannot earn anything (Width, Duration or Value not positive, or an
// empty window) are allocated nothing; a window starting before slot 0 is cut at
// slot 0.
func UpperBound(jobs []Job, capacity int64) FractionalBound {
	return boundOf(jobs, capacity, solveBound(jobs, capacity, nil))
}

// FractionalAllocation is the value-maximizing fractional allocation of
// UpperBound together with where it puts each job: Units[j][k] is job j's
// units in slot From[j]+k, for the slots of its window (cut at slot 0). The
// allocation is the one UpperBound's solver finds (optimal allocations are
// not unique; this one is fixed by the input order): every slot holds at
// most capacity units, every job at most min(Width, capacity) a slot and
// Width*Duration in all, and the units sum to Allocated.
type FractionalAllocation struct {
	FractionalBound
	From  []Slot
	Units [][]int64
}

// AllocateFractional is UpperBound with the allocation slot by slot: what
// ERA's LP-based predictor reads demand from.
func AllocateFractional(jobs []Job, capacity int64) FractionalAllocation {
	return allocateWork(jobs, capacity, nil)
}

// allocateWork is AllocateFractional with each job's total demand cut to
// work[j] unit-slots when work is not nil (and work[j] is below
// Width*Duration): a job that used less than it reserved asks for what it
// used, at the same value density.
func allocateWork(jobs []Job, capacity int64, work []int64) FractionalAllocation {
	s := solveBound(jobs, capacity, work)
	out := FractionalAllocation{FractionalBound: boundOf(jobs, capacity, s), From: make([]Slot, len(jobs)), Units: make([][]int64, len(jobs))}
	for j := range jobs {
		out.From[j] = Slot(s.start[j])
		out.Units[j] = s.flow[s.off[j]:s.off[j+1]:s.off[j+1]]
	}
	return out
}

// boundOf reads the totals of a solved allocation.
func boundOf(jobs []Job, capacity int64, s *boundSolver) FractionalBound {
	out := FractionalBound{
		Allocated: make([]float64, len(jobs)),
		Load:      make([]int64, s.horizon),
	}
	for j, job := range jobs {
		a := s.allocated(j)
		out.Allocated[j] = float64(a)
		if a > 0 {
			out.Value += density(job) * float64(a)
		}
	}
	for t := range out.Load {
		out.Load[t] = capacity - s.free[t]
	}
	return out
}

// boundSolver holds the flow of the fractional bound: flow[off[j]+t-start[j]] is
// job j's units in slot t, for t in [start[j], end[j]).
type boundSolver struct {
	horizon    int
	start, end []int32 // window per job, cut to [0, horizon); empty if the job is skipped
	off        []int   // offset of each job's window in flow and listed
	perSlot    []int64 // per job: min(Width, capacity)
	demand     []int64 // per job: Width*Duration
	rem        []int64 // per job: demand not yet allocated
	flow       []int64
	listed     []bool    // whether the job is in slotJobs of the slot
	free       []int64   // per slot: capacity not allocated
	slotJobs   [][]int32 // per slot: jobs that may have flow there (all that do)
	deadSlot   []bool    // slot is saturated for good: no augmenting path passes it
	deadJob    []bool    // job's flow can never be moved again

	// search scratch
	epoch      uint32
	slotMark   []uint32
	jobMark    []uint32
	parentJob  []int32 // job whose residual edge reached the slot
	parentSlot []int32 // slot the job was reached from, or -1 for the source job
	queue      []int32
}

func (s *boundSolver) allocated(j int) int64 { return s.demand[j] - s.rem[j] }

// y returns job j's units in slot t.
func (s *boundSolver) y(j int, t int32) int64 {
	if t < s.start[j] || t >= s.end[j] {
		return 0
	}
	return s.flow[s.off[j]+int(t-s.start[j])]
}

// density is a job's value per unit-slot.
func density(j Job) float64 { return j.Value / (float64(j.Width) * float64(j.Duration)) }

func solveBound(jobs []Job, capacity int64, work []int64) *boundSolver {
	n := len(jobs)
	s := &boundSolver{
		start:   make([]int32, n),
		end:     make([]int32, n),
		off:     make([]int, n+1),
		perSlot: make([]int64, n),
		demand:  make([]int64, n),
		rem:     make([]int64, n),
		deadJob: make([]bool, n),
		jobMark: make([]uint32, n),
	}
	for _, job := range jobs {
		s.horizon = max(s.horizon, int(job.Deadline))
	}
	order := make([]int, 0, n)
	total := 0
	for j, job := range jobs {
		s.off[j] = total
		a, d := max(int(job.Arrival), 0), int(job.Deadline)
		if capacity <= 0 || job.Width <= 0 || job.Duration <= 0 || !(job.Value > 0) || d <= a {
			continue
		}
		s.start[j], s.end[j] = int32(a), int32(d)
		s.perSlot[j] = min(job.Width, capacity)
		s.demand[j] = job.Width * int64(job.Duration)
		if work != nil && work[j] < s.demand[j] {
			s.demand[j] = max(work[j], 0)
		}
		s.rem[j] = s.demand[j]
		total += d - a
		order = append(order, j)
	}
	s.off[n] = total
	s.flow = make([]int64, total)
	s.listed = make([]bool, total)
	h := s.horizon
	s.free = make([]int64, h)
	for t := range s.free {
		s.free[t] = max(capacity, 0)
	}
	s.slotJobs = make([][]int32, h)
	s.deadSlot = make([]bool, h)
	s.slotMark = make([]uint32, h)
	s.parentJob = make([]int32, h)
	s.parentSlot = make([]int32, h)

	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(density(jobs[b]), density(jobs[a])) })
	for _, j := range order {
		s.fill(j)
		for s.rem[j] > 0 && s.augment(j) {
		}
	}
	return s
}

// add changes job j's units in slot t by d and keeps free and slotJobs current.
func (s *boundSolver) add(j int, t int32, d int64) {
	k := s.off[j] + int(t-s.start[j])
	s.flow[k] += d
	s.free[t] -= d
	if s.flow[k] > 0 && !s.listed[k] {
		s.listed[k] = true
		s.slotJobs[t] = append(s.slotJobs[t], int32(j))
	}
}

// fill gives job j free capacity in its window directly.
func (s *boundSolver) fill(j int) {
	for t := s.start[j]; t < s.end[j] && s.rem[j] > 0; t++ {
		if s.free[t] <= 0 {
			continue
		}
		d := min(s.free[t], s.perSlot[j], s.rem[j])
		s.add(j, t, d)
		s.rem[j] -= d
	}
}

// augment searches (breadth first) for one augmenting path from job j to a slot
// with free capacity and pushes as much as it can along it. When there is none,
// every slot and job the search reached is saturated for good and marked dead.
func (s *boundSolver) augment(j int) bool {
	s.epoch++
	e := s.epoch
	q := s.queue[:0]
	s.jobMark[j] = e
	found := int32(-1)
	visit := func(i int, from int32) bool {
		base := s.off[i] - int(s.start[i])
		c := s.perSlot[i]
		for t := s.start[i]; t < s.end[i]; t++ {
			if s.deadSlot[t] || s.slotMark[t] == e || s.flow[base+int(t)] >= c {
				continue
			}
			s.slotMark[t] = e
			s.parentJob[t] = int32(i)
			s.parentSlot[t] = from
			if s.free[t] > 0 {
				found = t
				return true
			}
			q = append(q, t)
		}
		return false
	}
	if !visit(j, -1) {
	search:
		for h := 0; h < len(q); h++ {
			t := q[h]
			list := s.slotJobs[t]
			w := 0
			for _, i32 := range list {
				i := int(i32)
				k := s.off[i] + int(t-s.start[i])
				if s.flow[k] == 0 || s.deadJob[i] {
					s.listed[k] = false
					continue
				}
				list[w] = i32
				w++
			}
			list = list[:w]
			s.slotJobs[t] = list
			for _, i32 := range list {
				i := int(i32)
				if s.jobMark[i] == e {
					continue
				}
				s.jobMark[i] = e
				if visit(i, t) {
					break search
				}
			}
		}
	}
	s.queue = q
	if found < 0 {
		for _, t := range q {
			s.deadSlot[t] = true
		}
		s.deadJob[j] = true
		for _, t := range q {
			for _, i := range s.slotJobs[t] {
				s.deadJob[i] = true
			}
		}
		return false
	}
	// Bottleneck along the path found -> ... -> j.
	d := min(s.rem[j], s.free[found])
	for t := found; ; {
		i, from := int(s.parentJob[t]), s.parentSlot[t]
		d = min(d, s.perSlot[i]-s.y(i, t))
		if from < 0 {
			break
		}
		d = min(d, s.y(i, from))
		t = from
	}
	for t := found; ; {
		i, from := int(s.parentJob[t]), s.parentSlot[t]
		s.add(i, t, d)
		if from < 0 {
			break
		}
		s.add(i, from, -d)
		t = from
	}
	s.rem[j] -= d
	return true
}
