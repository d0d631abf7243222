// Package scheduler prices and places reservations for short-term jobs with
// deadlines (DESIGN.md, "Reservations for short-term jobs"; the ERA framework of
// Babaioff et al.). It is pure computation over whole time slots: no database,
// HTTP or templates.
//
// An Engine keeps each pool's capacity and commitments per slot. Pricing
// algorithms (Greedy, OnDemand, BasicEcon, and PerPool, which prices each pool by
// its own policy) see an Ask, never a bid's value; the engine compares the value
// with their price once, so truthful bids are best. Predictors (LoadCurve,
// Seasonal, Fractional; Shifted moves one's slot origin) tell BasicEcon what
// demand is still to come. CurrentAllocation and Update are the interface a
// cluster agent uses; the simulator drives exactly that interface.
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
	Owner    string // the team whose quota the bid uses first ("" for none)
	Requests []Request
	Value    float64
}

// Ask is what a pricing algorithm sees of a bid: its requests and the current slot,
// never its value. Algorithms take an Ask, so no algorithm can read V; the engine
// compares V with the price once.
type Ask struct {
	Owner    string
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
	// Free is the least free units of pool's shared capacity (what no quota holds)
	// over [from, to).
	Free(pool string, from, to Slot) int64
	// FreeSlots appends the free units of pool in each slot of [from, to) to dst.
	FreeSlots(pool string, from, to Slot, dst []int64) []int64
	// Own appends the owner's free quota of pool in each slot of [from, to) to dst:
	// units the owner's requests take first, at no charge.
	Own(owner, pool string, from, to Slot, dst []int64) []int64
	// Capacity is a pool's size in units at slot.
	Capacity(pool string, slot Slot) int64
	// Horizon is the number of slots the engine plans over.
	Horizon() Slot
}

// Reservation is an accepted bid: where each request runs and what it costs.
type Reservation struct {
	ID       int64
	Owner    string
	Requests []Request
	Starts   []Slot
	Price    float64
	Value    float64
	// Ended is nil, or per request the slot from which it released its capacity
	// early (-1: it runs its full duration).
	Ended []Slot
	// Own is nil, or per request the units each pool gives from the owner's quota in
	// each slot of its run (from its start); the rest comes from shared capacity.
	Own []map[string][]int64
}

// own is the units request i takes from the owner's quota of pool in slot t.
func (r *Reservation) own(i int, pool string, t Slot) int64 {
	if r.Own == nil || r.Own[i] == nil {
		return 0
	}
	o := r.Own[i][pool]
	if k := int(t - r.Starts[i]); k >= 0 && k < len(o) {
		return o[k]
	}
	return 0
}

// End is the slot after a request's last slot of use.
func (r Reservation) End(i int) Slot {
	if r.Ended != nil && r.Ended[i] >= 0 {
		return min(r.Ended[i], r.Starts[i]+r.Requests[i].Duration)
	}
	return r.Starts[i] + r.Requests[i].Duration
}

// SharedUnitSlots is the unit-slots request i takes from shared capacity over its
// planned run: its units (over all its pools) times its duration, minus what Own
// gives from the owner's quota, as placed. A reservation's price can be split
// between its requests in proportion to it.
func (r Reservation) SharedUnitSlots(i int) int64 {
	q := r.Requests[i]
	total := units(q) * int64(q.Duration)
	if r.Own == nil {
		return total
	}
	for _, own := range r.Own[i] {
		for _, o := range own[:min(len(own), int(q.Duration))] {
			total -= o
		}
	}
	return total
}

// Engine keeps capacity and commitments per pool and slot and makes reservations
// with one algorithm. It is not safe for concurrent use; callers serialize.
type Engine struct {
	horizon  Slot
	capacity map[string]*tree            // units per slot (minimum over a range)
	free     map[string]*tree            // shared: capacity minus quotas minus shared commitments
	quota    map[string]map[string]*tree // owner, pool: quota held
	ownFree  map[string]map[string]*tree // owner, pool: quota minus the owner's commitments in it
	algo     Algorithm
	next     int64
	res      map[int64]*Reservation
}

