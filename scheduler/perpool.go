package scheduler

import (
	"maps"
	"math"
	"reflect"
	"slices"

	"github.com/clearhouse/clearhouse"
)

// The algorithms a pool's policy may name: the Name of the algorithm it follows.
const (
	policyEcon     = "econ"
	policyGreedy   = "greedy"
	policyOnDemand = "ondemand"
)

// PoolPolicy is how one pool prices the units a reservation takes from its shared capacity.
type PoolPolicy struct {
	Algorithm string    // "econ", "greedy" or "ondemand"
	UnitPrice float64   // dollars per unit-slot: greedy's and ondemand's fixed price, econ's floor
	Predictor Predictor // econ's inverse demand (required for econ)
	Ceiling   float64   // econ's most per unit-slot (0: none); see BasicEcon.Ceiling
}

// Validate returns EINVALID, naming the field, when the policy names no known
// algorithm, its unit price is negative or not a finite number, or it is econ
// without a predictor.
func (p PoolPolicy) Validate() error { return p.validate("") }

func (p PoolPolicy) validate(field string) error {
	switch p.Algorithm {
	case policyEcon, policyGreedy, policyOnDemand:
	default:
		return clearhouse.Errorf(clearhouse.EINVALID, "%salgorithm: %q is not econ, greedy or ondemand", field, p.Algorithm)
	}
	if math.IsNaN(p.UnitPrice) || math.IsInf(p.UnitPrice, 0) || p.UnitPrice < 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "%sunit price: must be a finite amount of at least 0", field)
	}
	if math.IsNaN(p.Ceiling) || math.IsInf(p.Ceiling, 0) || p.Ceiling < 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "%sceiling: must be a finite amount of at least 0 (0: none)", field)
	}
	if p.Algorithm == policyEcon && p.Predictor == nil {
		return clearhouse.Errorf(clearhouse.EINVALID, "%spredictor: econ pricing needs one", field)
	}
	return nil
}

// PerPool prices each pool of a request by that pool's policy (Default for pools
// not listed), so operators choose the algorithm and predictor per pool while one
// engine serves requests spanning several pools of a cluster.
//
// Each request is placed by the strictest policy among its pools: with an
// ondemand pool it may only start now, its whole run fitting (as OnDemandFit: the product never over-commits); else with an econ pool it
// takes its cheapest feasible start, ties to the earliest (as BasicEcon); else its
// earliest feasible start (as Greedy). A start costs, over its slots and pools, the
// units taken from shared capacity at that pool's price: an econ pool's as
// BasicEcon prices them with the policy's unit price as its floor, a greedy or
// ondemand pool's at its unit price. Units from the owner's quota cost nothing.
// With every pool on one policy it offers exactly what BasicEcon, Greedy or
// OnDemandFit offers. A request touching a pool whose policy is not valid is refused.
type PerPool struct {
	Policies map[string]PoolPolicy
	Default  PoolPolicy
}

// Name implements Algorithm.
func (PerPool) Name() string { return "per-pool" }

// Validate returns EINVALID, naming the pool and field, when Default or a listed
// pool's policy is not valid (PoolPolicy.Validate).
func (p PerPool) Validate() error {
	if err := p.Default.validate("default."); err != nil {
		return err
	}
	for _, pool := range slices.Sorted(maps.Keys(p.Policies)) {
		if err := p.Policies[pool].validate("policies[" + pool + "]."); err != nil {
			return err
		}
	}
	return nil
}

// policy is the policy that prices pool.
func (p PerPool) policy(pool string) PoolPolicy {
	if q, ok := p.Policies[pool]; ok {
		return q
	}
	return p.Default
}

// Offer implements Algorithm.
func (p PerPool) Offer(v View, ask Ask) (Offer, bool) {
	return offer(v, ask, func(r Request) (bool, chooser) { return p.plan(r, ask.Now) })
}

// plan is the strictest placement among r's pools' policies and the chooser that
// prices it; the chooser is nil when a policy is not valid.
func (p PerPool) plan(r Request, now Slot) (bool, chooser) {
	onlyNow, econ := false, false
	for _, pool := range r.pools() {
		pol := p.policy(pool)
		if pol.Validate() != nil {
			return false, nil
		}
		onlyNow = onlyNow || pol.Algorithm == policyOnDemand
		econ = econ || pol.Algorithm == policyEcon
	}
	if econ && !onlyNow {
		return false, func(n *need, r Request, from, last Slot) (Slot, float64, bool) {
			pols := p.policies(n)
			return cheapest(n, r, from, last, func(t Slot) float64 { return slotCost(n, pols, t, now) }, nil)
		}
	}
	return onlyNow, func(n *need, r Request, from, last Slot) (Slot, float64, bool) {
		s, ok := first(n, r, from, last)
		if !ok {
			return 0, 0, false
		}
		return s, runPrice(n, p.policies(n), r, s, now), true
	}
}

