package scheduler

import "math"

// units is how many units of pool a request holds in each slot it runs.
func units(r Request) int64 {
	var n int64
	for _, u := range r.Config {
		n += u * r.Count
	}
	return n
}

// feasible reports whether r can run in [s, s+Duration).
func feasible(v View, r Request, s Slot) bool {
	for p, u := range r.Config {
		if v.Free(p, s, s+r.Duration) < u*r.Count {
			return false
		}
	}
	return true
}

// earliest returns the first start at or after now at which r fits.
func earliest(v View, r Request, now Slot) (Slot, bool) {
	for s := max(r.Arrival, now); s+r.Duration <= r.Deadline; s++ {
		if feasible(v, r, s) {
			return s, true
		}
	}
	return 0, false
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
		if r.Arrival > ask.Now || ask.Now+r.Duration > r.Deadline || !feasible(v, r, ask.Now) {
			return Offer{}, false
		}
		o.Starts = append(o.Starts, ask.Now)
		o.Price += d.UnitPrice * float64(units(r)) * float64(r.Duration)
	}
	return o, true
}

// Predictor is an inverse-demand curve: the highest price per unit-slot at which
// quantity units of demand for slot will still arrive, seen from now.
type Predictor interface {
	Price(slot, now Slot, quantity int64, capacity int64) float64
}

// LoadCurve prices a unit by how full its slot is: Base at an empty pool, rising
// exponentially to Base*Steep when full. It has no memory of past demand.
type LoadCurve struct{ Base, Steep float64 }

// Price implements Predictor.
func (c LoadCurve) Price(_, _ Slot, quantity, capacity int64) float64 {
	if capacity <= 0 {
		return math.Inf(1)
	}
	return c.Base * math.Pow(c.Steep, float64(quantity)/float64(capacity))
}

// BasicEcon prices each slot and unit from the load already committed plus the
// predictor's view of demand to come, starts each request at its cheapest feasible
// slot, and leaves the accept decision to the engine (the value covers the price).
type BasicEcon struct{ Predictor Predictor }

// Name implements Algorithm.
func (BasicEcon) Name() string { return "econ" }

// Offer implements Algorithm.
func (b BasicEcon) Offer(v View, ask Ask) (Offer, bool) {
	o := Offer{}
	for _, r := range ask.Requests {
		best, bestCost := Slot(-1), math.Inf(1)
		for s := max(r.Arrival, ask.Now); s+r.Duration <= r.Deadline; s++ {
			if !feasible(v, r, s) {
				continue
			}
			if c := b.cost(v, r, s, ask.Now); c < bestCost {
				best, bestCost = s, c
			}
		}
		if best < 0 {
			return Offer{}, false
		}
		o.Starts = append(o.Starts, best)
		o.Price += bestCost
	}
	return o, true
}

// cost sums, over the request's slots and pools, the price of its units on top of
// the slot's committed load (each unit at the price of the midpoint of its block).
func (b BasicEcon) cost(v View, r Request, s, now Slot) float64 {
	total := 0.0
	for p, u := range r.Config {
		capacity, w := v.Capacity(p), u*r.Count
		for t := s; t < s+r.Duration; t++ {
			load := capacity - v.Free(p, t, t+1)
			total += float64(w) * b.Predictor.Price(t, now, load+w/2, capacity)
		}
	}
	return total
}
