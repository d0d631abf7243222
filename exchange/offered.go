package exchange

import (
	"context"
	"slices"
)

// OnOffer is what teams' open orders in an auction offer of one pool: quota set
// aside for sale, beyond the capacity no team holds.
type OnOffer struct {
	Units  int64 // quota set aside by open offers and trades selling the pool
	Orders int   // how many orders set it aside
	// LowestAsk is the least, per unit, that a plain offer (one bundle selling
	// only this pool) asks, in dollars; HasAsk is false when no offer is plain.
	LowestAsk float64
	HasAsk    bool
}

// OnOfferIn returns, per pool, the quota that open orders of auction id offer for
// sale and the lowest asking unit price among plain offers.
func (m *Market) OnOfferIn(ctx context.Context, id int64) (map[string]OnOffer, error) {
	db := m.db.Read.WithContext(ctx)
	var holds []quotaHold
	if err := db.Raw(`SELECT q.order_id, q.team_id, q.pool_id, q.quantity FROM quota_holds q JOIN orders o ON o.id = q.order_id
		WHERE o.auction_id = ? AND o.status = ? ORDER BY q.order_id`, id, OrderOpen).Scan(&holds).Error; err != nil {
		return nil, err
	}
	out := map[string]OnOffer{}
	var ids []int64
	for _, h := range holds {
		on := out[h.PoolID]
		on.Units += h.Quantity
		on.Orders++
		out[h.PoolID] = on
		if len(ids) == 0 || ids[len(ids)-1] != h.OrderID {
			ids = append(ids, h.OrderID)
		}
	}
	var orders []Order
	for part := range slices.Chunk(ids, chunkSize) {
		var os []Order
		if err := db.Where("id IN ?", part).Find(&os).Error; err != nil {
			return nil, err
		}
		orders = append(orders, os...)
	}
	views, err := loadViews(db, orders, false)
	if err != nil {
		return nil, err
	}
	for _, v := range views {
		if len(v.Spec.Bundles) != 1 || len(v.Spec.Bundles[0]) != 1 {
			continue
		}
		for pool, q := range v.Spec.Bundles[0] {
			if q >= 0 {
				continue
			}
			ask := -v.Spec.LimitOf(0).Dollars() / float64(-q)
			on := out[pool]
			if !on.HasAsk || ask < on.LowestAsk {
				on.LowestAsk, on.HasAsk = ask, true
			}
			out[pool] = on
		}
	}
	return out, nil
}

// SetAsideForSale returns, per pool, the quota that live offers have set aside
// for sale (open orders and those awaiting an owner). It is still held, and counts
// in the holdings ("Held by teams"), but its holders cannot use it meanwhile: the
// reservation scheduler counts a team's quota as its holding less this.
func (m *Market) SetAsideForSale(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		PoolID string
		Units  int64
	}
	if err := m.db.Read.WithContext(ctx).Raw(`SELECT pool_id, SUM(quantity) AS units FROM quota_holds GROUP BY pool_id`).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.PoolID] = r.Units
	}
	return out, nil
}
