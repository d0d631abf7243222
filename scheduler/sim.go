package scheduler

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Outcome is what one algorithm achieved on a workload. Jobs counts bids: the
// rows of a group (Job.Group) are one bid.
type Outcome struct {
	Name           string
	Jobs           int
	AcceptedJobs   int
	RequestedValue float64
	AcceptedValue  float64
	ValueShare     float64 // accepted over requested value
	Revenue        float64
	Utilization    float64           // unit-slots run over unit-slots the scheduler planned with
	MeanPrice      float64           // revenue per accepted unit-slot
	ByClass        map[string][2]int // class (or team): accepted, submitted
	// LateJobs are accepted jobs that did not complete by their deadline: a
	// reservation the engine could no longer honour after capacity was lost,
	// or a task that failed. LateShare is LateJobs over AcceptedJobs.
	LateJobs  int
	LateShare float64
	// AtRisk counts the reservations reported at risk; Failed the jobs with a
	// failed task; EarlyStarts the requests the cluster started early.
	AtRisk, Failed, EarlyStarts int
	// Reruns counts the failed requests started again on spare capacity
	// (SimConfig.Rerun; a re-run stopped when the spare shrank and started over
	// counts once), RerunsOnTime those of them that finished by their deadline. PlannedAboveAnnounced counts the slots the engine planned with
	// more capacity than the cloud had announced for them (0 for every supply
	// predictor: announced slots are planned with what was announced).
	Reruns, RerunsOnTime, PlannedAboveAnnounced int
	// LostValue is the engine's lost value (refused bids and reservations not
	// honoured; see Lost), by reason.
	LostValue map[string]float64
	// Series is, per slot, the units the simulated cluster ran and the mean price
	// per unit-slot of the jobs running (0 when idle).
	Series []SlotStat
}

// SlotStat is one slot of a simulation.
type SlotStat struct {
	Used  int64
	Price float64
}

// SimConfig is a simulation's setting.
type SimConfig struct {
	// Capacity is the cluster's size in units; in the Azure-style setting the
	// scheduler manages Cloud.Share of it.
	Capacity int64
	// Cloud is the seeded behaviour of the simulated cloud (the zero value:
	// it never fails).
	Cloud Cloud
	// StartEarly makes the cluster start every waiting request the engine
	// offers as MayStartNow (ERA's empty-allocation extension).
	StartEarly bool
	// Progress, when set, is called as the simulated clock advances.
	Progress func(slot, horizon Slot)
	// Supply, when set, is the capacity the scheduler plans the slots the cloud
	// has not announced yet with: it observes the day before the run (the cloud's
	// history) and every announcement, and the slots beyond what has been
	// announced are planned, at the start, with its estimate. Nil plans them with
	// the whole share (Cloud.Managed), as if it will all be there.
	Supply SupplyPredictor
	// PlanShare, in (0, 1], is the share of the estimated or announced capacity the
	// engine plans with; the rest is spare, for re-running failed tasks (0: 1).
	PlanShare float64
	// Rerun starts a failed request again from its beginning on spare capacity
	// (what the cloud has beyond what the engine runs), earliest deadline first,
	// as ERA's Azure runs did ("the resources that remained as spares for
	// re-running failed jobs"); its job is late only if the re-run does not end by
	// the deadline. Without it a failed task does not run again.
	Rerun bool
}

// plan is the capacity the engine plans with out of units the cloud has.
func (c SimConfig) plan(units int64) int64 {
	if c.PlanShare > 0 && c.PlanShare < 1 {
		return int64(math.Floor(c.PlanShare * float64(units)))
	}
	return units
}

// Simulate replays jobs through an engine with one pool of capacity units and the
// algorithm, and reports what it accepted.
func Simulate(jobs []Job, capacity int64, algo Algorithm) (Outcome, error) {
	return SimulateWith(jobs, algo, SimConfig{Capacity: capacity})
}

// SimPool is the pool a simulated cluster offers.
const SimPool = "sim/units"

// simBid is one bid of a workload: a group's rows in file order, or one job.
type simBid struct {
	index int // of its first row in the workload
	rows  []Job
}

// bidsOf groups the jobs into bids, ordered by submission (stable).
func bidsOf(jobs []Job) []simBid {
	var out []simBid
	group := map[string]int{}
	for i, j := range jobs {
		if j.Group != "" {
			if k, ok := group[j.Group]; ok {
				out[k].rows = append(out[k].rows, j)
				continue
			}
			group[j.Group] = len(out)
		}
		out = append(out, simBid{index: i, rows: []Job{j}})
	}
	slices.SortStableFunc(out, func(a, b simBid) int { return cmp.Compare(a.rows[0].Submit, b.rows[0].Submit) })
	return out
}

