package exchange

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// Limits bound what one team may enter in one auction, so that no team can make an
// auction too large to close or a page too large to read. Operators set them.
type Limits struct {
	OpenOrdersPerTeam int // live orders (open or awaiting approval) per team and auction
	BundlesPerOrder   int // XOR alternatives of one order
	PoolsPerBundle    int // pools named in one bundle
}

// DefaultLimits are the limits a new market starts with.
var DefaultLimits = Limits{OpenOrdersPerTeam: 1000, BundlesPerOrder: 32, PoolsPerBundle: 32}

// The most an operator may set each limit to.
const (
	MaxOpenOrdersPerTeam = 100_000
	MaxPoolsPerBundle    = 256
)

type limitsRow struct {
	ID                int64
	OpenOrdersPerTeam int
	BundlesPerOrder   int
	PoolsPerBundle    int
}

func (limitsRow) TableName() string { return "market_limits" }

// Validate returns EINVALID naming the limit that is out of range.
func (l Limits) Validate() error {
	switch {
	case l.OpenOrdersPerTeam < 1 || l.OpenOrdersPerTeam > MaxOpenOrdersPerTeam:
		return clearhouse.Errorf(clearhouse.EINVALID, "open orders per team: must be from 1 to %d", MaxOpenOrdersPerTeam)
	case l.BundlesPerOrder < 1 || l.BundlesPerOrder > MaxBundles:
		return clearhouse.Errorf(clearhouse.EINVALID, "bundles per order: must be from 1 to %d", MaxBundles)
	case l.PoolsPerBundle < 1 || l.PoolsPerBundle > MaxPoolsPerBundle:
		return clearhouse.Errorf(clearhouse.EINVALID, "pools per bundle: must be from 1 to %d", MaxPoolsPerBundle)
	}
	return nil
}

// Limits returns the market's current limits.
func (m *Market) Limits(ctx context.Context) (Limits, error) {
	return limitsIn(m.db.Read.WithContext(ctx))
}

func limitsIn(tx *gorm.DB) (Limits, error) {
	var r limitsRow
	if err := tx.Take(&r, "id = 1").Error; err != nil {
		return Limits{}, err
	}
	return Limits{OpenOrdersPerTeam: r.OpenOrdersPerTeam, BundlesPerOrder: r.BundlesPerOrder, PoolsPerBundle: r.PoolsPerBundle}, nil
}

// SetLimits changes the market's limits (EINVALID when one is out of range). Orders
// already entered stay; the limits apply to new ones.
func (m *Market) SetLimits(ctx context.Context, l Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var before limitsRow
		if err := tx.Take(&before, "id = 1").Error; err != nil {
			return err
		}
		if err := tx.Exec(`UPDATE market_limits SET open_orders_per_team = ?, bundles_per_order = ?,
		pools_per_bundle = ?, updated_at = ? WHERE id = 1`, l.OpenOrdersPerTeam, l.BundlesPerOrder, l.PoolsPerBundle, m.now()).Error; err != nil {
			return err
		}
		return m.record(ctx, tx, "market.limits", "market", limitsState(before.OpenOrdersPerTeam, before.BundlesPerOrder, before.PoolsPerBundle),
			limitsState(l.OpenOrdersPerTeam, l.BundlesPerOrder, l.PoolsPerBundle))
	})
}

func limitsState(orders, bundles, pools int) map[string]int {
	return map[string]int{"open_orders_per_team": orders, "bundles_per_order": bundles, "pools_per_bundle": pools}
}

// checkLimits refuses, inside tx, an order that would break the limits: EINVALID
// for its shape, EUNPROCESSABLE when the team already has as many live orders in
// the auction as it may. The caller holds the team's row, so concurrent orders of
// one team are counted one after another.
func checkLimits(tx *gorm.DB, spec OrderSpec, team string, auctionID int64) error {
	var r struct {
		OpenOrdersPerTeam, BundlesPerOrder, PoolsPerBundle int
		Live                                               int64
		Clash                                              *int64
	}
	// The limits, the team's live orders and whether one of them is on the other side
	// of a pool this order trades (checkOneSide) in one statement: placing an order is
	// the market's busiest write.
	live := []any{OrderOpen, OrderAwaitingApproval}
	clash, args := "NULL", append([]any{team, auctionID}, live...)
	buys, sells := oneSidePools(spec)
	if len(buys)+len(sells) <= chunkSize {
		var conds []string
		if len(buys) > 0 { // only live offers set quota aside (verify checks it): a few rows, not the team's bids
			conds = append(conds, `EXISTS (SELECT 1 FROM quota_holds q JOIN orders o ON o.id = q.order_id
				WHERE q.team_id = ? AND q.pool_id IN `+store.In(len(buys))+` AND o.auction_id = ?)`)
			args = append(append(append(args, team), anys(buys)...), auctionID)
		}
		if len(sells) > 0 {
			conds = append(conds, `EXISTS (SELECT 1 FROM order_items i JOIN orders o ON o.id = i.order_id
				WHERE o.team_id = ? AND o.auction_id = ? AND o.status IN (?, ?) AND i.pool_id IN `+store.In(len(sells))+` AND i.quantity > 0)`)
			args = append(append(append(args, team, auctionID), live...), anys(sells)...)
		}
		if len(conds) > 0 {
			clash = "CASE WHEN " + strings.Join(conds, " OR ") + " THEN 1 END"
		}
	} else {
		clash = "0" // too many pools for one statement: checkOneSide looks
	}
	// Scanned without reflection, as a statement kept prepared on SQLite's writer.
	if err := store.ScanRow(tx, `SELECT l.open_orders_per_team, l.bundles_per_order, l.pools_per_bundle,
		(SELECT COUNT(*) FROM orders o WHERE o.team_id = ? AND o.auction_id = ? AND o.status IN (?, ?)) AS live,
		`+clash+` AS clash
		FROM market_limits l WHERE l.id = 1`, args, &r.OpenOrdersPerTeam, &r.BundlesPerOrder, &r.PoolsPerBundle, &r.Live, &r.Clash); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return errors.New("exchange: the market's limits are missing (migration 00007)")
		}
		return err
	}
	if r.OpenOrdersPerTeam == 0 {
		return errors.New("exchange: the market's limits are missing (migration 00007)")
	}
	l := Limits{OpenOrdersPerTeam: r.OpenOrdersPerTeam, BundlesPerOrder: r.BundlesPerOrder, PoolsPerBundle: r.PoolsPerBundle}
	if err := l.check(spec, team, r.Live, auctionID); err != nil {
		return err
	}
	if r.Clash != nil {
		return checkOneSide(tx, spec, team, auctionID) // names the order and the pool
	}
	return nil
}

// check refuses an order of team that would break l when the team has live orders
// in the auction already (see checkLimits).
func (l Limits) check(spec OrderSpec, team string, live int64, auctionID int64) error {
	if len(spec.Bundles) > l.BundlesPerOrder {
		return clearhouse.Errorf(clearhouse.EINVALID, "bundles: at most %d alternatives per order, got %d", l.BundlesPerOrder, len(spec.Bundles))
	}
	for i, b := range spec.Bundles {
		if len(b) > l.PoolsPerBundle {
			return clearhouse.Errorf(clearhouse.EINVALID, "bundles[%d]: at most %d pools per bundle, got %d", i, l.PoolsPerBundle, len(b))
		}
	}
	if live >= int64(l.OpenOrdersPerTeam) {
		return clearhouse.Errorf(clearhouse.EUNPROCESSABLE,
			"orders: team %s already has %d live orders in auction %d, the most one team may have; withdraw some first", team, live, auctionID)
	}
	return nil
}
