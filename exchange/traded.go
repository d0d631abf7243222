package exchange

import (
	"gorm.io/gorm"
)

// tradedUnits returns, for each of the runs and each pool, the units the run's
// winners buy there: what changed hands at the run's price. A pool missing from a
// run's map traded nothing, and its price is indicative only: where the clock
// stopped, paid by nobody.
func tradedUnits(db *gorm.DB, runIDs []int64) (map[int64]map[string]int64, error) {
	out := map[int64]map[string]int64{}
	if len(runIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		RunID  int64
		PoolID string
		Bought int64
	}
	err := db.Raw(`SELECT ro.run_id, oi.pool_id, SUM(oi.quantity) AS bought
		FROM run_outcomes ro JOIN order_items oi ON oi.order_id = ro.order_id AND oi.bundle_idx = ro.bundle_index
		WHERE ro.run_id IN ? AND ro.bundle_index >= 0 AND oi.quantity > 0
		GROUP BY ro.run_id, oi.pool_id`, runIDs).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if out[r.RunID] == nil {
			out[r.RunID] = map[string]int64{}
		}
		out[r.RunID][r.PoolID] = r.Bought
	}
	return out, nil
}

// Traded reports whether units changed hands at the price: otherwise it is
// indicative only.
func (p RunPrice) Traded() bool { return p.TradedUnits > 0 }

// Traded reports whether units changed hands at the price: otherwise it is
// indicative only, and charts leave it out.
func (p PricePoint) Traded() bool { return p.TradedUnits > 0 }
