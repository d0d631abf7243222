package exchange

import (
	"context"

	clearhouse "github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
)

// Unsupported is an order a run's supporting prices fail to support, with why, at
// those prices: a winner whose bundle costs more than its limit (Bundle, Cost,
// Limit) or that would rather have another of its bundles (Other, OtherCost,
// OtherLimit: more surplus than its own); a loser with a bundle costing less than
// its limit (Other, OtherCost, OtherLimit: the one it would want most). Amounts
// are micro-dollars, negative where the order receives. Why is "too_dear",
// "prefers_other", "wants" or "" (rounding the prices to the micro-dollar left
// the order only within the engine's tolerance of supported).
type Unsupported struct {
	OrderID               int64
	TeamID                string
	Won                   bool
	Bundle                Bundle // the bundle it won; nil for a loser
	Cost, Limit           ledger.Money
	Other                 Bundle
	OtherCost, OtherLimit ledger.Money
	Why                   string
}

// SupportingPrices returns the run's prices of the pools with a supporting price
// (SupportingPrice, micro-dollars per unit, beside the clock's Price), by pool;
// none when the run has no supporting prices; and the orders those prices fail to
// support, by order id.
func (m *Market) SupportingPrices(ctx context.Context, run AuctionRun) ([]RunPrice, []Unsupported, error) {
	db := m.db.Read.WithContext(ctx)
	var ps []RunPrice
	if err := db.Where("run_id = ? AND supporting_price IS NOT NULL", run.ID).Order("pool_id").Find(&ps).Error; err != nil {
		return nil, nil, err
	}
	dollars := make(map[string]float64, len(ps))
	for _, p := range ps {
		dollars[p.PoolID] = float64(*p.SupportingPrice) / float64(ledger.Dollar)
	}
	if len(ps) == 0 {
		return nil, nil, nil
	}
	var outs []runOutcome
	if err := db.Raw(`SELECT * FROM run_outcomes WHERE run_id = ? AND unsupported ORDER BY order_id`, run.ID).Scan(&outs).Error; err != nil {
		return nil, nil, err
	}
	ids := make([]int64, len(outs))
	for i, o := range outs {
		ids[i] = o.OrderID
	}
	os, err := ordersByID(db, ids)
	if err != nil {
		return nil, nil, err
	}
	views, err := loadViews(db, os, false)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[int64]OrderView, len(views))
	for _, v := range views {
		byID[v.ID] = v
	}
	out := make([]Unsupported, 0, len(outs))
	for _, o := range outs {
		v, ok := byID[o.OrderID]
		if !ok {
			return nil, nil, clearhouse.Errorf(clearhouse.EINTERNAL, "run %d: unsupported order %d has no order", run.ID, o.OrderID)
		}
		u, err := whyUnsupported(v, o.BundleIndex, dollars)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, u)
	}
	return ps, out, nil
}

// whyUnsupported says how the prices fail order v, which won bundle won (-1: lost).
func whyUnsupported(v OrderView, won int, prices map[string]float64) (Unsupported, error) {
	u := Unsupported{OrderID: v.ID, TeamID: v.TeamID, Won: won >= 0}
	best, bestSurplus := -1, ledger.Money(0)
	var bestCost ledger.Money
	for k, b := range v.Spec.Bundles {
		cost, err := AtPrices(b, prices)
		if err != nil {
			return Unsupported{}, err
		}
		surplus := v.Spec.LimitOf(k) - cost
		if k == won {
			u.Bundle, u.Cost, u.Limit = b, cost, v.Spec.LimitOf(k)
			continue
		}
		if best < 0 || surplus > bestSurplus {
			best, bestSurplus, bestCost = k, surplus, cost
		}
	}
	if best >= 0 {
		u.Other, u.OtherCost, u.OtherLimit = v.Spec.Bundles[best], bestCost, v.Spec.LimitOf(best)
	}
	switch {
	case u.Won && u.Cost > u.Limit:
		u.Why = "too_dear"
	case u.Won && best >= 0 && bestSurplus > u.Limit-u.Cost:
		u.Why = "prefers_other"
	case !u.Won && best >= 0 && bestSurplus > 0:
		u.Why = "wants"
	}
	if u.Why != "prefers_other" && u.Won {
		u.Other, u.OtherCost, u.OtherLimit = nil, 0, 0
	}
	return u, nil
}
