package scheduler

import (
	"math"
)

// units is how many units a request holds in each slot it runs, over all its
// pools (overhead included).
func units(r Request) int64 {
	var n int64
	r.eachPool(func(_ string, u int64) { n += u })
	return n
}

// window is the slots a request may still start in, from now: starts in
// [from, last].
func window(r Request, now Slot) (from, last Slot) {
	return max(r.Arrival, now), r.Deadline - r.Duration
}

// need is what a request takes from the shared capacity of each of its pools in
// each slot of [from, to): its units beyond what the owner's quota still has free.
type need struct {
	pools  []string
	units  map[string]int64   // per pool, per slot, before the owner's quota
	free   map[string][]int64 // shared free units per slot from the window's start
	own    map[string][]int64 // the owner's free quota per slot (nil: none)
	origin Slot
}

// shared is what the request takes from pool's shared capacity in slot t.
func (n *need) shared(p string, t Slot) int64 {
	u := n.units[p]
	if o := n.own[p]; o != nil {
		u -= min(u, max(o[t-n.origin], 0))
	}
	return u
}

// read loads the shared free capacity and the owner's free quota of r's pools over
// the starts left in its window, once.
func read(v View, owner string, r Request, now Slot) (*need, Slot, Slot, bool) {
	from, last := window(r, now)
	if last < from {
		return nil, 0, 0, false
	}
	n := &need{pools: r.pools(), units: map[string]int64{}, free: map[string][]int64{}, own: map[string][]int64{}, origin: from}
	for _, p := range n.pools {
		n.units[p] = r.Units(p)
		n.free[p] = v.FreeSlots(p, from, last+r.Duration, nil)
		if owner != "" {
			n.own[p] = v.Own(owner, p, from, last+r.Duration, nil)
		}
	}
	return n, from, last, true
}

