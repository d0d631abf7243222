package exchange

import (
	"context"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"gorm.io/gorm"
)

// CloseEditing closes an open auction as Close does (stop bidding, solve from the
// read pool, run and settle in one transaction), with the solved result passed
// through edit first: tests use it to settle a result the engine gives only
// under options production never sets (the least-revenue fallback of the core
// payments). edit must leave the instance alone.
func (m *Market) CloseEditing(ctx context.Context, id int64, edit func(*auction.Result)) (AuctionRun, error) {
	if _, done, err := m.stopBidding(ctx, id); err != nil || done {
		return AuctionRun{}, clearhouse.Errorf(clearhouse.ECONFLICT, "auction %d: not open (%v)", id, err)
	}
	pre := m.presolve(ctx, id)
	if pre == nil {
		return AuctionRun{}, clearhouse.Errorf(clearhouse.EINTERNAL, "auction %d: nothing presolved", id)
	}
	edit(&pre.res)
	var run AuctionRun
	err := m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		a, err := lockAuction(tx, id)
		if err != nil {
			return err
		}
		run, err = m.bindingRun(ctx, tx, a, pre)
		return err
	})
	return run, err
}

// OpenOrders is openOrders, for tests.
func OpenOrders(db *gorm.DB, auctionID int64) ([]Order, error) { return openOrders(db, auctionID) }
