package fleet

import (
	"context"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/scheduler"
	"gorm.io/gorm"
)

// Pricing algorithms and predictors an operator may choose per pool.
var (
	PricingAlgorithms = []string{"econ", "greedy", "ondemand"}
	Predictors        = []string{"seasonal", "fractional", "load"}
)

// PricingPolicy is how a pool prices the units reservations take from its
// uncommitted capacity: the algorithm (econ: Basic-Econ; greedy: first fit at a
// fixed price; ondemand: start now or never, at a fixed price), the predictor econ
// uses, and UnitPrice per unit-slot (greedy's and ondemand's price, econ's floor).
type PricingPolicy struct {
	PoolID    string `gorm:"primaryKey"`
	Algorithm string
	Predictor string
	UnitPrice ledger.Money
	UpdatedAt time.Time
}

// TableName is the pool_policies table.
func (PricingPolicy) TableName() string { return "pool_policies" }

// Validate checks the policy and names the field at fault.
func (p PricingPolicy) Validate() error {
	if !contains(PricingAlgorithms, p.Algorithm) {
		return clearhouse.Errorf(clearhouse.EINVALID, "algorithm: %q is not one of econ, greedy, ondemand", p.Algorithm)
	}
	if !contains(Predictors, p.Predictor) {
		return clearhouse.Errorf(clearhouse.EINVALID, "predictor: %q is not one of seasonal, fractional, load", p.Predictor)
	}
	if p.UnitPrice < 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "unit price: must not be negative")
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// defaultPolicy is a pool's policy until an operator sets one: Basic-Econ with the
// seasonal predictor, never below the pool's real cost of a unit-slot.
func (s *Reservations) defaultPolicy(p exchange.Pool) PricingPolicy {
	return PricingPolicy{PoolID: p.ID, Algorithm: "econ", Predictor: "seasonal",
		UnitPrice: ledger.Money(int64(p.UnitCost) * int64(s.cfg.Slot) / int64(s.cfg.Period))}
}

// Policies returns every pool's pricing policy (the default where none was set).
func (s *Reservations) Policies(ctx context.Context) (map[string]PricingPolicy, error) {
	return s.policies(s.db.Read.WithContext(ctx))
}

func (s *Reservations) policies(tx *gorm.DB) (map[string]PricingPolicy, error) {
	var pools []exchange.Pool
	if err := tx.Order("id").Find(&pools).Error; err != nil {
		return nil, err
	}
	var set []PricingPolicy
	if err := tx.Find(&set).Error; err != nil {
		return nil, err
	}
	out := map[string]PricingPolicy{}
	for _, p := range pools {
		out[p.ID] = s.defaultPolicy(p)
	}
	for _, p := range set {
		out[p.PoolID] = p
	}
	return out, nil
}

// SetPolicy sets a pool's pricing policy. New reservations are priced by it at
// once; accepted ones keep their price. Returns EINVALID for a bad policy and
// ENOTFOUND for an unknown pool.
func (s *Reservations) SetPolicy(ctx context.Context, p PricingPolicy) (PricingPolicy, error) {
	if err := p.Validate(); err != nil {
		return PricingPolicy{}, err
	}
	err := s.write(ctx, func(tx *gorm.DB, _ *plan, now time.Time) error {
		if err := exists(tx, "pools", p.PoolID, "pool: no pool %q", p.PoolID); err != nil {
			return err
		}
		var before *PricingPolicy
		var old []PricingPolicy
		if err := tx.Where("pool_id = ?", p.PoolID).Limit(1).Find(&old).Error; err != nil {
			return err
		} else if len(old) == 1 {
			before = &old[0]
		}
		p.UpdatedAt = now
		if err := tx.Save(&p).Error; err != nil {
			return err
		}
		s.plan = nil // rebuild with the new algorithm
		return audit.Record(ctx, tx, audit.Event{Action: "pool.pricing_policy", Object: "pool:" + p.PoolID, At: now,
			Before: pricingState(before), After: pricingState(&p)})
	})
	return p, err
}

// algorithm builds the per-pool pricing algorithm for a plan starting at origin.
// The learned predictors live in absolute slots, in the database (predictors.go);
// syncLearned has pointed the plan's views at them.
func (s *Reservations) algorithm(tx *gorm.DB, pools []exchange.Pool, origin time.Time) (scheduler.Algorithm, error) {
	pols, err := s.policies(tx)
	if err != nil {
		return nil, err
	}
	off := scheduler.Slot(origin.Sub(slotEpoch) / s.cfg.Slot)
	s.seasonal.Off, s.fractional.Off = off, off
	per := scheduler.PerPool{Policies: map[string]scheduler.PoolPolicy{},
		Default: scheduler.PoolPolicy{Algorithm: "econ", Predictor: s.seasonal}}
	for _, p := range pools {
		pol := pols[p.ID]
		pp := scheduler.PoolPolicy{Algorithm: pol.Algorithm, UnitPrice: pol.UnitPrice.Dollars()}
		switch pol.Predictor {
		case "fractional":
			pp.Predictor = s.fractional
		case "load":
			pp.Predictor = scheduler.LoadCurve{Base: pol.UnitPrice.Dollars(), Steep: 8, Capacity: p.Capacity}
		default:
			pp.Predictor = s.seasonal
		}
		per.Policies[p.ID] = pp
	}
	return learningPlan{PerPool: per, s: s, off: off}, nil
}

// pricingState is a pool's pricing policy in the audit trail; nil for none.
func pricingState(p *PricingPolicy) any {
	if p == nil {
		return nil
	}
	return map[string]any{"algorithm": p.Algorithm, "predictor": p.Predictor, "unit_price": p.UnitPrice}
}
