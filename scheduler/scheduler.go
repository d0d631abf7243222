// Package scheduler prices and places reservations for short-term jobs with
// deadlines (DESIGN.md, "Reservations for short-term jobs"; the ERA framework of
// Babaioff et al.). It is pure computation over whole time slots: no database,
// HTTP or templates.
//
// An Engine keeps each pool's capacity and commitments per slot. Pricing
// algorithms (Greedy, OnDemand and OnDemandFit, BasicEcon, and PerPool, which prices each pool by
// its own policy) see an Ask, never a bid's value; the engine compares the value
// with their price once, so truthful bids are best. A bid's requests combine by
// its BidLanguage (ALL, ANY, ORDER, ORDER_NO_GAP). Predictors (LoadCurve,
// Seasonal, Fractional, ERA's LP-based one; Shifted moves one's slot origin) tell
// BasicEcon what demand is still to come; learned ones save and restore their
// state (SavePredictor, RestorePredictor). CurrentAllocation and Update are the
// interface a cluster agent uses (early starts, ends, usage, capacity changes);
// the simulator drives exactly that interface. LostValue reports the value the
// capacity could not serve.
package scheduler

import (
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/clearhouse/clearhouse"
)

// Slot is a whole time slot (5 minutes by default) counted from the engine's start.
type Slot int

// Config is one unit of a job: units per pool, all in one cluster
// ("us-east/cpu": 2, "us-east/ram": 6).
type Config map[string]int64

// Request asks for Count units of Config for Duration contiguous slots, starting
// at or after Arrival and ending by Deadline. Overhead, when set, is what the
// request takes beyond its formal units (ERA section 2.2: the actual resources
// above the formal ones, such as an application master or a machine's system
// share): units per pool, whatever the count, in every slot it runs. The plan
// reserves, and prices, the actual units: Count*Config plus Overhead.
type Request struct {
	Config   Config `json:"config"`
	Count    int64  `json:"count"`
	Duration Slot   `json:"duration"`
	Arrival  Slot   `json:"arrival"`
	Deadline Slot   `json:"deadline"`
	Overhead Config `json:"overhead,omitempty"`
}

// Units is what the request holds of pool in every slot it runs: Count units
// of its configuration plus its overhead there.
func (r Request) Units(pool string) int64 { return r.Config[pool]*r.Count + r.Overhead[pool] }

// eachPool calls fn with each pool the request holds units of and its units
// there, in no fixed order, without allocating: for integer bookkeeping.
func (r Request) eachPool(fn func(pool string, units int64)) {
	for p := range r.Config {
		fn(p, r.Units(p))
	}
	for p, u := range r.Overhead {
		if _, dup := r.Config[p]; !dup && u > 0 {
			fn(p, u)
		}
	}
}

