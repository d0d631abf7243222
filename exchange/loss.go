package exchange

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/clearhouse/clearhouse/moneyfmt"
	"gorm.io/gorm"
)

// LossFacts is what an auction knows when it explains why an order got nothing.
type LossFacts struct {
	Prices map[string]float64 // the run's price per unit, dollars, by pool
	// ForSale is the most of each pool the auction had for sale: the operator's
	// supply plus, for each order selling the pool, the most any of its bundles
	// sells. nil: unknown (then no reason speaks of supply).
	ForSale map[string]int64
	// Taken lists, per pool, the orders the run gave units of it to; nil: unknown.
	Taken map[string][]Taker
	Units map[string]string // each pool's unit ("core"); nil: none named
	Final bool              // the binding run ("was"), not a preliminary one ("is")
}

// Taker is an order the run gave units of a pool to.
type Taker struct {
	OrderID int64
	Team    string
	Units   int64
}

// LossReason says, as what happened, why an order gets nothing at the facts'
// prices: every bundle needs more of some pool than the auction had for sale
// (short supply, or nothing offered); or its nearest feasible bundle (the one
// whose cost is least above its limit) costs more than its limit (with each
// pool's price); or that bundle was within its limit but a pool it buys sold out,
// to other teams or to the team's own orders (a same-team conflict); or, failing
// all of these, the units went to other orders. The notification of a settlement
// and the orders page both say it. "" when the order has no bundle.
func LossReason(spec OrderSpec, f LossFacts) string {
	if len(spec.Bundles) == 0 {
		return ""
	}
	prices, is := "current", "is"
	if f.Final {
		prices, is = "final", "was"
	}
	var short []string
	var feasible []int
	for k, b := range spec.Bundles {
		if why := shortOf(k, b, f); why != "" {
			short = append(short, why)
		} else {
			feasible = append(feasible, k)
		}
	}
	switch {
	case len(feasible) == 0 && len(short) == 1:
		return short[0] + ": no limit could have won it"
	case len(feasible) == 0:
		return "no bundle could be filled (" + strings.Join(short, "; ") + "): no limit could have won it"
	}
	best, bestK := math.Inf(1), -1
	for _, k := range feasible {
		if over := bundleCost(spec.Bundles[k], f.Prices) - spec.LimitOf(k).Dollars(); over < best {
			best, bestK = over, k
		}
	}
	b := spec.Bundles[bestK]
	pools := slices.Sorted(maps.Keys(b))
	cost := bundleCost(b, f.Prices)
	limit := spec.LimitOf(bestK)
	c, _ := moneyfmt.FromDollars(math.Abs(cost))
	if best > 5e-7 { // over its limit: prices and limits are whole micro-dollars, so by one at least
		detail := ""
		for i, p := range pools {
			if i == 0 {
				detail = " ("
			} else {
				detail += ", "
			}
			detail += fmt.Sprintf("%s of %s at %s", moneyfmt.Quantity(abs64(b[p]), unitOf(f, p)), p, moneyfmt.UnitPrice(f.Prices[p], unitOf(f, p)))
		}
		detail += ")"
		if limit < 0 {
			return fmt.Sprintf("at the %s prices bundle %d fetches %s%s, below the %s it asks", prices, bestK+1, moneyfmt.Exact(c), detail, moneyfmt.Exact(int64(-limit)))
		}
		return fmt.Sprintf("at the %s prices its nearest bundle (%d) costs %s%s, above its limit of %s", prices, bestK+1, moneyfmt.Exact(c), detail, moneyfmt.Exact(int64(limit)))
	}
	if why := soldOut(spec.Team, bestK, b, f, prices, is); why != "" {
		return why
	}
	return fmt.Sprintf("bundle %d %s within its limit at the %s prices, but the pools' units went to other orders at those prices", bestK+1, is, prices)
}

// shortOf says which pool bundle k needs more of than the auction had for sale,
// or "" when the auction had enough of each (or its supply is unknown).
func shortOf(k int, b Bundle, f LossFacts) string {
	if f.ForSale == nil {
		return ""
	}
	for _, p := range slices.Sorted(maps.Keys(b)) {
		q := b[p]
		if q <= 0 || q <= f.ForSale[p] {
			continue
		}
		need := fmt.Sprintf("bundle %d needs %s of %s", k+1, moneyfmt.Quantity(q, unitOf(f, p)), p)
		if f.ForSale[p] <= 0 {
			return need + "; nothing was offered there"
		}
		return fmt.Sprintf("%s; the auction had at most %s for sale", need, moneyfmt.Quantity(f.ForSale[p], unitOf(f, p)))
	}
	return ""
}

