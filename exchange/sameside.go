package exchange

import (
	"maps"
	"slices"

	"github.com/clearhouse/clearhouse"
	"gorm.io/gorm"
)

// checkOneSide refuses, inside tx, an order that would buy a pool the team's live
// orders in the auction sell, or sell a pool they buy: the team would only trade
// with itself and pay the spread. The caller holds the team's row (lock level 2),
// so two concurrent orders of one team, a bid and an offer of the same pool, are
// checked one after the other and cannot both pass. Returns EUNPROCESSABLE naming the
// pool and the other order. checkLimits calls it when its statement found a clash, or
// could not look for one in a single statement.
func checkOneSide(tx *gorm.DB, spec OrderSpec, team string, auctionID int64) error {
	buys, sells := oneSidePools(spec)
	for _, q := range []struct {
		pools []string
		cond  string
	}{{buys, "i.quantity < 0"}, {sells, "i.quantity > 0"}} {
		for part := range slices.Chunk(q.pools, chunkSize) {
			var rows []struct {
				OrderID  int64
				PoolID   string
				Quantity int64
			}
			if err := tx.Raw(`SELECT i.order_id, i.pool_id, i.quantity FROM order_items i JOIN orders o ON o.id = i.order_id
				WHERE o.team_id = ? AND o.auction_id = ? AND o.status IN ? AND i.pool_id IN ? AND `+q.cond+`
				ORDER BY i.order_id, i.pool_id LIMIT 1`, team, auctionID, []OrderStatus{OrderOpen, OrderAwaitingApproval}, part).
				Scan(&rows).Error; err != nil {
				return err
			}
			if len(rows) == 0 {
				continue
			}
			r := rows[0]
			if r.Quantity < 0 {
				return clearhouse.Errorf(clearhouse.EUNPROCESSABLE,
					"bundles: Your team's order #%d already sells %s in auction #%d; buying and selling the same pool in one auction only trades with yourself. Withdraw order #%d first.",
					r.OrderID, r.PoolID, auctionID, r.OrderID)
			}
			return clearhouse.Errorf(clearhouse.EUNPROCESSABLE,
				"bundles: Your team's order #%d already buys %s in auction #%d; selling and buying the same pool in one auction only trades with yourself. Withdraw order #%d first.",
				r.OrderID, r.PoolID, auctionID, r.OrderID)
		}
	}
	return nil
}

// oneSidePools returns, sorted, the pools an order buys in some bundle and the pools
// it sells in some bundle: a pool in both lists is bought in one alternative and sold
// in another.
func oneSidePools(spec OrderSpec) (buys, sells []string) {
	side := map[string]int8{} // bit 1: buys, bit 2: sells
	for _, b := range spec.Bundles {
		for pool, q := range b {
			if q > 0 {
				side[pool] |= 1
			} else {
				side[pool] |= 2
			}
		}
	}
	for _, pool := range slices.Sorted(maps.Keys(side)) {
		if side[pool]&1 != 0 {
			buys = append(buys, pool)
		}
		if side[pool]&2 != 0 {
			sells = append(sells, pool)
		}
	}
	return buys, sells
}