// policies are the policies of n's pools, in the order of n.pools.
func (p PerPool) policies(n *need) []PoolPolicy {
	pols := make([]PoolPolicy, len(n.pools))
	for k, pool := range n.pools {
		pols[k] = p.policy(pool)
	}
	return pols
}

// slotCost prices what the request takes from each pool's shared capacity in slot
// t by the pool's policy, summed over its pools in order (as BasicEcon.slotCost).
func slotCost(n *need, pols []PoolPolicy, t, now Slot) float64 {
	total := 0.0
	for k, p := range n.pools {
		if pols[k].Algorithm == policyEcon {
			total += econCost(n, p, t, now, pols[k].UnitPrice, pols[k].Ceiling, pols[k].Predictor)
		} else {
			total += float64(n.shared(p, t)) * pols[k].UnitPrice
		}
	}
	return total
}

// runPrice is the price of r started at s: the shared unit-slots of the fixed-price
// pools times their prices, summed per price first (so with one price it is that
// price times n.sharedUnitSlots, exactly as Greedy and OnDemand charge), plus the
// econ pools' costs.
func runPrice(n *need, pols []PoolPolicy, r Request, s, now Slot) float64 {
	var prices, unitSlots []float64 // per distinct fixed price, in the order of the pools
	econ := 0.0
	for k, p := range n.pools {
		if pols[k].Algorithm == policyEcon {
			for t := s; t < s+r.Duration; t++ {
				econ += econCost(n, p, t, now, pols[k].UnitPrice, pols[k].Ceiling, pols[k].Predictor)
			}
			continue
		}
		i := slices.Index(prices, pols[k].UnitPrice)
		if i < 0 {
			prices, unitSlots = append(prices, pols[k].UnitPrice), append(unitSlots, 0)
			i = len(prices) - 1
		}
		for t := s; t < s+r.Duration; t++ {
			unitSlots[i] += float64(n.shared(p, t))
		}
	}
	total := 0.0
	for i, price := range prices {
		total += price * unitSlots[i]
	}
	return total + econ
}

// Observe implements Learner: every distinct learner among the policies'
// predictors (Default's first, then the listed pools' by name; whatever the
// policy's algorithm, so a predictor can learn before its pool switches to econ)
// observes d exactly once, however many pools share it.
func (p PerPool) Observe(d Demand) {
	for _, pred := range p.predictors() {
		if l, ok := pred.(Learner); ok {
			l.Observe(d)
		}
	}
}

// ObserveUse implements UseLearner as Observe does Learner: each distinct
// predictor that learns from use sees u once.
func (p PerPool) ObserveUse(u Use) {
	for _, pred := range p.predictors() {
		if l, ok := pred.(UseLearner); ok {
			l.ObserveUse(u)
		}
	}
}

// predictors are the policies' distinct predictors, Default's first, then the
// listed pools' by name.
func (p PerPool) predictors() []Predictor {
	preds := []Predictor{p.Default.Predictor}
	for _, pool := range slices.Sorted(maps.Keys(p.Policies)) {
		preds = append(preds, p.Policies[pool].Predictor)
	}
	seen := map[any]bool{}
	var out []Predictor
	for _, pred := range preds {
		if pred == nil {
			continue
		}
		if key, ok := identity(pred); ok {
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		out = append(out, pred)
	}
	return out
}

// identity is a key equal for the same predictor: the predictor itself when it
// compares with ==, else the type and the map or slice it is. ok is false when it
// has none (a struct holding a map); such a predictor counts as distinct.
func identity(x any) (key any, ok bool) {
	v := reflect.ValueOf(x)
	if v.Comparable() {
		return x, true
	}
	type ref struct {
		t      reflect.Type
		p      uintptr
		length int
	}
	switch v.Kind() {
	case reflect.Map:
		return ref{v.Type(), v.Pointer(), 0}, true
	case reflect.Slice:
		return ref{v.Type(), v.Pointer(), v.Len()}, true
	}
	return nil, false
}