// soldOut says which pool bundle k buys the run gave away, leaving less than the
// bundle needs: to the team's own orders (named), or to other teams'. "" when no
// pool it buys ran out (or who took what is unknown).
func soldOut(team string, k int, b Bundle, f LossFacts, prices, is string) string {
	if f.Taken == nil || f.ForSale == nil {
		return ""
	}
	for _, p := range slices.Sorted(maps.Keys(b)) {
		q := b[p]
		if q <= 0 {
			continue
		}
		var taken, own int64
		var ownIDs []string
		for _, t := range f.Taken[p] {
			taken += t.Units
			if t.Team == team {
				own += t.Units
				ownIDs = append(ownIDs, fmt.Sprintf("#%d", t.OrderID))
			}
		}
		left := max(f.ForSale[p]-taken, 0)
		if left >= q {
			continue
		}
		u := unitOf(f, p)
		if own > 0 && left+own >= q {
			return fmt.Sprintf("bundle %d %s within its limit at the %s prices, but your team's own order %s took %s of the %s of %s for sale, leaving %s of the %s it needs: your team's orders competed for the same units",
				k+1, is, prices, strings.Join(ownIDs, ", "), moneyfmt.Quantity(own, u), moneyfmt.Quantity(f.ForSale[p], u), p, moneyfmt.Quantity(left, u), moneyfmt.Quantity(q, u))
		}
		return fmt.Sprintf("%s sold out: bundle %d %s within its limit at the %s prices, but other orders took %s of the %s for sale, leaving %s of the %s it needs",
			p, k+1, is, prices, moneyfmt.Quantity(taken, u), moneyfmt.Quantity(f.ForSale[p], u), moneyfmt.Quantity(left, u), moneyfmt.Quantity(q, u))
	}
	return ""
}

func unitOf(f LossFacts, pool string) string {
	if u := f.Units[pool]; u != "" {
		return u
	}
	return "unit"
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

// LossFactsOf returns what auction id's latest run knows to explain a loss: its
// prices, what it had for sale, and who it gave each pool's units to. ok is false
// when the auction has not run. Final is left false: the caller says which.
func (m *Market) LossFactsOf(ctx context.Context, id int64) (LossFacts, bool, error) {
	run, rps, ran, err := m.LatestRun(ctx, id)
	if err != nil || !ran {
		return LossFacts{}, false, err
	}
	db := m.db.Read.WithContext(ctx)
	f := LossFacts{Prices: make(map[string]float64, len(rps))}
	for _, p := range rps {
		f.Prices[p.PoolID] = p.Price
	}
	if f.ForSale, err = forSaleIn(db, id); err != nil {
		return f, true, err
	}
	if f.Units, err = poolUnits(db); err != nil {
		return f, true, err
	}
	var rows []struct {
		OrderID  int64
		TeamID   string
		PoolID   string
		Quantity int64
	}
	if err := db.Raw(`SELECT ro.order_id, o.team_id, oi.pool_id, oi.quantity
		FROM run_outcomes ro JOIN orders o ON o.id = ro.order_id
		JOIN order_items oi ON oi.order_id = ro.order_id AND oi.bundle_idx = ro.bundle_index
		WHERE ro.run_id = ? AND ro.bundle_index >= 0 AND oi.quantity > 0
		ORDER BY ro.order_id, oi.pool_id`, run.ID).Scan(&rows).Error; err != nil {
		return f, true, err
	}
	f.Taken = map[string][]Taker{}
	for _, r := range rows {
		f.Taken[r.PoolID] = append(f.Taken[r.PoolID], Taker{OrderID: r.OrderID, Team: r.TeamID, Units: r.Quantity})
	}
	return f, true, nil
}

// forSaleIn returns, per pool, the most auction id had for sale: the operator's
// supply plus, for each order taking part (open, won or lost) that sells the pool,
// the most any one of its bundles sells.
func forSaleIn(db *gorm.DB, id int64) (map[string]int64, error) {
	var rows []struct {
		PoolID string
		Units  int64
	}
	err := db.Raw(`SELECT pool_id, supply AS units FROM auction_pools WHERE auction_id = ? AND supply > 0
		UNION ALL SELECT i.pool_id, -MIN(i.quantity) AS units FROM order_items i JOIN orders o ON o.id = i.order_id
		WHERE o.auction_id = ? AND o.status IN ? AND i.quantity < 0 GROUP BY i.order_id, i.pool_id`,
		id, id, []OrderStatus{OrderOpen, OrderWon, OrderLost}).Scan(&rows).Error
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.PoolID] += r.Units
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
