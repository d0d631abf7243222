// Package scheduler prices and places reservations for short-term jobs with
// deadlines (DESIGN.md, "Reservations for short-term jobs"; the ERA framework of
// Babaioff et al.). It is pure computation over whole time slots: no database,
// HTTP or templates.
//
// An Engine keeps each pool's capacity and commitments per slot. Pricing
// algorithms (Greedy, OnDemand, BasicEcon) see an Ask, never a bid's value; the
// engine compares the value with their price once, so truthful bids are best.
// Predictors (LoadCurve, Seasonal, Fractional) tell BasicEcon what demand is still
// to come. CurrentAllocation and Update are the interface a cluster agent uses;
// the simulator drives exactly that interface.
package scheduler

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/clearhouse/clearhouse"
)

// Slot is a whole time slot (5 minutes by default) counted from the engine's start.
type Slot int

// Config is one unit of a job: units per pool, all in one cluster
// ("us-east/cpu": 2, "us-east/ram": 6).
type Config map[string]int64

// Request asks for Count units of Config for Duration contiguous slots, starting
// at or after Arrival and ending by Deadline.
type Request struct {
	Config   Config
	Count    int64
	Duration Slot
	Arrival  Slot
	Deadline Slot
}

// Bid is a set of requests that must all be granted, and the most the owner pays
// for all of them. ID, when not zero, names the reservation (it must be unused);
// otherwise the engine numbers it.
type Bid struct {
	ID       int64
	Requests []Request
	Value    float64
}

// Ask is what a pricing algorithm sees of a bid: its requests and the current slot,
// never its value. Algorithms take an Ask, so no algorithm can read V; the engine
// compares V with the price once.
type Ask struct {
	Requests []Request
	Now      Slot
}

// Offer is an algorithm's answer: the total price and each request's start slot.
type Offer struct {
	Price  float64
	Starts []Slot
}

// Algorithm prices and places asks. It returns false when the ask cannot be placed.
type Algorithm interface {
	Name() string
	Offer(v View, ask Ask) (Offer, bool)
}

// Demand is a bid as learners see it once the engine has decided it: the value is
// revealed only after the bid's own price was set, so learning from it cannot
// change that price.
type Demand struct {
	Requests []Request
	Now      Slot
	Value    float64
	Accepted bool
}

// Learner is implemented by algorithms and predictors that learn from past demand.
type Learner interface {
	Observe(d Demand)
}

// View is the read-only state an algorithm may consult.
type View interface {
	// Free is the least free units of pool over [from, to).
	Free(pool string, from, to Slot) int64
	// FreeSlots appends the free units of pool in each slot of [from, to) to dst.
	FreeSlots(pool string, from, to Slot, dst []int64) []int64
	// Capacity is a pool's size in units at slot.
	Capacity(pool string, slot Slot) int64
	// Horizon is the number of slots the engine plans over.
	Horizon() Slot
}

// Reservation is an accepted bid: where each request runs and what it costs.
type Reservation struct {
	ID       int64
	Requests []Request
	Starts   []Slot
	Price    float64
	Value    float64
	// Ended is nil, or per request the slot from which it released its capacity
	// early (-1: it runs its full duration).
	Ended []Slot
}

// End is the slot after a request's last slot of use.
func (r Reservation) End(i int) Slot {
	if r.Ended != nil && r.Ended[i] >= 0 {
		return min(r.Ended[i], r.Starts[i]+r.Requests[i].Duration)
	}
	return r.Starts[i] + r.Requests[i].Duration
}

// Engine keeps capacity and commitments per pool and slot and makes reservations
// with one algorithm. It is not safe for concurrent use; callers serialize.
type Engine struct {
	horizon  Slot
	capacity map[string]*tree // units per slot (minimum over a range)
	free     map[string]*tree // capacity minus commitments
	algo     Algorithm
	next     int64
	res      map[int64]*Reservation
}

// NewEngine plans over horizon slots for pools of the given capacities.
func NewEngine(horizon Slot, capacity map[string]int64, algo Algorithm) *Engine {
	horizon = max(horizon, 1)
	e := &Engine{horizon: horizon, capacity: map[string]*tree{}, free: map[string]*tree{}, algo: algo, res: map[int64]*Reservation{}}
	for p, c := range capacity {
		e.capacity[p] = newTree(int(horizon), c)
		e.free[p] = newTree(int(horizon), c)
	}
	return e
}

// Algorithm is the engine's pricing algorithm.
func (e *Engine) Algorithm() Algorithm { return e.algo }

// Free implements View.
func (e *Engine) Free(pool string, from, to Slot) int64 {
	t, ok := e.free[pool]
	from, to = max(from, 0), min(to, e.horizon)
	if !ok || from >= to {
		return 0
	}
	return t.minimum(int(from), int(to))
}