// WorkloadBound is UpperBound for a workload whose rows may form bids
// (Job.Group): each row is a job of its width plus overhead, and a group's value
// is split between its rows in proportion to their unit-slots, except in an ANY
// group, where every row may earn the whole value. Both are relaxations of the
// bids, so no schedule of them earns more.
func WorkloadBound(jobs []Job, capacity int64) FractionalBound {
	rows := make([]Job, len(jobs))
	total := map[string]float64{}
	for _, j := range jobs {
		if j.Group != "" {
			total[j.Group] += float64(j.Width+j.Overhead) * float64(j.Duration)
		}
	}
	for i, j := range jobs {
		rows[i] = j
		rows[i].Width += j.Overhead
		if j.Group != "" && j.Language.or() != BidAny && total[j.Group] > 0 {
			rows[i].Value = j.Value * float64(rows[i].Width) * float64(j.Duration) / total[j.Group]
		}
	}
	return UpperBound(rows, capacity)
}

// bid is the engine's bid for a workload bid.
func (b simBid) bid() Bid {
	first := b.rows[0]
	out := Bid{Value: first.Value, Language: first.Language}
	for _, j := range b.rows {
		r := Request{Config: Config{SimPool: 1}, Count: j.Width, Duration: j.Duration, Arrival: j.Arrival, Deadline: j.Deadline}
		if j.Overhead > 0 {
			r.Overhead = Config{SimPool: j.Overhead}
		}
		out.Requests = append(out.Requests, r)
	}
	return out
}

// simRun is the state of one simulation.
type simRun struct {
	cfg       SimConfig
	e         *Engine
	out       Outcome
	unitPrice map[int64]float64
	bidOf     map[int64]int // reservation: bid index
	fates     map[int64][]fate
	started   map[[2]int64]Slot // reservation, request: first slot it ran
	late      map[int]bool
	reruns    []rerun // waiting or running, in the order they failed
}

// rerun is a failed request started again outside the engine, on spare capacity.
type rerun struct {
	bid            int
	units          int64
	duration, left Slot // left: slots still to run (duration: not started)
	deadline       Slot
	running, begun bool
}

