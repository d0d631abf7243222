// Package scheduler prices and places reservations for short-term jobs with
// deadlines (DESIGN.md, "Reservations for short-term jobs"; the ERA framework of
// Babaioff et al.). It is pure computation over whole time slots: no database,
// HTTP or templates.
//
// Status: the engine core (capacity and commitments per pool and slot, validation,
// quotes and reservations) and the Greedy, OnDemand and BasicEcon algorithms with a
// load-based price curve. Learned predictors, re-planning on capacity loss, the
// offline upper bound and the simulator are still to come (issue 5).
package scheduler

import (
	"fmt"
	"math"
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
// for all of them.
type Bid struct {
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

// View is the read-only state an algorithm may consult.
type View interface {
	// Free is the least free units of pool over [from, to).
	Free(pool string, from, to Slot) int64
	// Capacity is a pool's size in units.
	Capacity(pool string) int64
	// Horizon is the number of slots the engine plans over.
	Horizon() Slot
}

// Reservation is an accepted bid.
type Reservation struct {
	ID       int64
	Requests []Request
	Starts   []Slot
	Price    float64
}

// Engine keeps capacity and commitments per pool and slot and makes reservations
// with one algorithm.
type Engine struct {
	horizon  Slot
	capacity map[string]int64
	free     map[string]*tree
	algo     Algorithm
	next     int64
	res      map[int64]Reservation
}

// NewEngine plans over horizon slots for pools of the given capacities.
func NewEngine(horizon Slot, capacity map[string]int64, algo Algorithm) *Engine {
	e := &Engine{horizon: horizon, capacity: map[string]int64{}, free: map[string]*tree{}, algo: algo, res: map[int64]Reservation{}}
	for p, c := range capacity {
		e.capacity[p] = c
		e.free[p] = newTree(int(horizon), c)
	}
	return e
}

// Free implements View.
func (e *Engine) Free(pool string, from, to Slot) int64 {
	t, ok := e.free[pool]
	if !ok || from >= to {
		return 0
	}
	return t.minimum(int(from), int(to))
}

// Capacity implements View.
func (e *Engine) Capacity(pool string) int64 { return e.capacity[pool] }

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
	}
	return nil
}

// Quote returns the price and starts the algorithm would give the requests now,
// without committing anything. ok is false when they cannot be placed.
func (e *Engine) Quote(now Slot, reqs []Request) (Offer, bool, error) {
	for i, r := range reqs {
		if err := e.validate(now, i, r); err != nil {
			return Offer{}, false, err
		}
	}
	if len(reqs) == 0 {
		return Offer{}, false, clearhouse.Errorf(clearhouse.EINVALID, "requests: at least one is required")
	}
	o, ok := e.algo.Offer(e, Ask{Requests: reqs, Now: now})
	if ok && !e.fits(reqs, o.Starts) {
		// Algorithms place each request alone; requests of one bid that compete for the
		// same capacity are refused together rather than overbooked.
		return Offer{}, false, nil
	}
	return o, ok, nil
}

// MakeReservation prices the bid's requests without its value, accepts the bid when
// the value covers the price, and commits the capacity. A rejected bid changes
// nothing; accepted is false then.
func (e *Engine) MakeReservation(now Slot, bid Bid) (Reservation, bool, error) {
	if math.IsNaN(bid.Value) || math.IsInf(bid.Value, 0) || bid.Value <= 0 {
		return Reservation{}, false, clearhouse.Errorf(clearhouse.EINVALID, "value: must be a positive amount")
	}
	o, ok, err := e.Quote(now, bid.Requests)
	if err != nil || !ok || o.Price > bid.Value {
		return Reservation{}, false, err
	}
	e.next++
	r := Reservation{ID: e.next, Requests: bid.Requests, Starts: o.Starts, Price: o.Price}
	e.commit(r.Requests, r.Starts, -1)
	e.res[r.ID] = r
	return r, true, nil
}

// Cancel releases a reservation's capacity from slot now on.
func (e *Engine) Cancel(now Slot, id int64) error {
	r, ok := e.res[id]
	if !ok {
		return clearhouse.Errorf(clearhouse.ENOTFOUND, "reservation: no reservation %d", id)
	}
	for i, q := range r.Requests {
		from, to := max(r.Starts[i], now), r.Starts[i]+q.Duration
		if from < to {
			for p, u := range q.Config {
				e.free[p].add(int(from), int(to), u*q.Count)
			}
		}
	}
	delete(e.res, id)
	return nil
}

// Reservations lists the accepted reservations by id.
func (e *Engine) Reservations() []Reservation {
	out := make([]Reservation, 0, len(e.res))
	for _, r := range e.res {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (e *Engine) fits(reqs []Request, starts []Slot) bool {
	if len(starts) != len(reqs) {
		return false
	}
	need := map[string]map[Slot]int64{}
	for i, r := range reqs {
		s := starts[i]
		if s < r.Arrival || s+r.Duration > r.Deadline {
			return false
		}
		for p, u := range r.Config {
			if need[p] == nil {
				need[p] = map[Slot]int64{}
			}
			for t := s; t < s+r.Duration; t++ {
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

func (e *Engine) commit(reqs []Request, starts []Slot, sign int64) {
	for i, r := range reqs {
		for p, u := range r.Config {
			e.free[p].add(int(starts[i]), int(starts[i]+r.Duration), sign*u*r.Count)
		}
	}
}
