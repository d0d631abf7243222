package exchange

import (
	"context"
	"time"

	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// MeasuredUtilization tells the market each pool's utilization psi(r), the value
// that weights its reserve price: measured from what runs on the clusters, an
// operator's unexpired override, or held/capacity for a pool with no usage data
// (package fleet implements it). The market asks inside its own transaction, so
// the reserve prices an auction fixes when it opens and the values it reads commit
// together. Every value is in [0, 1]; a pool missing from the answer keeps the
// utilization stored on the pool.
type MeasuredUtilization interface {
	PoolUtilization(tx *gorm.DB, now time.Time) (map[string]float64, error)
}

// UseMeasuredUtilization makes reserve prices use u. Without it the market uses
// the utilization stored on each pool (as in tests of the market alone).
func (m *Market) UseMeasuredUtilization(u MeasuredUtilization) { m.measured = u }

// utilizationIn returns each pool's psi, inside tx: what the configured
// MeasuredUtilization says, else the pool's stored utilization.
func (m *Market) utilizationIn(tx *gorm.DB, pools []Pool) (map[string]float64, error) {
	out := make(map[string]float64, len(pools))
	for _, p := range pools {
		out[p.ID] = p.Utilization
	}
	if m.measured == nil {
		return out, nil
	}
	got, err := m.measured.PoolUtilization(tx, m.now())
	if err != nil {
		return nil, err
	}
	for id, u := range got {
		if _, ok := out[id]; ok && u >= 0 && u <= 1 {
			out[id] = u
		}
	}
	return out, nil
}

// Utilization returns each pool's psi now, as reserve prices use it.
func (m *Market) Utilization(ctx context.Context) (map[string]float64, error) {
	db := m.db.Read.WithContext(ctx)
	var pools []Pool
	if err := db.Find(&pools).Error; err != nil {
		return nil, err
	}
	return m.utilizationIn(db, pools)
}

// recordTradeUtilization stores, inside a settlement's tx, each winning order's
// pools (rows of trade_utilization) with their utilization now and the side it
// took in each: bid where it bought, offer where it sold. Bulk inserts, no
// reflection per row: a large auction settles hundreds of thousands of orders.
func (m *Market) recordTradeUtilization(tx *gorm.DB, a Auction, views []OrderView, lines []SettlementLine) error {
	var pools []Pool
	if err := tx.Find(&pools).Error; err != nil {
		return err
	}
	util, err := m.utilizationIn(tx, pools)
	if err != nil {
		return err
	}
	resource := make(map[string]string, len(pools))
	for _, p := range pools {
		resource[p.ID] = p.Resource
	}
	byID := make(map[int64]OrderView, len(views))
	for _, v := range views {
		byID[v.ID] = v
	}
	var rows [][]any
	for _, l := range lines {
		v, ok := byID[l.OrderID]
		if l.BundleIndex < 0 || !ok || l.BundleIndex >= len(v.Spec.Bundles) {
			continue
		}
		for pool, q := range v.Spec.Bundles[l.BundleIndex] {
			side := "bid"
			if q < 0 {
				side = "offer"
			} else if q == 0 {
				continue
			}
			rows = append(rows, []any{a.ID, l.OrderID, pool, resource[pool], side, min(max(util[pool], 0), 1)})
		}
	}
	_, err = store.Insert(tx, "trade_utilization", []string{"auction_id", "order_id", "pool_id", "resource", "side", "utilization"}, rows, "")
	return err
}

// TradeUtilization is the utilization of the pool one settled trade bought or sold
// in, as it was when its auction settled.
type TradeUtilization struct {
	AuctionID   int64
	Resource    string
	Side        string // "bid" (bought) or "offer" (sold)
	Utilization float64
}

// TradeUtilizations lists the utilization of settled trades' pools in the last n
// settled auctions, by resource kind and side.
func (m *Market) TradeUtilizations(ctx context.Context, n int) ([]TradeUtilization, error) {
	var out []TradeUtilization
	err := m.db.Read.WithContext(ctx).Raw(`SELECT auction_id, resource, side, utilization FROM trade_utilization
		WHERE auction_id IN (SELECT id FROM auctions WHERE status = ? ORDER BY `+closedOrder+` LIMIT ?)
		ORDER BY resource, side, utilization`, AuctionSettled, n).Scan(&out).Error
	return out, err
}