// FreeSlots implements View.
func (e *Engine) FreeSlots(pool string, from, to Slot, dst []int64) []int64 {
	t, ok := e.free[pool]
	from, to = max(from, 0), min(to, e.horizon)
	if !ok || from >= to {
		return dst
	}
	return t.values(int(from), int(to), dst)
}

// Capacity implements View.
func (e *Engine) Capacity(pool string, slot Slot) int64 {
	t, ok := e.capacity[pool]
	if !ok || slot < 0 || slot >= e.horizon {
		return 0
	}
	return t.minimum(int(slot), int(slot)+1)
}

// Horizon implements View.
func (e *Engine) Horizon() Slot { return e.horizon }

// validate checks a request and returns EINVALID naming the field at fault.
func (e *Engine) validate(now Slot, i int, r Request) error {
	bad := func(field, format string, args ...any) error {
		return clearhouse.Errorf(clearhouse.EINVALID, "requests[%d].%s: %s", i, field, fmt.Sprintf(format, args...))
	}
	switch {
	case len(r.Config) == 0:
		return bad("configuration", "name at least one pool with units")
	case r.Count <= 0:
		return bad("count", "must be at least 1")
	case r.Duration <= 0:
		return bad("duration", "must be at least one slot")
	case r.Deadline <= r.Arrival:
		return bad("deadline", "must be after the arrival")
	case r.Deadline-r.Arrival < r.Duration:
		return bad("duration", "%d slots do not fit in the window of %d", r.Duration, r.Deadline-r.Arrival)
	case r.Arrival < 0 || r.Deadline > e.horizon:
		return bad("deadline", "the window must lie within the %d-slot horizon", e.horizon)
	case r.Deadline-r.Duration < now:
		return bad("deadline", "too late: the job cannot finish by its deadline from now")
	}
	cluster := ""
	for p, u := range r.Config {
		c, _, _ := strings.Cut(p, "/")
		if cluster != "" && c != cluster {
			return bad("configuration", "spans clusters %s and %s", cluster, c)
		}
		cluster = c
		if _, ok := e.capacity[p]; !ok {
			return bad("configuration", "no pool %q", p)
		}
		if u <= 0 {
			return bad("configuration", "units of %q must be positive", p)
		}
		if u > math.MaxInt32 || r.Count > math.MaxInt32 {
			return bad("count", "too large")
		}
	}
	return nil
}

// Quote returns the price and starts the algorithm would give the requests now,
// without committing anything. ok is false when they cannot be placed.
func (e *Engine) Quote(now Slot, reqs []Request) (Offer, bool, error) {
	if len(reqs) == 0 {
		return Offer{}, false, clearhouse.Errorf(clearhouse.EINVALID, "requests: at least one is required")
	}
	for i, r := range reqs {
		if err := e.validate(now, i, r); err != nil {
			return Offer{}, false, err
		}
	}
	o, ok := e.algo.Offer(e, Ask{Requests: reqs, Now: now})
	if ok && !e.fits(reqs, o.Starts, now) {
		// Algorithms place each request alone; requests of one bid that compete for the
		// same capacity are refused together rather than overbooked.
		return Offer{}, false, nil
	}
	return o, ok, nil
}

// MakeReservation prices the bid's requests without its value, accepts the bid when
// the value covers the price, and commits the capacity. A rejected bid changes
// nothing in the plan; accepted is false then. Learners observe the bid after the
// decision.
func (e *Engine) MakeReservation(now Slot, bid Bid) (Reservation, bool, error) {
	if math.IsNaN(bid.Value) || math.IsInf(bid.Value, 0) || bid.Value <= 0 {
		return Reservation{}, false, clearhouse.Errorf(clearhouse.EINVALID, "value: must be a positive amount")
	}
	if _, taken := e.res[bid.ID]; bid.ID < 0 || taken {
		return Reservation{}, false, clearhouse.Errorf(clearhouse.ECONFLICT, "id: reservation %d exists", bid.ID)
	}
	o, ok, err := e.Quote(now, bid.Requests)
	if err != nil {
		return Reservation{}, false, err
	}
	accepted := ok && o.Price <= bid.Value
	if l, isLearner := e.algo.(Learner); isLearner {
		defer l.Observe(Demand{Requests: bid.Requests, Now: now, Value: bid.Value, Accepted: accepted})
	}
	if !accepted {
		return Reservation{}, false, nil
	}
	r := &Reservation{ID: bid.ID, Requests: cloneRequests(bid.Requests), Starts: o.Starts, Price: o.Price, Value: bid.Value}
	if r.ID == 0 {
		e.next++
		r.ID = e.next
	}
	e.next = max(e.next, r.ID)
	e.commit(r, -1)
	e.res[r.ID] = r
	return *r, true, nil
}

