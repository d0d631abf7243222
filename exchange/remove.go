package exchange

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/clearhouse/clearhouse"
	"gorm.io/gorm"
)

// poolDependents are the records that keep a pool: while any refers to it, removing
// it would rewrite the market's history or strand a team's quota.
var poolDependents = []struct{ table, where, reason string }{
	{"holdings", "pool_id = ? AND quantity > 0", "teams hold quota in it"},
	{"order_items", "pool_id = ?", "orders name it"},
	{"auction_pools", "pool_id = ?", "auctions have priced it"},
	{"capacity_changes", "pool_id = ?", "its cluster agent has reported capacity for it"},
}

// RemovePool deletes a pool nothing depends on, with its pricing policy and empty
// holdings. ENOTFOUND for an unknown pool; ECONFLICT, saying why, when teams hold
// quota in it, orders name it, auctions priced it or other records refer to it.
func (m *Market) RemovePool(ctx context.Context, id string) error {
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := lockPool(tx, id)
		if err != nil {
			return err
		}
		var why []string
		for _, d := range poolDependents {
			var n int64
			if err := tx.Table(d.table).Where(d.where, id).Count(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				why = append(why, d.reason)
			}
		}
		if len(why) > 0 {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "pool: %s cannot be removed: %s", id, strings.Join(why, "; "))
		}
		for _, table := range []string{"pool_policies", "reference_prices", "holdings", "pool_measured_capacity", "pool_capacity_overrides"} {
			if err := tx.Exec(fmt.Sprintf("DELETE FROM %s WHERE pool_id = ?", table), id).Error; err != nil {
				return err
			}
		}
		if err := bumpPlan(tx); err != nil {
			return err
		}
		if err := referencedConflict(tx.Exec("DELETE FROM pools WHERE id = ?", id).Error, "pool", id); err != nil {
			return err
		}
		return m.record(ctx, tx, "pool.remove", "pool:"+id, stateOf(p), nil)
	})
}

// RemoveCluster deletes a cluster that has no pools and nothing else refers to.
// ENOTFOUND for an unknown cluster; ECONFLICT, saying why, otherwise.
func (m *Market) RemoveCluster(ctx context.Context, id string) error {
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := exists(tx, "clusters", id, "cluster: no cluster %q", id); err != nil {
			return err
		}
		var pools []string
		if err := tx.Table("pools").Where("cluster_id = ?", id).Order("id").Pluck("id", &pools).Error; err != nil {
			return err
		}
		if len(pools) > 0 {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "cluster: %s cannot be removed: it has pools (%s); remove them first", id, strings.Join(pools, ", "))
		}
		var tokens int64
		if err := tx.Table("api_tokens").Where("cluster_id = ?", id).Count(&tokens).Error; err != nil {
			return err
		}
		if tokens > 0 {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "cluster: %s cannot be removed: its cluster agent has tokens", id)
		}
		if err := referencedConflict(tx.Exec("DELETE FROM clusters WHERE id = ?", id).Error, "cluster", id); err != nil {
			return err
		}
		return m.record(ctx, tx, "cluster.remove", "cluster:"+id, map[string]string{"id": id}, nil)
	})
}

// referencedConflict turns a foreign-key refusal into ECONFLICT naming what stays.
func referencedConflict(err error, what, id string) error {
	if err == nil {
		return nil
	}
	msg := strings.ToLower(err.Error())
	if errors.Is(err, gorm.ErrForeignKeyViolated) || strings.Contains(msg, "foreign key") {
		return clearhouse.Errorf(clearhouse.ECONFLICT, "%s: %s cannot be removed: other records (reservations, reports or history) refer to it", what, id)
	}
	return err
}
