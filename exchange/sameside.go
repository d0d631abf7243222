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
// pool and the other order.
func checkOneSide(tx *gorm.DB, spec OrderSpec, team string, auctionID int64) error {
	side := map[string]int64{} // pool -> +1 buys, -1 sells, 2 both (within this order)
	for _, b := range spec.Bundles {
		for pool, q := range b {
			s := int64(1)
			if q < 0 {
				s = -1
			}
			if prev, ok := side[pool]; ok && prev != s {
				s = 2
			}
			side[pool] = s
		}
	}
	var rows []struct {
		OrderID  int64
		PoolID   string
		Quantity int64
	}
	pools := slices.Sorted(maps.Keys(side))
	for part := range slices.Chunk(pools, chunkSize) {
		if err := tx.Raw(`SELECT i.order_id, i.pool_id, i.quantity FROM order_items i JOIN orders o ON o.id = i.order_id
			WHERE o.team_id = ? AND o.auction_id = ? AND o.status IN ? AND i.pool_id IN ?
			ORDER BY i.order_id, i.pool_id`, team, auctionID, []OrderStatus{OrderOpen, OrderAwaitingApproval}, part).
			Scan(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			s := side[r.PoolID]
			switch {
			case r.Quantity < 0 && s != -1:
				return clearhouse.Errorf(clearhouse.EUNPROCESSABLE,
					"bundles: Your team's order #%d already sells %s in auction #%d; buying and selling the same pool in one auction only trades with yourself. Withdraw order #%d first.",
					r.OrderID, r.PoolID, auctionID, r.OrderID)
			case r.Quantity > 0 && s != 1:
				return clearhouse.Errorf(clearhouse.EUNPROCESSABLE,
					"bundles: Your team's order #%d already buys %s in auction #%d; selling and buying the same pool in one auction only trades with yourself. Withdraw order #%d first.",
					r.OrderID, r.PoolID, auctionID, r.OrderID)
			}
		}
	}
	return nil
}
