package exchange

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"gorm.io/gorm"
)

// Order is a team's XOR bid or offer in one auction.
type Order struct {
	ID          int64
	TeamID      string
	AuctionID   *int64
	CreatedBy   int64
	Status      OrderStatus
	SharedLimit *int64 // micro-dollars, when one limit covers every bundle
	HoldID      *int64 // the ledger hold on the team's budget while the order is live
	Note        string
	IdemKey     *string // the client's Idempotency-Key, when it gave one
	IdemDigest  string
	DecidedBy   *int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

type orderBundle struct {
	OrderID     int64
	Idx         int
	BundleLimit *int64
}

func (orderBundle) TableName() string { return "order_bundles" }

type orderItem struct {
	OrderID   int64
	BundleIdx int
	PoolID    string
	Quantity  int64
}

func (orderItem) TableName() string { return "order_items" }

type quotaHold struct {
	OrderID  int64
	TeamID   string
	PoolID   string
	Quantity int64
}

func (quotaHold) TableName() string { return "quota_holds" }

// OrderView is an order with its bundles and limits, as pages and the API show it.
type OrderView struct {
	Order
	Spec OrderSpec
	// Provisional is the latest preliminary run's outcome for an open order: the
	// bundle it would win (-1 for none) and what it would pay. Nil before any run.
	Provisional *Outcome
}

// Outcome is one order's result in an auction run.
type Outcome struct {
	RunID       int64
	BundleIndex int     // -1 when the order gets nothing
	Payment     float64 // dollars at the run's prices; negative receives
}

// PlaceOrder enters an order for spec.Team by user, attached to the auction taking
// bids. It holds the most the order could pay on the team's budget and the quota
// each alternative would sell. An order that could pay more than the team's
// approval threshold waits for an owner unless an owner placed it. Returns
// EINVALID for a bad spec, ENOTFOUND for unknown pools, ECONFLICT when no auction is
// taking bids, and EUNPROCESSABLE when the budget or quota does not cover the holds.
// Nothing is saved when it fails.
func (m *Market) PlaceOrder(ctx context.Context, by User, spec OrderSpec) (Order, error) {
	if err := spec.Validate(); err != nil {
		return Order{}, err
	}
	if by.Role.OnTeam() && by.TeamID != spec.Team {
		return Order{}, clearhouse.Errorf(clearhouse.EFORBIDDEN, "team: you act for team %s, not %s", by.TeamID, spec.Team)
	}
	var o Order
	digest := spec.digest(by.ID)
	err := m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if spec.Key != "" {
			var prior Order
			err := tx.Where("idem_key = ?", spec.Key).Take(&prior).Error
			if err == nil {
				if prior.IdemDigest != digest {
					return clearhouse.Errorf(clearhouse.ECONFLICT, "idempotency key: %q was used for a different order", spec.Key)
				}
				o = prior
				return nil
			} else if !errors.Is(err, gorm.ErrRecordNotFound) {
				return err
			}
		}
		team, err := teamIn(tx, spec.Team)
		if err != nil {
			return err
		}
		if err := poolsExist(tx, spec); err != nil {
			return err
		}
		a, err := biddingAuction(tx, m.now())
		if err != nil {
			return err
		}
		now := m.now()
		o = Order{TeamID: team.ID, AuctionID: &a.ID, CreatedBy: by.ID, Status: OrderOpen, CreatedAt: now, UpdatedAt: now, IdemDigest: digest}
		if spec.Key != "" {
			o.IdemKey = &spec.Key
		}
		if team.ApprovalThreshold > 0 && int64(spec.MaxPayment()) > team.ApprovalThreshold && by.Role != RoleOwner {
			o.Status = OrderAwaitingApproval
		}
		if spec.Limit != nil {
			l := int64(*spec.Limit)
			o.SharedLimit = &l
		}
		if err := tx.Omit("ID").Create(&o).Error; err != nil {
			return err
		}
		for k, b := range spec.Bundles {
			ob := orderBundle{OrderID: o.ID, Idx: k}
			if spec.Limits != nil {
				l := int64(spec.Limits[k])
				ob.BundleLimit = &l
			}
			if err := tx.Create(&ob).Error; err != nil {
				return err
			}
			for pool, q := range b {
				if err := tx.Create(&orderItem{OrderID: o.ID, BundleIdx: k, PoolID: pool, Quantity: q}).Error; err != nil {
					return err
				}
			}
		}
		if err := m.holdQuota(tx, o, spec); err != nil {
			return err
		}
		if pay := spec.MaxPayment(); pay > 0 {
			h, err := m.ledger.WithTx(tx).PlaceHold(ctx, fmt.Sprintf("order/%d/hold", o.ID), ledger.TeamAccount(team.ID), pay, orderRef(o.ID))
			if err != nil {
				return err
			}
			o.HoldID = &h.ID
			if err := tx.Model(&o).Update("hold_id", h.ID).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Order{}, err
	}
	return o, nil
}

func orderRef(id int64) string { return fmt.Sprintf("order:%d", id) }

// holdQuota sets aside, per pool, the most quota any alternative of the order
// sells, out of what the team holds and has not already set aside.
func (m *Market) holdQuota(tx *gorm.DB, o Order, spec OrderSpec) error {
	need := spec.QuotaToHold()
	pools := make([]string, 0, len(need))
	for p := range need {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	for _, pool := range pools {
		var held, set int64
		if err := tx.Table("holdings").Where("team_id = ? AND pool_id = ?", o.TeamID, pool).Select("COALESCE(SUM(quantity), 0)").Scan(&held).Error; err != nil {
			return err
		}
		if err := tx.Table("quota_holds").Where("team_id = ? AND pool_id = ?", o.TeamID, pool).Select("COALESCE(SUM(quantity), 0)").Scan(&set).Error; err != nil {
			return err
		}
		inUse, err := quotaInUse(tx, o.TeamID, pool, held-set, m.now())
		if err != nil {
			return err
		}
		if held-set-inUse < need[pool] {
			return clearhouse.Errorf(clearhouse.EUNPROCESSABLE,
				"bundles: team %s can offer at most %d units of %s (it holds %d, %d already offered, %d needed by its accepted reservations), not %d",
				o.TeamID, max(held-set-inUse, 0), pool, held, set, inUse, need[pool])
		}
		if err := bumpPlan(tx); err != nil { // offered quota leaves the team's plan
			return err
		}
		if err := tx.Create(&quotaHold{OrderID: o.ID, TeamID: o.TeamID, PoolID: pool, Quantity: need[pool]}).Error; err != nil {
			return err
		}
	}
	return nil
}

func teamIn(tx *gorm.DB, id string) (Team, error) {
	var t Team
	err := tx.Take(&t, "id = ?", id).Error
	return t, notFound(err, "team: no team %q", id)
}

func poolsExist(tx *gorm.DB, spec OrderSpec) error {
	want := map[string]bool{}
	for _, b := range spec.Bundles {
		for p := range b {
			want[p] = true
		}
	}
	ids := make([]string, 0, len(want))
	for p := range want {
		ids = append(ids, p)
	}
	sort.Strings(ids)
	var found []string
	if err := tx.Table("pools").Where("id IN ?", ids).Pluck("id", &found).Error; err != nil {
		return err
	}
	have := map[string]bool{}
	for _, p := range found {
		have[p] = true
	}
	for _, p := range ids {
		if !have[p] {
			return clearhouse.Errorf(clearhouse.ENOTFOUND, "bundles: no pool %q", p)
		}
	}
	return nil
}

// releaseOrder frees an order's money hold and quota holds and sets its final
// status, inside tx.
func (m *Market) releaseOrder(ctx context.Context, tx *gorm.DB, o Order, status OrderStatus, why string) error {
	if o.HoldID != nil {
		if err := m.ledger.WithTx(tx).ReleaseHold(ctx, fmt.Sprintf("order/%d/release", o.ID), *o.HoldID); err != nil {
			return err
		}
	}
	if err := bumpPlan(tx); err != nil { // quota set aside for offers returns to the team's plan
		return err
	}
	if err := tx.Where("order_id = ?", o.ID).Delete(&quotaHold{}).Error; err != nil {
		return err
	}
	return tx.Model(&Order{}).Where("id = ?", o.ID).Updates(map[string]any{"status": status, "updated_at": m.now()}).Error
}

// liveOrder loads an order for a change by user, inside tx: the user must act for
// its team (or be an operator), and the order must still be live.
func liveOrder(tx *gorm.DB, by User, id int64) (Order, error) {
	var o Order
	if err := tx.Take(&o, "id = ?", id).Error; err != nil {
		return Order{}, notFound(err, "order: no order %d", id)
	}
	if by.Role.OnTeam() && by.TeamID != o.TeamID {
		return Order{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "order: no order %d", id)
	}
	if !o.Status.Live() {
		return Order{}, clearhouse.Errorf(clearhouse.ECONFLICT, "order: order %d is already %s", id, o.Status)
	}
	return o, nil
}

// WithdrawOrder withdraws a live order while its auction still takes bids, and
// releases its holds. Returns ENOTFOUND for another team's order and ECONFLICT when
// the order is final or its auction is closing.
func (m *Market) WithdrawOrder(ctx context.Context, by User, id int64) error {
	if !by.Role.OnTeam() {
		return clearhouse.Errorf(clearhouse.EFORBIDDEN, "only the team's members withdraw its orders")
	}
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		o, err := liveOrder(tx, by, id)
		if err != nil {
			return err
		}
		if err := auctionTakesBids(tx, o.AuctionID); err != nil {
			return err
		}
		return m.releaseOrder(ctx, tx, o, OrderWithdrawn, "withdrawn")
	})
}