// Restore puts back a reservation made earlier (read from storage at start),
// without pricing it again. It is ECONFLICT when the reservation no longer fits.
func (e *Engine) Restore(r Reservation) error {
	if r.ID <= 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "id: must be positive")
	}
	if _, taken := e.res[r.ID]; taken {
		return clearhouse.Errorf(clearhouse.ECONFLICT, "id: reservation %d exists", r.ID)
	}
	for i, q := range r.Requests {
		if err := e.validate(0, i, q); err != nil {
			return err
		}
	}
	c := r
	c.Requests, c.Starts, c.Ended = cloneRequests(r.Requests), slices.Clone(r.Starts), slices.Clone(r.Ended)
	if !e.fitsUntil(c.Requests, c.Starts, c.Ended) {
		return clearhouse.Errorf(clearhouse.ECONFLICT, "reservation %d: does not fit in the plan", r.ID)
	}
	e.commit(&c, -1)
	e.res[c.ID] = &c
	e.next = max(e.next, c.ID)
	return nil
}

// Cancel releases a reservation's capacity from slot now on.
func (e *Engine) Cancel(now Slot, id int64) error {
	r, ok := e.res[id]
	if !ok {
		return clearhouse.Errorf(clearhouse.ENOTFOUND, "reservation: no reservation %d", id)
	}
	e.release(r, now)
	delete(e.res, id)
	return nil
}

// Reservation returns one reservation of the plan.
func (e *Engine) Reservation(id int64) (Reservation, bool) {
	r, ok := e.res[id]
	if !ok {
		return Reservation{}, false
	}
	return *r, true
}

// Reservations lists the reservations in the plan by id.
func (e *Engine) Reservations() []Reservation {
	out := make([]Reservation, 0, len(e.res))
	for _, r := range e.res {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Retire removes from the plan the reservations whose every request has ended by
// now and returns their ids: they can no longer change.
func (e *Engine) Retire(now Slot) []int64 {
	var done []int64
	for id, r := range e.res {
		ended := true
		for i := range r.Requests {
			ended = ended && r.End(i) <= now
		}
		if ended {
			done = append(done, id)
			delete(e.res, id)
		}
	}
	slices.Sort(done)
	return done
}

func cloneRequests(reqs []Request) []Request {
	out := make([]Request, len(reqs))
	for i, r := range reqs {
		out[i] = r
		out[i].Config = maps.Clone(r.Config)
	}
	return out
}

// fits reports whether the requests fit at starts on top of the current plan.
func (e *Engine) fits(reqs []Request, starts []Slot, now Slot) bool {
	if len(starts) != len(reqs) {
		return false
	}
	for i, r := range reqs {
		if starts[i] < max(r.Arrival, now) || starts[i]+r.Duration > r.Deadline {
			return false
		}
	}
	return e.fitsUntil(reqs, starts, nil)
}

// fitsUntil reports whether the requests fit at starts (each running until its
// End) on top of the current plan.
func (e *Engine) fitsUntil(reqs []Request, starts, ended []Slot) bool {
	if len(starts) != len(reqs) {
		return false
	}
	end := func(i int) Slot {
		if ended != nil && ended[i] >= 0 {
			return min(ended[i], starts[i]+reqs[i].Duration)
		}
		return starts[i] + reqs[i].Duration
	}
	if len(reqs) == 1 {
		for p, u := range reqs[0].Config {
			if starts[0] < end(0) && e.Free(p, starts[0], end(0)) < u*reqs[0].Count {
				return false
			}
		}
		return true
	}
	need := map[string]map[Slot]int64{}
	for i, r := range reqs {
		for p, u := range r.Config {
			if need[p] == nil {
				need[p] = map[Slot]int64{}
			}
			for t := starts[i]; t < end(i); t++ {
				need[p][t] += u * r.Count
			}
		}
	}
	for p, slots := range need {
		for t, n := range slots {
			if e.Free(p, t, t+1) < n {
				return false
			}
		}
	}
	return true
}

// commit adds sign times the reservation's units to the free capacity of the
// slots it uses.
func (e *Engine) commit(r *Reservation, sign int64) {
	for i, q := range r.Requests {
		if from, to := r.Starts[i], r.End(i); from < to {
			for p, u := range q.Config {
				e.free[p].add(int(from), int(to), sign*u*q.Count)
			}
		}
	}
}

// release returns the reservation's capacity from slot now on.
func (e *Engine) release(r *Reservation, now Slot) {
	for i, q := range r.Requests {
		if from, to := max(r.Starts[i], now), r.End(i); from < to {
			for p, u := range q.Config {
				e.free[p].add(int(from), int(to), u*q.Count)
			}
		}
	}
}