// SimulateWith replays jobs on a simulated cloud. Each slot, the cloud reports
// what capacity it has (Cloud), the bids submitted in the slot are offered to
// the engine, then the cluster asks the engine what to run through the Agent
// interface (as a real cluster agent does), starts early what it may (when
// StartEarly is set), runs it, and reports the requests that ended, finished
// early or failed.
func SimulateWith(jobs []Job, algo Algorithm, cfg SimConfig) (Outcome, error) {
	if cfg.Capacity <= 0 {
		return Outcome{}, fmt.Errorf("capacity: must be at least 1 unit")
	}
	if err := cfg.Cloud.Validate(); err != nil {
		return Outcome{}, err
	}
	if math.IsNaN(cfg.PlanShare) || cfg.PlanShare < 0 || cfg.PlanShare > 1 {
		return Outcome{}, fmt.Errorf("plan share: must be between 0 and 1")
	}
	bids := bidsOf(jobs)
	horizon := Slot(1)
	for _, j := range jobs {
		horizon = max(horizon, j.Deadline)
	}
	managed := cfg.Cloud.Managed(cfg.Capacity)
	sched := cfg.Cloud.schedule(cfg.Capacity, horizon)
	s := &simRun{cfg: cfg, e: NewEngine(horizon, map[string]int64{SimPool: managed}, algo),
		out:       Outcome{Name: algo.Name(), Jobs: len(bids), ByClass: map[string][2]int{}, Series: make([]SlotStat, horizon), LostValue: map[string]float64{}},
		unitPrice: map[int64]float64{}, bidOf: map[int64]int{}, fates: map[int64][]fate{}, started: map[[2]int64]Slot{}, late: map[int]bool{}}
	var agent Agent = s.e
	hour := max(cfg.Cloud.perDay()/24, 1)
	if err := s.planSupply(sched, horizon, managed); err != nil {
		return Outcome{}, err
	}
	var used float64
	k := 0
	for now := Slot(0); now < horizon; now++ {
		if changes := sched.announce(SimPool, now, hour); len(changes) > 0 {
			for i := range changes {
				if cfg.Supply != nil {
					for t := changes[i].From; t < changes[i].To; t++ {
						cfg.Supply.Observe(t, changes[i].Units)
					}
				}
				changes[i].Units = cfg.plan(changes[i].Units)
			}
			rep, err := agent.Update(now, Update{Capacity: changes})
			if err != nil {
				return Outcome{}, err
			}
			s.atRisk(rep)
			for _, c := range changes {
				for t := c.From; t < c.To; t++ {
					if s.e.Capacity(SimPool, t) > sched.avail[t] {
						s.out.PlannedAboveAnnounced++
					}
				}
			}
		}
		for ; k < len(bids) && bids[k].rows[0].Submit <= now; k++ {
			if err := s.submit(bids[k], now); err != nil {
				return Outcome{}, err
			}
		}
		alloc := agent.CurrentAllocation(now)
		if cfg.StartEarly {
			var starts []JobStart
			for _, w := range alloc.Waiting {
				if w.MayStartNow {
					starts = append(starts, JobStart{Reservation: w.Reservation, Request: w.Request, At: now})
				}
			}
			if len(starts) > 0 {
				rep, err := agent.Update(now, Update{Starts: starts})
				if err != nil {
					return Outcome{}, err
				}
				s.out.EarlyStarts += len(starts) - len(rep.Refused)
				alloc = agent.CurrentAllocation(now)
			}
		}
		ends, st := s.run(alloc, now)
		if st.Used > sched.avail[now] {
			return Outcome{}, fmt.Errorf("slot %d: the engine allocated %d of the %d units the cloud has", now, st.Used, sched.avail[now])
		}
		s.out.Series[now] = st
		used += float64(st.Used)
		s.runReruns(now, sched.avail[now]-st.Used)
		// An over-committing algorithm (OnDemand) may leave later slots holding
		// more than the capacity: the update re-plans them before they run.
		if len(ends) > 0 || (now+1 < horizon && s.e.Free(SimPool, now+1, horizon) < 0) {
			rep, err := agent.Update(now+1, Update{Ends: ends})
			if err != nil {
				return Outcome{}, err
			}
			s.atRisk(rep)
		}
		for _, id := range s.e.Retire(now + 1) {
			delete(s.unitPrice, id)
		}
		if cfg.Progress != nil && (now%64 == 0 || now == horizon-1) {
			cfg.Progress(now+1, horizon)
		}
	}
	for _, r := range s.reruns {
		s.late[r.bid] = true // not finished by the end of the run
	}
	return s.finish(used, managed, horizon), nil
}

// planSupply sets, before the run, the capacity the engine plans every slot with:
// the supply predictor's estimate (from the day before the run), at most the share
// managed, or the share itself when there is no predictor; times PlanShare.
func (s *simRun) planSupply(sched schedule, horizon Slot, managed int64) error {
	if s.cfg.Supply == nil && s.cfg.plan(managed) == managed {
		return nil
	}
	if s.cfg.Supply != nil {
		day := Slot(s.cfg.Cloud.perDay())
		for t, u := range s.cfg.Cloud.history(s.cfg.Capacity) {
			s.cfg.Supply.Observe(Slot(t)-day, u)
		}
	}
	var changes []CapacityChange
	for t := Slot(0); t < horizon; t++ {
		u := managed
		if s.cfg.Supply != nil {
			u = min(max(s.cfg.Supply.Estimate(t), 0), managed)
		}
		u = s.cfg.plan(u)
		if n := len(changes); n > 0 && changes[n-1].Units == u && changes[n-1].To == t {
			changes[n-1].To = t + 1
			continue
		}
		changes = append(changes, CapacityChange{Pool: SimPool, From: t, To: t + 1, Units: u})
	}
	_, err := s.e.Update(0, Update{Capacity: changes})
	return err
}

// runReruns runs one slot of the failed requests started again, on the spare
// capacity the cloud has beyond what the engine runs: running ones first (one that
// no longer fits is stopped and waits to start over), then waiting ones by
// earliest deadline while they fit. One that can no longer end by its deadline is
// dropped, its job late.
func (s *simRun) runReruns(now Slot, spare int64) {
	keep := s.reruns[:0]
	for _, r := range s.reruns {
		if !r.running || r.units > spare {
			r.running, r.left = false, r.duration
			keep = append(keep, r)
			continue
		}
		spare -= r.units
		if r.left--; r.left == 0 {
			s.out.RerunsOnTime++
			continue
		}
		keep = append(keep, r)
	}
	s.reruns = keep
	slices.SortStableFunc(s.reruns, func(a, b rerun) int { return cmp.Compare(a.deadline, b.deadline) })
	keep = s.reruns[:0]
	for _, r := range s.reruns {
		if !r.running && now+r.duration > r.deadline {
			s.late[r.bid] = true
			continue
		}
		if !r.running && r.units <= spare {
			spare -= r.units
			if !r.begun {
				s.out.Reruns++
			}
			r.running, r.begun = true, true
			if r.left--; r.left == 0 {
				s.out.RerunsOnTime++
				continue
			}
		}
		keep = append(keep, r)
	}
	s.reruns = keep
}

