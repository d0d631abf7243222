package scheduler

import (
	"math"
	"slices"
)

// units is how many units a request holds in each slot it runs, over all its pools.
func units(r Request) int64 {
	var n int64
	for _, u := range r.Config {
		n += u * r.Count
	}
	return n
}

// pools are a request's pools in a fixed order, so that float sums do not depend
// on map iteration order.
func pools(r Request) []string {
	ps := make([]string, 0, len(r.Config))
	for p := range r.Config {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// window is the slots a request may still start in, from now: starts in
// [from, last].
func window(r Request, now Slot) (from, last Slot) {
	return max(r.Arrival, now), r.Deadline - r.Duration
}

// feasibleStarts calls fn for every start s from now at which r fits, in order,
// until fn returns false. It reads each pool's free capacity over the window once
// and keeps a running count of consecutive slots with room: O(window).
func feasibleStarts(v View, r Request, now Slot, free map[string][]int64, fn func(s Slot) bool) {
	from, last := window(r, now)
	if last < from {
		return
	}
	ps := pools(r)
	for _, p := range ps {
		free[p] = v.FreeSlots(p, from, last+r.Duration, free[p][:0])
	}
	run := Slot(0) // consecutive slots ending at t with room for r
	for t := from; t < last+r.Duration; t++ {
		room := true
		for _, p := range ps {
			if free[p][t-from] < r.Config[p]*r.Count {
				room = false
				break
			}
		}
		if room {
			run++
		} else {
			run = 0
		}
		if run >= r.Duration && !fn(t-r.Duration+1) {
			return
		}
	}
}

// earliest returns the first start at or after now at which r fits.
func earliest(v View, r Request, now Slot) (Slot, bool) {
	start, found := Slot(0), false
	feasibleStarts(v, r, now, map[string][]int64{}, func(s Slot) bool {
		start, found = s, true
		return false
	})
	return start, found
}

// Greedy places each request at its earliest feasible start and charges a fixed
// price per unit-slot: the first-fit baseline.
type Greedy struct{ UnitPrice float64 }

// Name implements Algorithm.
func (Greedy) Name() string { return "greedy" }

// Offer implements Algorithm.
func (g Greedy) Offer(v View, ask Ask) (Offer, bool) {
	o := Offer{}
	for _, r := range ask.Requests {
		s, ok := earliest(v, r, ask.Now)
		if !ok {
			return Offer{}, false
		}
		o.Starts = append(o.Starts, s)
		o.Price += g.UnitPrice * float64(units(r)) * float64(r.Duration)
	}
	return o, true
}

// OnDemand accepts only requests that can start now, at a fixed price per
// unit-slot.
type OnDemand struct{ UnitPrice float64 }

// Name implements Algorithm.
func (OnDemand) Name() string { return "ondemand" }

// Offer implements Algorithm.
func (d OnDemand) Offer(v View, ask Ask) (Offer, bool) {
	o := Offer{}
	for _, r := range ask.Requests {
		if r.Arrival > ask.Now || ask.Now+r.Duration > r.Deadline {
			return Offer{}, false
		}
		for p, u := range r.Config {
			if v.Free(p, ask.Now, ask.Now+r.Duration) < u*r.Count {
				return Offer{}, false
			}
		}
		o.Starts = append(o.Starts, ask.Now)
		o.Price += d.UnitPrice * float64(units(r)) * float64(r.Duration)
	}
	return o, true
}

// Predictor is an inverse-demand curve: Price is the highest price per unit-slot
// at which quantity units of demand for pool in slot will still arrive after now.
// Zero means that much demand is not expected at any price.
type Predictor interface {
	Price(pool string, slot, now Slot, quantity int64) float64
}

// LoadCurve is a fixed inverse-demand curve with no memory: a pool with all
// Capacity units free prices a unit at Base, rising exponentially to Base*Steep as
// the free quantity falls to zero.
type LoadCurve struct {
	Base, Steep float64
	Capacity    int64
}

// Price implements Predictor.
func (c LoadCurve) Price(_ string, _, _ Slot, quantity int64) float64 {
	if c.Capacity <= 0 {
		return math.Inf(1)
	}
	used := 1 - float64(max(quantity, 0))/float64(c.Capacity)
	return c.Base * math.Pow(c.Steep, max(used, 0))
}

// BasicEcon is ERA's Basic-Econ: it prices each unit of each slot at the predicted
// value of the demand it would displace (the predictor's inverse demand at the
// capacity left free after it, so the committed load raises prices), at least
// Floor per unit-slot; starts each request at its cheapest feasible slot; and
// leaves the accept decision to the engine (the value covers the price).
type BasicEcon struct {
	Predictor Predictor
	Floor     float64
}

// Name implements Algorithm.
func (BasicEcon) Name() string { return "econ" }

// Observe passes decided demand to a predictor that learns.
func (b BasicEcon) Observe(d Demand) {
	if l, ok := b.Predictor.(Learner); ok {
		l.Observe(d)
	}
}

// Offer implements Algorithm. The cost of every slot in the window is computed once
// and the cheapest start found with prefix sums: O(window) predictor calls.
func (b BasicEcon) Offer(v View, ask Ask) (Offer, bool) {
	o := Offer{}
	free := map[string][]int64{}
	for _, r := range ask.Requests {
		from, last := window(r, ask.Now)
		if last < from {
			return Offer{}, false
		}
		// prefix[k] is the cost of slots [from, from+k); filled lazily as the scan goes.
		n := int(last+r.Duration-from) + 1
		prefix := make([]float64, 1, n)
		best, bestCost := Slot(-1), math.Inf(1)
		ps := pools(r)
		feasibleStarts(v, r, ask.Now, free, func(s Slot) bool {
			for t := from + Slot(len(prefix)-1); t < s+r.Duration; t++ {
				prefix = append(prefix, prefix[len(prefix)-1]+b.slotCost(r, ps, free, t, from, ask.Now))
			}
			// A later start must be cheaper by more than the prefix sums' rounding.
			if c := prefix[s+r.Duration-from] - prefix[s-from]; c < bestCost-1e-9*max(1, math.Abs(bestCost)) || best < 0 {
				best, bestCost = s, c
			}
			return true
		})
		if best < 0 {
			return Offer{}, false
		}
		o.Starts = append(o.Starts, best)
		o.Price += bestCost
	}
	return o, true
}

// slotCost prices the request's units in slot t: each block of units at the price
// of its middle unit, given the capacity that would be left free.
func (b BasicEcon) slotCost(r Request, ps []string, free map[string][]int64, t, from, now Slot) float64 {
	total := 0.0
	for _, p := range ps {
		w := r.Config[p] * r.Count
		left := free[p][t-from] - w/2
		total += float64(w) * max(b.Floor, b.Predictor.Price(p, t, now, left))
	}
	return total
}
