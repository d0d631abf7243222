package exchange

import (
	"context"
	"time"

	"github.com/clearhouse/clearhouse"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// ReferencePrice is the fixed price per unit (micro-dollars) an operator compares a
// pool's auction prices with (the paper's Fig. 6 shows settlement prices over it).
type ReferencePrice struct {
	PoolID    string `gorm:"primaryKey"`
	Price     int64
	UpdatedAt time.Time
}

// SetReferencePrice sets a pool's reference fixed price per unit, in micro-dollars;
// 0 clears it. EINVALID for a negative price, ENOTFOUND for an unknown pool.
func (m *Market) SetReferencePrice(ctx context.Context, pool string, price int64) error {
	if price < 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "reference_price: must be a positive amount of dollars, or 0 for none")
	}
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := exists(tx, "pools", pool, "pool: no pool %q", pool); err != nil {
			return err
		}
		var old []ReferencePrice
		if err := tx.Where("pool_id = ?", pool).Limit(1).Find(&old).Error; err != nil {
			return err
		}
		before := int64(0)
		if len(old) == 1 {
			before = old[0].Price
		}
		if before == price {
			return nil // nothing changes
		}
		var err error
		if price == 0 {
			err = tx.Delete(&ReferencePrice{}, "pool_id = ?", pool).Error
		} else {
			err = tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "pool_id"}}, DoUpdates: clause.AssignmentColumns([]string{"price", "updated_at"})}).
				Create(&ReferencePrice{PoolID: pool, Price: price, UpdatedAt: m.now()}).Error
		}
		if err != nil {
			return err
		}
		return m.record(ctx, tx, "pool.reference_price", "pool:"+pool, map[string]int64{"price": before}, map[string]int64{"price": price})
	})
}

// ReferencePrices maps each pool that has a reference fixed price to it
// (micro-dollars per unit).
func (m *Market) ReferencePrices(ctx context.Context) (map[string]int64, error) {
	var rows []ReferencePrice
	if err := m.db.Read.WithContext(ctx).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.PoolID] = r.Price
	}
	return out, nil
}