// submit offers one bid to the engine.
func (s *simRun) submit(b simBid, now Slot) error {
	first := b.rows[0]
	class := cmp.Or(first.Class, first.Team)
	c := s.out.ByClass[class]
	c[1]++
	s.out.RequestedValue += first.Value
	defer func() { s.out.ByClass[class] = c }()
	bid := b.bid()
	for _, r := range bid.Requests {
		if r.Units(SimPool) > s.cfg.Cloud.Managed(s.cfg.Capacity) {
			return nil // wider than the pool: never placeable, not offered
		}
	}
	res, ok, err := s.e.MakeReservation(now, bid)
	if err != nil {
		return fmt.Errorf("job %s: %w", first.ID, err)
	}
	if !ok {
		return nil
	}
	s.out.AcceptedJobs++
	s.out.AcceptedValue += first.Value
	s.out.Revenue += res.Price
	var unitSlots float64
	for i, r := range res.Requests {
		unitSlots += float64(r.Units(SimPool)) * float64(r.Duration)
		s.fates[res.ID] = append(s.fates[res.ID], s.cfg.Cloud.fate(b.index, i, r.Duration))
	}
	s.unitPrice[res.ID] = res.Price / unitSlots
	s.bidOf[res.ID] = b.index
	c[0]++
	return nil
}

// run runs the allocation for one slot and returns what ended and the slot's
// use and mean price.
func (s *simRun) run(alloc Allocation, now Slot) ([]JobEnd, SlotStat) {
	var ends []JobEnd
	var st SlotStat
	var paid float64
	for _, a := range alloc.Running {
		r, _ := s.e.Reservation(a.Reservation)
		units := r.Requests[a.Request].Units(SimPool)
		st.Used += units
		paid += s.unitPrice[a.Reservation] * float64(units)
		key := [2]int64{a.Reservation, int64(a.Request)}
		start, ok := s.started[key]
		if !ok {
			start = now
			s.started[key] = now
		}
		f := s.fates[a.Reservation][a.Request]
		ran := now + 1 - start
		switch {
		case f.failAt >= 0 && ran > f.failAt:
			ends = append(ends, JobEnd{Reservation: a.Reservation, Request: a.Request, At: now + 1})
			bid := s.bidOf[a.Reservation]
			if !s.late[bid] {
				s.out.Failed++
			}
			if s.cfg.Rerun && !s.late[bid] {
				req := r.Requests[a.Request]
				s.reruns = append(s.reruns, rerun{bid: bid, units: units, duration: req.Duration, left: req.Duration, deadline: req.Deadline})
			} else {
				s.late[bid] = true
			}
		case ran >= f.runFor && a.End > now+1:
			ends = append(ends, JobEnd{Reservation: a.Reservation, Request: a.Request, At: now + 1})
		case a.End == now+1:
			ends = append(ends, JobEnd{Reservation: a.Reservation, Request: a.Request, At: now + 1})
		}
	}
	if st.Used > 0 {
		st.Price = paid / float64(st.Used)
	}
	return ends, st
}

// atRisk marks the jobs of reservations the engine could not honour as late.
func (s *simRun) atRisk(rep Report) {
	for _, r := range rep.AtRisk {
		s.out.AtRisk++
		s.late[s.bidOf[r.ID]] = true
		delete(s.unitPrice, r.ID)
	}
}

func (s *simRun) finish(used float64, managed int64, horizon Slot) Outcome {
	out := s.out
	out.LateJobs = len(s.late)
	if out.AcceptedJobs > 0 {
		out.LateShare = float64(out.LateJobs) / float64(out.AcceptedJobs)
	}
	for _, l := range s.e.LostValue() {
		out.LostValue[l.Reason] += l.Value
	}
	if out.RequestedValue > 0 {
		out.ValueShare = out.AcceptedValue / out.RequestedValue
	}
	out.Utilization = used / (float64(managed) * float64(horizon))
	if used > 0 {
		out.MeanPrice = out.Revenue / used
	}
	return out
}