// DecideOrder approves or rejects an order awaiting approval. Only an owner of the
// order's team decides. A rejected order's holds are released.
func (m *Market) DecideOrder(ctx context.Context, by User, id int64, approve bool) error {
	if by.Role != RoleOwner {
		return clearhouse.Errorf(clearhouse.EFORBIDDEN, "only a team owner approves orders")
	}
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		o, err := liveOrder(tx, by, id)
		if err != nil {
			return err
		}
		if o.Status != OrderAwaitingApproval {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "order: order %d is %s, not awaiting approval", id, o.Status)
		}
		if err := auctionTakesBids(tx, o.AuctionID); err != nil {
			return err
		}
		if err := tx.Model(&Order{}).Where("id = ?", id).Update("decided_by", by.ID).Error; err != nil {
			return err
		}
		if !approve {
			return m.releaseOrder(ctx, tx, o, OrderRejected, "rejected")
		}
		return tx.Model(&Order{}).Where("id = ?", id).Updates(map[string]any{"status": OrderOpen, "updated_at": m.now()}).Error
	})
}

// OrderFilter selects orders to list.
type OrderFilter struct {
	Team      string
	AuctionID int64
	Statuses  []OrderStatus
	Limit     int
}

// Orders lists orders, newest first, with their bundles and provisional outcomes.
func (m *Market) Orders(ctx context.Context, f OrderFilter) ([]OrderView, error) {
	q := m.db.Read.WithContext(ctx).Order("id DESC")
	if f.Team != "" {
		q = q.Where("team_id = ?", f.Team)
	}
	if f.AuctionID != 0 {
		q = q.Where("auction_id = ?", f.AuctionID)
	}
	if len(f.Statuses) > 0 {
		q = q.Where("status IN ?", f.Statuses)
	}
	if f.Limit > 0 {
		q = q.Limit(f.Limit)
	}
	var os []Order
	if err := q.Find(&os).Error; err != nil {
		return nil, err
	}
	return m.views(ctx, m.db.Read.WithContext(ctx), os)
}