// feasibleStarts calls fn for every start s from now at which r fits, in order,
// until fn returns false. It keeps a running count of consecutive slots with room:
// O(window).
func feasibleStarts(n *need, r Request, from, last Slot, fn func(s Slot) bool) {
	run := Slot(0) // consecutive slots ending at t with room for r
	for t := from; t < last+r.Duration; t++ {
		room := true
		for _, p := range n.pools {
			if n.free[p][t-from] < n.shared(p, t) {
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

// sharedUnitSlots is what r started at s takes from shared capacity, in unit-slots.
func (n *need) sharedUnitSlots(r Request, s Slot) float64 {
	total := 0.0
	for _, p := range n.pools {
		for t := s; t < s+r.Duration; t++ {
			total += float64(n.shared(p, t))
		}
	}
	return total
}

// first returns r's earliest feasible start in [from, last].
func first(n *need, r Request, from, last Slot) (Slot, bool) {
	start, found := Slot(0), false
	feasibleStarts(n, r, from, last, func(s Slot) bool {
		start, found = s, true
		return false
	})
	return start, found
}

// cheapest returns r's feasible start in [from, last] whose slots cost least under
// cost, each start's cost multiplied by weight(start) when weight is not nil
// (ties: the earliest), and that start's unweighted cost. Each slot's cost is
// computed once, as the scan reaches it, and runs are summed with prefix sums:
// O(window) calls.
func cheapest(n *need, r Request, from, last Slot, cost func(t Slot) float64, weight func(s Slot) float64) (Slot, float64, bool) {
	// prefix[k] is the cost of slots [from, from+k); filled lazily as the scan goes.
	prefix := make([]float64, 1, int(last+r.Duration-from)+1)
	best, bestCost, bestPrice := Slot(-1), math.Inf(1), 0.0
	feasibleStarts(n, r, from, last, func(s Slot) bool {
		for t := from + Slot(len(prefix)-1); t < s+r.Duration; t++ {
			prefix = append(prefix, prefix[len(prefix)-1]+cost(t))
		}
		price := prefix[s+r.Duration-from] - prefix[s-from]
		c := price
		if weight != nil {
			c *= weight(s)
		}
		// A later start must be cheaper by more than the prefix sums' rounding.
		if c < bestCost-1e-9*max(1, math.Abs(bestCost)) || best < 0 {
			best, bestCost, bestPrice = s, c, price
		}
		return true
	})
	if best < 0 {
		return 0, 0, false
	}
	return best, bestPrice, true
}

// earliest returns the first start at or after now at which r fits.
func earliest(v View, owner string, r Request, now Slot) (Slot, bool) {
	n, from, last, ok := read(v, owner, r, now)
	if !ok {
		return 0, false
	}
	return first(n, r, from, last)
}

// chooser picks one request's start among its feasible starts in [from, last],
// given its need read over that window, and prices it. It is false when the
// request does not fit.
type chooser func(n *need, r Request, from, last Slot) (Slot, float64, bool)

// offer is the scan every algorithm shares: for each request of ask, plan says
// whether it may only start now (its window is then cut to that one start) and
// how to choose its start (nil: refuse it); the request's shared capacity and the
// owner's free quota are read once over its window and the chooser places it.
// The offer's price is the sum of the requests' prices; it is false when any
// request cannot be placed.
func offer(v View, ask Ask, plan func(r Request) (onlyNow bool, choose chooser)) (Offer, bool) {
	o := Offer{}
	for _, r := range ask.Requests {
		onlyNow, choose := plan(r)
		if choose == nil {
			return Offer{}, false
		}
		if onlyNow {
			if r.Arrival > ask.Now || ask.Now+r.Duration > r.Deadline {
				return Offer{}, false
			}
			r.Arrival, r.Deadline = ask.Now, ask.Now+r.Duration
		}
		n, from, last, ok := read(v, ask.Owner, r, ask.Now)
		if !ok {
			return Offer{}, false
		}
		s, price, ok := choose(n, r, from, last)
		if !ok {
			return Offer{}, false
		}
		o.Starts = append(o.Starts, s)
		o.Price += price
	}
	return o, true
}

// firstFit takes the earliest feasible start and charges unitPrice per unit-slot
// taken from shared capacity.
func firstFit(unitPrice float64) chooser {
	return func(n *need, r Request, from, last Slot) (Slot, float64, bool) {
		s, ok := first(n, r, from, last)
		if !ok {
			return 0, 0, false
		}
		return s, unitPrice * n.sharedUnitSlots(r, s), true
	}
}

// Greedy places each request at its earliest feasible start and charges a fixed
// price per unit-slot: the first-fit baseline.
type Greedy struct{ UnitPrice float64 }

// Name implements Algorithm.
func (Greedy) Name() string { return "greedy" }

// Offer implements Algorithm.
func (g Greedy) Offer(v View, ask Ask) (Offer, bool) {
	choose := firstFit(g.UnitPrice)
	return offer(v, ask, func(Request) (bool, chooser) { return false, choose })
}

// OnDemandFit accepts only requests whose whole run fits from now, starts them
// now and charges a fixed price per unit-slot: it never over-commits. It is the
// product's "ondemand" pool policy (start now or never), and a stricter
// baseline than ERA's on-demand (OnDemand), which checks only the current slot.
type OnDemandFit struct{ UnitPrice float64 }

// Name implements Algorithm.
func (OnDemandFit) Name() string { return "ondemand-fit" }

// Offer implements Algorithm.
func (d OnDemandFit) Offer(v View, ask Ask) (Offer, bool) {
	choose := firstFit(d.UnitPrice)
	return offer(v, ask, func(Request) (bool, chooser) { return true, choose })
}

// OnDemand is ERA's on-demand baseline (section 4, "Testing Azure Batch"): it
// "accepts jobs if there are enough available resources to start and run them
// (availability is checked only for the immediate time, ignoring the duration
// that the resources are requested). It schedules accepted jobs to run
// immediately and charges a fixed price". A request is accepted when its units
// are free in the current slot, starts now and pays UnitPrice per unit-slot of
// its whole run. The offer over-commits (Offer.Overcommit): later slots of the
// run may hold more than the capacity, and the engine reports the reservations
// it then cannot honour at risk at its next update (see Engine.Update).
type OnDemand struct{ UnitPrice float64 }

// Name implements Algorithm.
func (OnDemand) Name() string { return "ondemand" }

// Offer implements Algorithm.
func (d OnDemand) Offer(v View, ask Ask) (Offer, bool) {
	choose := func(n *need, r Request, from, _ Slot) (Slot, float64, bool) {
		for _, p := range n.pools {
			if n.free[p][0] < n.shared(p, from) {
				return 0, 0, false
			}
		}
		return from, d.UnitPrice * n.sharedUnitSlots(r, from), true
	}
	o, ok := offer(v, ask, func(Request) (bool, chooser) { return true, choose })
	o.Overcommit = ok
	return o, ok
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
	// Ceiling, when positive, is the most a unit-slot is priced at: with Floor
	// it bounds econ's prices between a list price and the largest discount
	// from it (ERA section 4, the Azure setting). A floor above the ceiling
	// wins.
	Ceiling float64
	// LaterPenalty, when positive, is ERA section 4's "exponential penalty for
	// later scheduling": a start s slots after the earliest one the request may
	// take is chosen as if it cost exp(LaterPenalty x s) times its price, so econ
	// trades a cheaper start for an earlier one. The price charged is the chosen
	// start's own (the penalty moves the choice, never the bill).
	LaterPenalty float64
}

// Name implements Algorithm.
func (BasicEcon) Name() string { return "econ" }

// Observe passes decided demand to a predictor that learns.
func (b BasicEcon) Observe(d Demand) {
	if l, ok := b.Predictor.(Learner); ok {
		l.Observe(d)
	}
}

// ObserveUse passes what a reservation used to a predictor that learns from it.
func (b BasicEcon) ObserveUse(u Use) {
	if l, ok := b.Predictor.(UseLearner); ok {
		l.ObserveUse(u)
	}
}

// Offer implements Algorithm. The cost of every slot in the window is computed once
// and the cheapest start found with prefix sums: O(window) predictor calls.
func (b BasicEcon) Offer(v View, ask Ask) (Offer, bool) {
	return offer(v, ask, func(Request) (bool, chooser) { return false, b.choose(ask.Now) })
}

// choose takes the cheapest feasible start at the slots' costs.
func (b BasicEcon) choose(now Slot) chooser {
	return func(n *need, r Request, from, last Slot) (Slot, float64, bool) {
		var weight func(s Slot) float64
		if b.LaterPenalty > 0 {
			weight = func(s Slot) float64 { return math.Exp(b.LaterPenalty * float64(s-from)) }
		}
		return cheapest(n, r, from, last, func(t Slot) float64 { return b.slotCost(n, t, now) }, weight)
	}
}

// slotCost prices the units the request takes from shared capacity in slot t: the
// sum of each unit's price (ERA Algorithm 1, line 8). Units from the owner's quota
// cost nothing.
func (b BasicEcon) slotCost(n *need, t, now Slot) float64 {
	total := 0.0
	for _, p := range n.pools {
		total += econCost(n, p, t, now, b.Floor, b.Ceiling, b.Predictor)
	}
	return total
}

// econCost prices the W units the request takes from pool p's shared capacity in
// slot t as ERA's Algorithm 1 does: cost[t] = price_t(1) + ... + price_t(W), where
// price_t(i) is "the highest price p s.t. demand_t(p) + promised[t] + i >
// Capacity", that is, with f units free before the request, the predictor's price
// for a demand of f - i + 1 units (Price(f) for the first unit, Price(f - W + 1)
// for the last). Each unit's price is bounded by ceiling (when positive) and then
// by floor. Units from the owner's quota cost nothing; no units, no predictor call.
// A predictor that is a UnitPricer sums the units in one pass.
func econCost(n *need, p string, t, now Slot, floor, ceiling float64, pred Predictor) float64 {
	w := n.shared(p, t)
	if w == 0 {
		return 0
	}
	f := n.free[p][t-n.origin]
	return unitPriceSum(pred, p, t, now, f-w+1, f, floor, ceiling)
}

// UnitPricer is a Predictor that sums its prices over a range of demand
// quantities faster than one Price call each.
type UnitPricer interface {
	// PriceSum is the sum over every quantity q in [lo, hi] of Price(pool, slot,
	// now, q), each bounded by ceiling (when positive) and then by floor, exactly
	// as the calls would give it (up to float rounding).
	PriceSum(pool string, slot, now Slot, lo, hi int64, floor, ceiling float64) float64
}

// clampPrice bounds one unit's price by ceiling (when positive), then by floor.
func clampPrice(price, floor, ceiling float64) float64 {
	if ceiling > 0 {
		price = min(price, ceiling)
	}
	return max(floor, price)
}

// unitPriceSum is the sum over q in [lo, hi] of pred's clamped price for q:
// one pass when pred is a UnitPricer, else a call per quantity.
func unitPriceSum(pred Predictor, p string, t, now Slot, lo, hi int64, floor, ceiling float64) float64 {
	if hi < lo {
		return 0
	}
	if u, ok := pred.(UnitPricer); ok {
		return u.PriceSum(p, t, now, lo, hi, floor, ceiling)
	}
	total := 0.0
	for q := lo; q <= hi; q++ {
		total += clampPrice(pred.Price(p, t, now, q), floor, ceiling)
	}
	return total
}

// PriceSum implements UnitPricer in closed form: the curve is geometric in the
// quantity below Capacity and flat at Base from Capacity on; the floor and the
// ceiling cut it where it crosses them (found by bisection: it falls as the
// quantity grows).
func (c LoadCurve) PriceSum(pool string, slot, now Slot, lo, hi int64, floor, ceiling float64) float64 {
	if hi < lo {
		return 0
	}
	if c.Capacity <= 0 || c.Steep <= 0 || hi-lo < 16 {
		total := 0.0
		for q := lo; q <= hi; q++ {
			total += clampPrice(c.Price(pool, slot, now, q), floor, ceiling)
		}
		return total
	}
	// Quantities at or below 0 all price at Base*Steep, at or above Capacity at Base.
	total := 0.0
	if lo <= 0 {
		k := min(hi, 0) - lo + 1
		total += float64(k) * clampPrice(c.Price(pool, slot, now, 0), floor, ceiling)
		lo = min(hi, 0) + 1
	}
	if hi >= c.Capacity && lo <= hi {
		k := hi - max(lo, c.Capacity) + 1
		total += float64(k) * clampPrice(c.Base, floor, ceiling)
		hi = max(lo, c.Capacity) - 1
	}
	if lo > hi {
		return total
	}
	// On [lo, hi] inside (0, Capacity) the price is Base*Steep^(1-q/C), monotone in q.
	price := func(q int64) float64 { return c.Price(pool, slot, now, q) }
	falls := c.Steep >= 1
	// cut returns the first q in [lo, hi+1] at which above(q) no longer holds,
	// for a predicate that holds on a prefix.
	cut := func(above func(q int64) bool) int64 {
		a, b := lo, hi+1
		for a < b {
			m := a + (b-a)/2
			if above(m) {
				a = m + 1
			} else {
				b = m
			}
		}
		return a
	}
	var mid0, mid1 int64 // [mid0, mid1) is priced unclamped
	if falls {
		mid0 = lo
		if ceiling > 0 {
			mid0 = cut(func(q int64) bool { return price(q) >= ceiling })
		}
		mid1 = max(mid0, cut(func(q int64) bool { return price(q) > floor }))
		total += float64(mid0-lo) * clampPrice(ceiling, floor, ceiling)
		total += float64(hi+1-mid1) * clampPrice(price(hi), floor, ceiling)
	} else {
		mid0 = cut(func(q int64) bool { return price(q) <= floor })
		mid1 = hi + 1
		if ceiling > 0 {
			mid1 = max(mid0, cut(func(q int64) bool { return price(q) < ceiling }))
		}
		total += float64(mid0-lo) * clampPrice(price(lo), floor, ceiling)
		total += float64(hi+1-mid1) * clampPrice(ceiling, floor, ceiling)
	}
	if n := mid1 - mid0; n > 0 {
		first, r := price(mid0), math.Pow(c.Steep, -1/float64(c.Capacity))
		if r == 1 {
			total += float64(n) * first
		} else {
			total += first * (1 - math.Pow(r, float64(n))) / (1 - r)
		}
	}
	return total
}
