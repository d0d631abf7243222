package exchange

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/clearhouse/clearhouse/moneyfmt"
	"gorm.io/gorm"
)

// LossFacts is what an auction knows when it explains why an order got nothing.
type LossFacts struct {
	Prices  map[string]float64 // the run's price per unit, dollars, by pool
	Offered map[string]bool    // pools in which anything was offered (operator supply or a team's sale); nil: unknown
	Units   map[string]string  // each pool's unit ("core"); nil: none named
	Final   bool               // the binding run ("was"), not a preliminary one ("is")
}

// LossReason says why an order gets nothing at the facts' prices, naming its
// nearest bundle (the one whose cost is least above its limit): nothing was offered
// in a pool it buys; or it costs more than its limit (with each pool's price); or it
// was within its limit and the units went to other orders. The notification of a
// settlement and the orders page both say it. "" when the order has no bundle.
func LossReason(spec OrderSpec, f LossFacts) string {
	best, bestK := math.Inf(1), -1
	for k, b := range spec.Bundles {
		if over := bundleCost(b, f.Prices) - spec.LimitOf(k).Dollars(); over < best {
			best, bestK = over, k
		}
	}
	if bestK < 0 {
		return ""
	}
	b := spec.Bundles[bestK]
	pools := slices.Sorted(maps.Keys(b))
	prices := "current"
	if f.Final {
		prices = "final"
	}
	if f.Offered != nil {
		for _, p := range pools {
			if b[p] > 0 && !f.Offered[p] {
				return fmt.Sprintf("nothing was offered in %s, which bundle %d buys", p, bestK+1)
			}
		}
	}
	cost := bundleCost(b, f.Prices)
	limit := spec.LimitOf(bestK)
	c, _ := moneyfmt.FromDollars(math.Abs(cost))
	if best > 1e-6 { // over its limit
		detail := ""
		for i, p := range pools {
			if i == 0 {
				detail = " ("
			} else {
				detail += ", "
			}
			unit := f.Units[p]
			if unit == "" {
				unit = "unit"
			}
			n := abs64(b[p])
			detail += fmt.Sprintf("%s of %s at %s", moneyfmt.Quantity(n, unit), p, moneyfmt.UnitPrice(f.Prices[p], unit))
		}
		detail += ")"
		if limit < 0 {
			return fmt.Sprintf("at the %s prices bundle %d fetches %s%s, below the %s it asks", prices, bestK+1, moneyfmt.Cents(c), detail, moneyfmt.Cents(int64(-limit)))
		}
		return fmt.Sprintf("at the %s prices its nearest bundle (%d) costs %s%s, above its limit of %s", prices, bestK+1, moneyfmt.Cents(c), detail, moneyfmt.Cents(int64(limit)))
	}
	is := "is"
	if f.Final {
		is = "was"
	}
	return fmt.Sprintf("bundle %d %s within its limit at the %s prices, but the pools' units went to other orders at those prices", bestK+1, is, prices)
}

func bundleCost(b Bundle, prices map[string]float64) float64 {
	cost := 0.0
	for pool, q := range b {
		cost += float64(q) * prices[pool]
	}
	return cost
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// OfferedIn returns the pools in which auction id offered anything: operator
// supply, or quota an order taking part (open, won or lost) sells.
func (m *Market) OfferedIn(ctx context.Context, id int64) (map[string]bool, error) {
	return offeredIn(m.db.Read.WithContext(ctx), id)
}

func offeredIn(db *gorm.DB, id int64) (map[string]bool, error) {
	var pools []string
	err := db.Raw(`SELECT pool_id FROM auction_pools WHERE auction_id = ? AND supply > 0
		UNION SELECT i.pool_id FROM order_items i JOIN orders o ON o.id = i.order_id
		WHERE o.auction_id = ? AND o.status IN ? AND i.quantity < 0`,
		id, id, []OrderStatus{OrderOpen, OrderWon, OrderLost}).Scan(&pools).Error
	out := make(map[string]bool, len(pools))
	for _, p := range pools {
		out[p] = true
	}
	return out, err
}

// poolUnits maps each pool to its unit.
func poolUnits(db *gorm.DB) (map[string]string, error) {
	var ps []Pool
	if err := db.Select("id", "unit").Find(&ps).Error; err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		out[p.ID] = p.Unit
	}
	return out, nil
}