// pools are the pools the request holds units of (its configuration's and its
// overhead's), sorted, so that float sums do not depend on map order.
func (r Request) pools() []string {
	ps := make([]string, 0, len(r.Config)+len(r.Overhead))
	for p := range r.Config {
		ps = append(ps, p)
	}
	for p, u := range r.Overhead {
		if _, dup := r.Config[p]; !dup && u > 0 {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// Bid is a set of requests, combined as its Language says (all of them by
// default; see BidLanguage), and the most the owner pays for the bid. ID, when
// not zero, names the reservation (it must be unused); otherwise the engine
// numbers it. The engine numbers reservations in the order it accepts them, and
// a caller that names them must do the same (a database sequence does):
// re-planning after a capacity loss puts reservations back in id order.
type Bid struct {
	ID       int64
	Owner    string // the team whose quota the bid uses first ("" for none)
	Requests []Request
	Value    float64
	Language BidLanguage
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
// For an ANY bid (Engine.QuoteBid) Starts has the chosen request's start and
// Chosen is its index among the bid's requests; otherwise Chosen is 0.
//
// Overcommit is set by an algorithm that checked only the first slot of each
// request (ERA's on-demand baseline, OnDemand): the engine then commits the
// requests even where later slots of their runs hold more than the capacity,
// and the next Update re-plans those slots (see Engine.Update).
type Offer struct {
	Price      float64
	Starts     []Slot
	Chosen     int
	Overcommit bool
}

// Algorithm prices and places asks. It returns false when the ask cannot be placed.
type Algorithm interface {
	Name() string
	Offer(v View, ask Ask) (Offer, bool)
}

// Demand is a bid as learners see it once the engine has decided it: the value is
// revealed only after the bid's own price was set, so learning from it cannot
// change that price.
//
// Reservation is the id of the reservation an accepted bid became (0 for a
// refused bid); Requests are the requests the engine priced (for an ANY bid,
// the one it chose, or its first when none could be placed).
type Demand struct {
	Requests    []Request `json:"requests"`
	Now         Slot      `json:"now"`
	Value       float64   `json:"value"`
	Accepted    bool      `json:"accepted"`
	Reservation int64     `json:"reservation,omitempty"`
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
// For an ANY bid, Requests holds only the request the engine chose and Chosen
// is its index among the bid's requests (0 otherwise). Language is the bid's;
// re-planning keeps it (an ORDER reservation's requests stay in sequence).
type Reservation struct {
	ID       int64
	Owner    string
	Requests []Request
	Starts   []Slot
	Price    float64
	Value    float64
	Language BidLanguage
	Chosen   int
	// Decided is the slot the bid was accepted in: learners are told what the
	// reservation used (Use) relative to it. A restored reservation keeps the
	// slot it was stored with.
	Decided Slot
	// Ended is nil, or per request the slot from which it released its capacity
	// early (-1: it runs its full duration).
	Ended []Slot
	// Unused is nil, or per request the unit-slots its cluster reported it did
	// not use in slots it ran (Update's Usage): learners are told.
	Unused []int64
	// Own is nil, or per request the units each pool gives from the owner's quota in
	// each slot of its run (from its start); the rest comes from shared capacity.
	Own []map[string][]int64

	released map[releaseKey]release // units returned for slots it did not use
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
	lost     []Lost
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
	o, ok, err := e.QuoteBid(now, bid)
	if err != nil {
		return Reservation{}, false, err
	}
	accepted := ok && o.Price <= bid.Value
	reqs := bid.Requests
	if bid.Language.or() == BidAny {
		reqs = reqs[o.Chosen : o.Chosen+1]
	}
	d := Demand{Requests: reqs, Now: now, Value: bid.Value, Accepted: accepted}
	if !accepted {
		e.refused(now, bid, reqs, ok)
		e.observe(d)
		return Reservation{}, false, nil
	}
	r := &Reservation{ID: bid.ID, Owner: bid.Owner, Requests: cloneRequests(reqs), Starts: o.Starts, Price: o.Price, Value: bid.Value,
		Decided: now, Language: bid.Language, Chosen: o.Chosen}
	if o.Overcommit {
		e.placeOver(r)
	} else if !e.place(r) {
		return Reservation{}, false, nil // the quote placed it a moment ago; never happens
	}
	if r.ID == 0 {
		e.next++
		r.ID = e.next
	}
	e.next = max(e.next, r.ID)
	e.res[r.ID] = r
	d.Reservation = r.ID
	e.observe(d)
	return *r, true, nil
}

// Cancel releases a reservation's capacity from slot now on.
func (e *Engine) Cancel(now Slot, id int64) error {
	r, ok := e.res[id]
	if !ok {
		return clearhouse.Errorf(clearhouse.ENOTFOUND, "reservation: no reservation %d", id)
	}
	for i := range r.Requests {
		e.reclaim(r, i, now)
	}
	e.apply(r, now, 1)
	if r.Ended == nil {
		r.Ended = slices.Repeat([]Slot{-1}, len(r.Requests))
	}
	for i := range r.Requests {
		if r.End(i) > now {
			r.Ended[i] = max(now, r.Starts[i])
		}
	}
	delete(e.res, id)
	e.observeUse(r)
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
		}
	}
	slices.Sort(done)
	for _, id := range done {
		e.observeUse(e.res[id])
		delete(e.res, id)
	}
	return done
}

func cloneRequests(reqs []Request) []Request {
	out := make([]Request, len(reqs))
	for i, r := range reqs {
		out[i] = r
		out[i].Config = maps.Clone(r.Config)
		out[i].Overhead = maps.Clone(r.Overhead)
	}
	return out
}