// Order returns one order as user may see it (ENOTFOUND for another team's).
func (m *Market) Order(ctx context.Context, by User, id int64) (OrderView, error) {
	var o Order
	if err := m.db.Read.WithContext(ctx).Take(&o, "id = ?", id).Error; err != nil {
		return OrderView{}, notFound(err, "order: no order %d", id)
	}
	if by.Role.OnTeam() && by.TeamID != o.TeamID {
		return OrderView{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "order: no order %d", id)
	}
	vs, err := m.views(ctx, m.db.Read.WithContext(ctx), []Order{o})
	if err != nil {
		return OrderView{}, err
	}
	return vs[0], nil
}

// views loads the bundles and latest provisional outcome of each order.
func (m *Market) views(_ context.Context, db *gorm.DB, os []Order) ([]OrderView, error) {
	if len(os) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(os))
	for i, o := range os {
		ids[i] = o.ID
	}
	var bundles []orderBundle
	if err := db.Where("order_id IN ?", ids).Order("order_id, idx").Find(&bundles).Error; err != nil {
		return nil, err
	}
	var items []orderItem
	if err := db.Where("order_id IN ?", ids).Find(&items).Error; err != nil {
		return nil, err
	}
	type latest struct {
		OrderID     int64
		RunID       int64
		BundleIndex int
		Payment     float64
	}
	var outs []latest
	if err := db.Raw(`SELECT o.order_id, o.run_id, o.bundle_index, o.payment FROM run_outcomes o
		WHERE o.order_id IN ? AND o.run_id = (SELECT MAX(run_id) FROM run_outcomes WHERE order_id = o.order_id)`, ids).
		Scan(&outs).Error; err != nil {
		return nil, err
	}
	byOrder := map[int64]*OrderView{}
	views := make([]OrderView, len(os))
	for i, o := range os {
		views[i] = OrderView{Order: o, Spec: OrderSpec{Team: o.TeamID}}
		if o.SharedLimit != nil {
			l := ledger.Money(*o.SharedLimit)
			views[i].Spec.Limit = &l
		}
		byOrder[o.ID] = &views[i]
	}
	for _, b := range bundles {
		v := byOrder[b.OrderID]
		v.Spec.Bundles = append(v.Spec.Bundles, Bundle{})
		if b.BundleLimit != nil {
			v.Spec.Limits = append(v.Spec.Limits, ledger.Money(*b.BundleLimit))
		}
	}
	for _, it := range items {
		v := byOrder[it.OrderID]
		if it.BundleIdx < len(v.Spec.Bundles) {
			v.Spec.Bundles[it.BundleIdx][it.PoolID] = it.Quantity
		}
	}
	for _, l := range outs {
		byOrder[l.OrderID].Provisional = &Outcome{RunID: l.RunID, BundleIndex: l.BundleIndex, Payment: l.Payment}
	}
	return views, nil
}