// NewEngine plans over horizon slots for pools of the given capacities.
func NewEngine(horizon Slot, capacity map[string]int64, algo Algorithm) *Engine {
	horizon = max(horizon, 1)
	e := &Engine{horizon: horizon, capacity: map[string]*tree{}, free: map[string]*tree{}, algo: algo, res: map[int64]*Reservation{},
		quota: map[string]map[string]*tree{}, ownFree: map[string]map[string]*tree{}}
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

// Own implements View.
func (e *Engine) Own(owner, pool string, from, to Slot, dst []int64) []int64 {
	from, to = max(from, 0), min(to, e.horizon)
	if from >= to {
		return dst
	}
	t := e.ownFree[owner][pool]
	if t == nil {
		for range to - from {
			dst = append(dst, 0)
		}
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
	return e.QuoteFor(now, "", reqs)
}

// QuoteFor is Quote for an owner whose quota its requests use first, at no charge.
func (e *Engine) QuoteFor(now Slot, owner string, reqs []Request) (Offer, bool, error) {
	if len(reqs) == 0 {
		return Offer{}, false, clearhouse.Errorf(clearhouse.EINVALID, "requests: at least one is required")
	}
	for i, r := range reqs {
		if err := e.validate(now, i, r); err != nil {
			return Offer{}, false, err
		}
	}
	return e.quote(now, owner, reqs)
}

func (e *Engine) quote(now Slot, owner string, reqs []Request) (Offer, bool, error) {
	// The requests are priced one after another, each on the plan with the ones
	// before it placed: a later request sees the capacity and the owner's quota an
	// earlier one takes, so requests of one bid are never priced twice against the
	// same free quota, and never overbooked. The trial placements are undone.
	var o Offer
	var placed []*Reservation
	defer func() {
		for _, t := range placed {
			e.apply(t, 0, 1)
		}
	}()
	for i, r := range reqs {
		one, ok := e.algo.Offer(e, Ask{Owner: owner, Requests: reqs[i : i+1], Now: now})
		if !ok || len(one.Starts) != 1 || one.Starts[0] < max(r.Arrival, now) || one.Starts[0]+r.Duration > r.Deadline {
			return Offer{}, false, nil
		}
		trial := &Reservation{Owner: owner, Requests: reqs[i : i+1], Starts: one.Starts}
		if !e.place(trial) {
			return Offer{}, false, nil
		}
		placed = append(placed, trial)
		o.Price += one.Price
		o.Starts = append(o.Starts, one.Starts[0])
	}
	return o, true, nil
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
	o, ok, err := e.QuoteFor(now, bid.Owner, bid.Requests)
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
	r := &Reservation{ID: bid.ID, Owner: bid.Owner, Requests: cloneRequests(bid.Requests), Starts: o.Starts, Price: o.Price, Value: bid.Value}
	if !e.place(r) {
		return Reservation{}, false, nil // the quote placed it a moment ago; never happens
	}
	if r.ID == 0 {
		e.next++
		r.ID = e.next
	}
	e.next = max(e.next, r.ID)
	e.res[r.ID] = r
	return *r, true, nil
}

// Cancel releases a reservation's capacity from slot now on.
func (e *Engine) Cancel(now Slot, id int64) error {
	r, ok := e.res[id]
	if !ok {
		return clearhouse.Errorf(clearhouse.ENOTFOUND, "reservation: no reservation %d", id)
	}
	e.apply(r, now, 1)
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

// place splits each request of r, slot by slot, between the owner's free quota
// (first) and shared capacity, and commits it. When shared capacity falls short it
// commits nothing and returns false.
func (e *Engine) place(r *Reservation) bool {
	r.Own = nil
	if r.Owner != "" {
		r.Own = make([]map[string][]int64, len(r.Requests))
	}
	for i, q := range r.Requests {
		s, end := r.Starts[i], r.End(i)
		if s < 0 || end > e.horizon {
			e.undo(r, i)
			return false
		}
		if s >= end {
			continue
		}
		for p, u := range q.Config {
			need := u * q.Count
			var own []int64
			if r.Owner != "" {
				own = e.Own(r.Owner, p, s, end, nil)
				for k, f := range own {
					own[k] = min(need, max(f, 0))
				}
				if r.Own[i] == nil {
					r.Own[i] = map[string][]int64{}
				}
				r.Own[i][p] = own
			}
			for k, f := range e.FreeSlots(p, s, end, nil) {
				shared := need
				if own != nil {
					shared -= own[k]
				}
				if f < shared {
					e.undo(r, i)
					return false
				}
			}
		}
		e.applyRequest(r, i, s, -1)
	}
	return true
}

// undo releases the first n requests of r that place committed.
func (e *Engine) undo(r *Reservation, n int) {
	for i := range n {
		e.applyRequest(r, i, r.Starts[i], 1)
	}
}

// apply adds sign times r's units, from slot from on, to the free capacity they
// were taken from: -1 commits, +1 releases.
func (e *Engine) apply(r *Reservation, from Slot, sign int64) {
	for i := range r.Requests {
		e.applyRequest(r, i, from, sign)
	}
}

func (e *Engine) applyRequest(r *Reservation, i int, from Slot, sign int64) {
	q := r.Requests[i]
	lo, hi := max(r.Starts[i], from), r.End(i)
	for p, u := range q.Config {
		need := u * q.Count
		// Runs of slots with the same split, one range update each.
		for t := lo; t < hi; {
			o := r.own(i, p, t)
			end := t + 1
			for end < hi && r.own(i, p, end) == o {
				end++
			}
			if o > 0 {
				e.ownFree[r.Owner][p].add(int(t), int(end), sign*o)
			}
			if need-o > 0 {
				e.free[p].add(int(t), int(end), sign*(need-o))
			}
			t = end
		}
	}
}