// OfferedQuota returns, per pool, the quota a team has set aside for its live
// offers.
func (m *Market) OfferedQuota(ctx context.Context, team string) (map[string]int64, error) {
	var rows []quotaHold
	if err := m.db.Read.WithContext(ctx).Where("team_id = ?", team).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.PoolID] += r.Quantity
	}
	return out, nil
}

// Interest counts, per pool, the live orders of an auction that would buy (bids)
// or sell (offers) in it with some alternative.
type Interest struct{ Bids, Offers int }

// OpenInterest returns each pool's open bids and offers in an auction.
func (m *Market) OpenInterest(ctx context.Context, auctionID int64) (map[string]Interest, error) {
	var rows []struct {
		PoolID string
		Side   int
		N      int
	}
	err := m.db.Read.WithContext(ctx).Raw(`SELECT i.pool_id, CASE WHEN i.quantity > 0 THEN 1 ELSE -1 END AS side, COUNT(DISTINCT i.order_id) AS n
		FROM order_items i JOIN orders o ON o.id = i.order_id
		WHERE o.auction_id = ? AND o.status IN ? GROUP BY i.pool_id, CASE WHEN i.quantity > 0 THEN 1 ELSE -1 END`,
		auctionID, []OrderStatus{OrderOpen, OrderAwaitingApproval}).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	out := map[string]Interest{}
	for _, r := range rows {
		in := out[r.PoolID]
		if r.Side > 0 {
			in.Bids += r.N
		} else {
			in.Offers += r.N
		}
		out[r.PoolID] = in
	}
	return out, nil
}
