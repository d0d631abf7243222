package exchange

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/store"
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
	BundleIndex int      // -1 when the order gets nothing
	Payment     float64  // dollars at the run's prices; negative receives
	PaymentRule string   // the rule the payment follows (PaidCore, ...); "" when it gets nothing or not recorded
	VCGPayment  *float64 // a core payment's VCG payment in dollars, the least it could be; nil for no core payment or not recorded
}

// PlaceOrder enters an order for spec.Team by user, attached to the auction taking
// bids. It holds the most the order could pay on the team's budget and the quota
// each alternative would sell. An order that could pay more than the team's
// approval threshold waits for an owner unless an owner placed it. Returns
// EINVALID for a bad spec or one over the market's limits, ENOTFOUND for unknown
// pools, ECONFLICT when no auction is taking bids (or it is closing), and
// EUNPROCESSABLE when the budget or quota does not cover the holds, the team has
// as many live orders as it may, or the order would buy a pool the team's live
// orders in the auction sell (or sell one they buy). Nothing is saved when it fails.
//
// With spec.Key, placing is idempotent per team: the same key and order return the
// first order, also to concurrent requests on other servers (and also once the
// auction has closed); the same key with another order is ECONFLICT.
func (m *Market) PlaceOrder(ctx context.Context, by identity.User, spec OrderSpec) (Order, error) {
	if err := spec.Validate(); err != nil {
		return Order{}, err
	}
	if by.Role.OnTeam() && by.TeamID != spec.Team {
		return Order{}, clearhouse.Errorf(clearhouse.EFORBIDDEN, "team: you act for team %s, not %s", by.TeamID, spec.Team)
	}
	digest := spec.digest(by.ID)
	if o, ok, err := m.replayOrder(m.db.Write.WithContext(ctx), spec, digest); ok || err != nil {
		return o, err
	}
	// Pools are checked before the write, off the one writer on SQLite; a pool
	// removed in between fails the write on its foreign key.
	if err := poolsExist(m.db.Read.WithContext(ctx), spec); err != nil {
		return Order{}, err
	}
	if err := pricedNow(m.db.Read.WithContext(ctx), spec); err != nil {
		return Order{}, err
	}
	// On SQLite, concurrent placements share a commit, and most are checked and
	// written together (placeBatch); the others, and every placement on PostgreSQL,
	// run placeOrder.
	p := &placement{by: by, spec: spec, digest: digest}
	err := m.db.GroupedBatch(ctx, m.placer, p, func(tx *gorm.DB) error {
		var err error
		p.order, err = m.placeOrder(ctx, tx, by, spec, digest)
		return err
	})
	o := p.order
	if err != nil && spec.Key != "" && isDuplicate(err) {
		// A concurrent request with the same key committed first: answer as it did.
		if prior, ok, rerr := m.replayOrder(m.db.Write.WithContext(ctx), spec, digest); ok || rerr != nil {
			return prior, rerr
		}
	}
	if err != nil {
		return Order{}, err
	}
	m.interestChanged()
	return o, nil
}

// replayOrder finds the order placed earlier with spec's key by its team: ok when
// there is one with the same content, ECONFLICT when its content differs.
func (m *Market) replayOrder(db *gorm.DB, spec OrderSpec, digest string) (Order, bool, error) {
	if spec.Key == "" {
		return Order{}, false, nil
	}
	var prior Order
	err := db.Where("idem_key = ?", scopedKey(spec.Team, spec.Key)).Take(&prior).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Order{}, false, nil
	} else if err != nil {
		return Order{}, false, err
	}
	if prior.IdemDigest != digest {
		return Order{}, false, clearhouse.Errorf(clearhouse.ECONFLICT, "idempotency key: %q was used for a different order", spec.Key)
	}
	return prior, true, nil
}

// scopedKey is how an idempotency key is stored: behind its team, so that two
// teams' keys never collide.
func scopedKey(team, key string) string { return team + "/" + key }

// placeOrder is PlaceOrder's transaction, taking its locks in the package's order.
func (m *Market) placeOrder(ctx context.Context, tx *gorm.DB, by identity.User, spec OrderSpec, digest string) (Order, error) {
	now := m.now()
	a, err := biddingAuction(tx, now)
	if err != nil {
		return Order{}, err
	}
	// The statements below are the market's busiest: they run as statements kept
	// prepared on SQLite's writer and scan without gorm's reflection (store.Exec).
	var team Team
	if err := store.ScanRow(tx, "SELECT id, approval_threshold FROM teams WHERE id = ?"+forUpdate(tx), []any{spec.Team},
		&team.ID, &team.ApprovalThreshold); err != nil {
		return Order{}, notFound(err, "team: no team %q", spec.Team)
	}
	if err := checkLimits(tx, spec, team.ID, a.ID); err != nil {
		return Order{}, err
	}
	o := Order{TeamID: team.ID, AuctionID: &a.ID, CreatedBy: by.ID, Status: OrderOpen, CreatedAt: now, UpdatedAt: now, IdemDigest: digest}
	if spec.Key != "" {
		k := scopedKey(team.ID, spec.Key)
		o.IdemKey = &k
	}
	if team.ApprovalThreshold > 0 && int64(spec.MaxPayment()) > team.ApprovalThreshold && by.Role != identity.RoleOwner {
		o.Status = OrderAwaitingApproval
	}
	if spec.Limit != nil {
		l := int64(*spec.Limit)
		o.SharedLimit = &l
	}
	if err := store.ScanRow(tx, `INSERT INTO orders (team_id, auction_id, created_by, status, shared_limit, note, idem_key, idem_digest,
		created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		[]any{o.TeamID, o.AuctionID, o.CreatedBy, o.Status, o.SharedLimit, o.Note, o.IdemKey, o.IdemDigest, o.CreatedAt, o.UpdatedAt},
		&o.ID); err != nil {
		return Order{}, err
	}
	if err := insertBundles(tx, o.ID, spec); errors.Is(err, gorm.ErrForeignKeyViolated) {
		return Order{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "bundles: a pool of this order was removed just now")
	} else if err != nil {
		return Order{}, err
	}
	if err := m.holdQuota(tx, o, spec); err != nil {
		return Order{}, err
	}
	if o.Status == OrderAwaitingApproval {
		if err := m.notifyApproval(tx, o, by, spec); err != nil {
			return Order{}, err
		}
	}
	if pay := spec.MaxPayment(); pay > 0 {
		h, err := m.ledger.PlaceNewHold(tx, fmt.Sprintf("order/%d/hold", o.ID), ledger.TeamAccount(team.ID), pay, orderRef(o.ID))
		if err != nil {
			return Order{}, err
		}
		o.HoldID = &h.ID
		if _, err := store.Exec(tx, "UPDATE orders SET hold_id = ? WHERE id = ?", h.ID, o.ID); err != nil {
			return Order{}, err
		}
	}
	return o, nil
}

// insertBundles stores an order's bundles and their items, one multi-row
// statement each (placing an order is the market's busiest write).
func insertBundles(tx *gorm.DB, id int64, spec OrderSpec) error {
	bundles, items := bundleRows(nil, nil, id, spec)
	if _, err := store.Insert(tx, "order_bundles", bundleColumns, bundles, ""); err != nil {
		return err
	}
	_, err := store.Insert(tx, "order_items", itemColumns, items, "")
	return err
}

// The columns of order_bundles and order_items, in bundleRows' order.
var (
	bundleColumns = []string{"order_id", "idx", "bundle_limit"}
	itemColumns   = []string{"order_id", "bundle_idx", "pool_id", "quantity"}
)

// bundleRows appends the rows of order id's bundles and items to bundles and items.
func bundleRows(bundles, items [][]any, id int64, spec OrderSpec) ([][]any, [][]any) {
	for k, b := range spec.Bundles {
		var limit *int64
		if spec.Limits != nil {
			l := int64(spec.Limits[k])
			limit = &l
		}
		bundles = append(bundles, []any{id, k, limit})
		for _, pool := range slices.Sorted(maps.Keys(b)) {
			items = append(items, []any{id, k, pool, b[pool]})
		}
	}
	return bundles, items
}

// anys is vs as the arguments of a statement.
func anys[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

func orderRef(id int64) string { return fmt.Sprintf("order:%d", id) }

// holdQuota sets aside, per pool, the most quota any alternative of the order
// sells, out of what the team holds and has not already set aside. It locks the
// team's holdings of those pools first, so concurrent offers of one team cannot
// both take the same quota.
func (m *Market) holdQuota(tx *gorm.DB, o Order, spec OrderSpec) error {
	need := spec.QuotaToHold()
	if len(need) == 0 {
		return nil
	}
	pools := make([]string, 0, len(need))
	for p := range need {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	if err := lockHoldings(tx, o.TeamID, pools); err != nil {
		return err
	}
	for _, pool := range pools {
		var held, set int64
		if err := tx.Table("holdings").Where("team_id = ? AND pool_id = ?", o.TeamID, pool).Select("COALESCE(SUM(quantity), 0)").Scan(&held).Error; err != nil {
			return err
		}
		if err := tx.Table("quota_holds").Where("team_id = ? AND pool_id = ?", o.TeamID, pool).Select("COALESCE(SUM(quantity), 0)").Scan(&set).Error; err != nil {
			return err
		}
		inUse, err := m.committedQuota(tx, o.TeamID, pool, held-set)
		if err != nil {
			return err
		}
		if held-set-inUse < need[pool] {
			return clearhouse.Errorf(clearhouse.EUNPROCESSABLE,
				"bundles: team %s can offer at most %d units of %s (it holds %d, %d already offered, %d needed by its accepted reservations), not %d",
				o.TeamID, max(held-set-inUse, 0), pool, held, set, inUse, need[pool])
		}
	}
	if err := bumpPlan(tx); err != nil { // offered quota leaves the team's plan
		return err
	}
	for _, pool := range pools {
		if err := tx.Create(&quotaHold{OrderID: o.ID, TeamID: o.TeamID, PoolID: pool, Quantity: need[pool]}).Error; err != nil {
			return err
		}
	}
	return nil
}

// poolsExist returns ENOTFOUND for a bundle naming a pool that does not exist,
// and EINVALID, naming the pool's capacity, for a bundle buying more units than
// the pool has: no auction could ever supply them.
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
	type pool struct {
		ID       string
		Unit     string
		Capacity int64
	}
	var found []pool
	// Scanned without reflection, as a statement kept prepared: every placement reads it.
	err := store.QueryRows(tx, "SELECT id, unit, capacity FROM pools WHERE id IN "+store.In(len(ids)), anys(ids), func(rs *sql.Rows) error {
		var p pool
		err := rs.Scan(&p.ID, &p.Unit, &p.Capacity)
		found = append(found, p)
		return err
	})
	if err != nil {
		return err
	}
	have := map[string]int{}
	for i, p := range found {
		have[p.ID] = i
	}
	for _, p := range ids {
		if _, ok := have[p]; !ok {
			return clearhouse.Errorf(clearhouse.ENOTFOUND, "bundles: no pool %q", p)
		}
	}
	for i, b := range spec.Bundles {
		for _, p := range slices.Sorted(maps.Keys(b)) {
			if pool := found[have[p]]; b[p] > pool.Capacity {
				return clearhouse.Errorf(clearhouse.EINVALID, "bundles[%d][%s]: %s is more than the pool's whole capacity of %s; no auction could supply it",
					i, p, moneyfmt.Quantity(b[p], pool.Unit), moneyfmt.Quantity(pool.Capacity, pool.Unit))
			}
		}
	}
	return nil
}

// pricedNow returns ECONFLICT, naming the pool, for an order naming a pool that
// the auction taking bids does not sell: a pool added after it opened has no
// reserve price or supply in it (those are fixed when an auction opens), so no
// close could clear the order. Such a pool is sold from the next auction on.
//
// It reads from db (the read pool, off SQLite's one writer), after poolsExist: an
// auction that opens between this read and the placing write fixes the prices of
// every pool that existed before it opened, which includes the order's, so the
// write needs no second check.
func pricedNow(db *gorm.DB, spec OrderSpec) error {
	var a Auction
	err := store.ScanRow(db, "SELECT id, closes_at FROM auctions WHERE status = ? LIMIT 1", []any{AuctionOpen}, &a.ID, &a.ClosesAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // none open: the next to open prices every pool there is
	} else if err != nil {
		return err
	}
	return pricedIn(db, a, spec)
}

func pricedIn(tx *gorm.DB, a Auction, spec OrderSpec) error {
	want := map[string]bool{}
	for _, b := range spec.Bundles {
		for p := range b {
			want[p] = true
		}
	}
	ids := slices.Sorted(maps.Keys(want))
	var priced []string
	err := store.QueryRows(tx, "SELECT pool_id FROM auction_pools WHERE auction_id = ? AND pool_id IN "+store.In(len(ids)),
		append([]any{a.ID}, anys(ids)...), func(rs *sql.Rows) error {
			var p string
			err := rs.Scan(&p)
			priced = append(priced, p)
			return err
		})
	if err != nil {
		return err
	}
	if len(priced) == len(ids) {
		return nil
	}
	have := map[string]bool{}
	for _, p := range priced {
		have[p] = true
	}
	for _, p := range ids {
		if !have[p] {
			return clearhouse.Errorf(clearhouse.ECONFLICT,
				"bundles: pool %s was added after auction #%d opened, so this auction does not sell it; it is sold from the next auction on (this one closes %s)",
				p, a.ID, a.ClosesAt.Format("2006-01-02 15:04 MST"))
		}
	}
	return nil
}

// releaseOrder frees a live order's money hold and quota holds and moves it to a
// final status, inside tx, which holds the order's row (and its auction's, shared).
func (m *Market) releaseOrder(ctx context.Context, tx *gorm.DB, o Order, status OrderStatus) error {
	if err := setStatus(tx, []int64{o.ID}, []OrderStatus{OrderOpen, OrderAwaitingApproval, OrderDraft}, status, m.now()); err != nil {
		return err
	}
	var offered int64
	if err := tx.Model(&quotaHold{}).Where("order_id = ?", o.ID).Count(&offered).Error; err != nil {
		return err
	}
	if offered > 0 {
		if err := bumpPlan(tx); err != nil { // quota set aside for the offer returns to the team's plan
			return err
		}
		if err := tx.Where("order_id = ?", o.ID).Delete(&quotaHold{}).Error; err != nil {
			return err
		}
	}
	if o.HoldID != nil {
		return m.ledger.WithTx(tx).ReleaseHold(ctx, fmt.Sprintf("order/%d/%s", o.ID, status), *o.HoldID)
	}
	return nil
}

// changeOrder runs fn on a live order of by's team inside one transaction, after
// taking the locks of the package's order: the order's auction (shared), then the
// order. It refuses an order of another team (ENOTFOUND), a final one, and one
// whose auction is closing or whose bid window has ended (ECONFLICT); when
// halted is true (a withdrawal), an order of a halted auction is let through.
func (m *Market) changeOrder(ctx context.Context, by identity.User, id int64, halted bool, fn func(tx *gorm.DB, o Order) error) error {
	defer m.interestChanged()
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var peek Order
		if err := tx.Take(&peek, "id = ?", id).Error; err != nil {
			return notFound(err, "order: no order %d", id)
		}
		if by.Role.OnTeam() && by.TeamID != peek.TeamID {
			return clearhouse.Errorf(clearhouse.ENOTFOUND, "order: no order %d", id)
		}
		if peek.AuctionID != nil {
			a, err := shareAuction(tx, *peek.AuctionID)
			if err != nil {
				return err
			}
			switch {
			case halted && a.Halted(): // its close failed: its orders may leave it
			case a.Status != AuctionOpen:
				if !peek.Status.Live() {
					return clearhouse.Errorf(clearhouse.ECONFLICT, "order: order %d is already %s", id, peek.Status)
				}
				return closingError(a)
			case !m.now().Before(a.ClosesAt):
				return clearhouse.Errorf(clearhouse.ECONFLICT, "auction %d stopped taking changes at %s; its orders can no longer change",
					a.ID, a.ClosesAt.Format("2006-01-02 15:04 MST"))
			}
		}
		o, err := lockOrder(tx, id)
		if err != nil {
			return err
		}
		if !o.Status.Live() {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "order: order %d is already %s", id, o.Status)
		}
		return fn(tx, o)
	})
}

// WithdrawOrder withdraws a live order while its auction still takes bids, or
// while its auction is halted (its close failed), and releases its holds. Returns
// ENOTFOUND for another team's order and ECONFLICT when the order is final, its
// auction is closing or its bid window has ended.
func (m *Market) WithdrawOrder(ctx context.Context, by identity.User, id int64) error {
	if !by.Role.OnTeam() {
		return clearhouse.Errorf(clearhouse.EFORBIDDEN, "only the team's members withdraw its orders")
	}
	return m.changeOrder(ctx, by, id, true, func(tx *gorm.DB, o Order) error {
		return m.releaseOrder(ctx, tx, o, OrderWithdrawn)
	})
}

// DecideOrder approves or rejects an order awaiting approval. Only an owner of the
// order's team decides. A rejected order's holds are released. ECONFLICT as for
// WithdrawOrder, and for an order not awaiting approval.
func (m *Market) DecideOrder(ctx context.Context, by identity.User, id int64, approve bool) error {
	if by.Role != identity.RoleOwner {
		return clearhouse.Errorf(clearhouse.EFORBIDDEN, "only a team owner approves orders")
	}
	return m.changeOrder(ctx, by, id, false, func(tx *gorm.DB, o Order) error {
		if o.Status != OrderAwaitingApproval {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "order: order %d is %s, not awaiting approval", id, o.Status)
		}
		if err := tx.Model(&Order{}).Where("id = ?", id).Update("decided_by", by.ID).Error; err != nil {
			return err
		}
		if err := m.notifyDecision(tx, o, by, approve); err != nil {
			return err
		}
		action, after := "order.approve", OrderOpen
		if !approve {
			action, after = "order.reject", OrderRejected
			if err := m.releaseOrder(ctx, tx, o, OrderRejected); err != nil {
				return err
			}
		} else if err := setStatus(tx, []int64{id}, []OrderStatus{OrderAwaitingApproval}, OrderOpen, m.now()); err != nil {
			return err
		}
		return m.record(ctx, tx, action, fmt.Sprintf("order:%d", id), map[string]any{"status": o.Status, "team": o.TeamID},
			map[string]any{"status": after, "team": o.TeamID, "decided_by": by.ID})
	})
}

// OrderFilter selects orders to list.
type OrderFilter struct {
	Team      string
	AuctionID int64
	Statuses  []OrderStatus
	Before    int64 // only orders with a smaller id: the next page after the order Before
	Limit     int
}

// MaxPage is the most orders one page lists.
const MaxPage = 500

// OrderPage lists one page of orders, newest first, with their bundles and
// provisional outcomes: at most f.Limit (1 to MaxPage; 50 when zero). next is the
// Before of the following page, or 0 when this is the last.
func (m *Market) OrderPage(ctx context.Context, f OrderFilter) (orders []OrderView, next int64, err error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	f.Limit = min(f.Limit, MaxPage)
	want := f.Limit
	f.Limit++
	vs, err := m.Orders(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	if len(vs) > want {
		vs = vs[:want]
		next = vs[want-1].ID
	}
	return vs, next, nil
}

// Orders lists orders, newest first, with their bundles and provisional outcomes.
func (m *Market) Orders(ctx context.Context, f OrderFilter) ([]OrderView, error) {
	q := m.db.Read.WithContext(ctx).Order("id DESC")
	if f.Before > 0 {
		q = q.Where("id < ?", f.Before)
	}
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
func (m *Market) Order(ctx context.Context, by identity.User, id int64) (OrderView, error) {
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

// views loads the bundles and latest provisional outcome of each order, in
// chunks, so any number of orders is fine.
func (m *Market) views(_ context.Context, db *gorm.DB, os []Order) ([]OrderView, error) {
	return loadViews(db, os, true)
}

// loadViews loads the orders' bundles and, with provisional, each one's latest
// run outcome.
func loadViews(db *gorm.DB, os []Order, provisional bool) ([]OrderView, error) {
	if len(os) == 0 {
		return nil, nil
	}
	byOrder := make(map[int64]*OrderView, len(os))
	views := make([]OrderView, len(os))
	ids := make([]int64, len(os))
	for i, o := range os {
		ids[i] = o.ID
		views[i] = OrderView{Order: o, Spec: OrderSpec{Team: o.TeamID}}
		if o.SharedLimit != nil {
			l := ledger.Money(*o.SharedLimit)
			views[i].Spec.Limit = &l
		}
		byOrder[o.ID] = &views[i]
	}
	pools := map[string]string{} // one copy of each pool id
	per, in, array := chunkSize, "IN ?", db.Dialector.Name() == store.Postgres
	if array {
		// One array parameter for all: an IN list of a thousand parameters took
		// PostgreSQL 160 ms a statement on order_bundles (16 s for 100,000 orders).
		per, in = max(len(ids), 1), "= ANY(CAST(? AS BIGINT[]))"
	}
	for part := range slices.Chunk(ids, per) {
		var arg any = part
		if array {
			arg = store.BigintArray(part)
		}
		// Scanned row by row rather than through gorm's reflection: settling an
		// auction of 100,000 orders reads them all twice.
		err := scanRows(db.Raw("SELECT order_id, bundle_limit FROM order_bundles WHERE order_id "+in+" ORDER BY order_id, idx", arg), func(rs *sql.Rows) error {
			var b orderBundle
			if err := rs.Scan(&b.OrderID, &b.BundleLimit); err != nil {
				return err
			}
			v := byOrder[b.OrderID]
			v.Spec.Bundles = append(v.Spec.Bundles, Bundle{})
			if b.BundleLimit != nil {
				v.Spec.Limits = append(v.Spec.Limits, ledger.Money(*b.BundleLimit))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		var pool sql.RawBytes
		err = scanRows(db.Raw("SELECT order_id, bundle_idx, pool_id, quantity FROM order_items WHERE order_id "+in, arg), func(rs *sql.Rows) error {
			var it orderItem
			if err := rs.Scan(&it.OrderID, &it.BundleIdx, &pool, &it.Quantity); err != nil {
				return err
			}
			id, ok := pools[string(pool)]
			if !ok {
				id = string(pool)
				pools[id] = id
			}
			v := byOrder[it.OrderID]
			if it.BundleIdx < len(v.Spec.Bundles) {
				v.Spec.Bundles[it.BundleIdx][id] = it.Quantity
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !provisional {
			continue
		}
		var outs []struct {
			OrderID     int64
			RunID       int64
			BundleIndex int
			Payment     float64
			PaymentRule string
			VCGPayment  *float64 `gorm:"column:vcg_payment"`
		}
		if err := db.Raw(`SELECT o.order_id, o.run_id, o.bundle_index, o.payment, o.payment_rule, o.vcg_payment FROM run_outcomes o
			WHERE o.order_id `+in+` AND o.run_id = (SELECT MAX(run_id) FROM run_outcomes WHERE order_id = o.order_id)`, arg).
			Scan(&outs).Error; err != nil {
			return nil, err
		}
		for _, l := range outs {
			byOrder[l.OrderID].Provisional = &Outcome{RunID: l.RunID, BundleIndex: l.BundleIndex, Payment: l.Payment, PaymentRule: l.PaymentRule, VCGPayment: l.VCGPayment}
		}
	}
	return views, nil
}

// scanRows runs q and calls each for every row it returns.
func scanRows(q *gorm.DB, each func(*sql.Rows) error) error {
	rs, err := q.Rows()
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		if err := each(rs); err != nil {
			return err
		}
	}
	return rs.Err()
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

// OpenInterest returns each pool's open bids and offers in an auction. Counting
// them reads every live order of the auction (a few hundred milliseconds at
// 100,000 orders), so the counts are kept for a while: at most interestTTL old,
// recounted after this server's own writes to the auction but at most once per
// interestMinAge. The market summary says when they were counted.
func (m *Market) OpenInterest(ctx context.Context, auctionID int64) (map[string]Interest, error) {
	in, _, err := m.OpenInterestAt(ctx, auctionID)
	return in, err
}

// How long open-interest counts are kept.
const (
	interestTTL    = 10 * time.Second
	interestMinAge = time.Second
)

// interestCache holds the last count of one auction's open interest.
type interestCache struct {
	mu      sync.Mutex
	auction int64
	at      time.Time
	stale   bool // this server wrote to the auction's orders since
	counts  map[string]Interest
}

// OpenInterestAt is OpenInterest with the time the counts were made.
func (m *Market) OpenInterestAt(ctx context.Context, auctionID int64) (map[string]Interest, time.Time, error) {
	c := &m.interest
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.counts != nil && c.auction == auctionID {
		age := now.Sub(c.at)
		if age < interestMinAge || (!c.stale && age < interestTTL) {
			return c.counts, c.at, nil
		}
	}
	counts, err := m.countInterest(ctx, auctionID)
	if err != nil {
		return nil, time.Time{}, err
	}
	c.auction, c.at, c.stale, c.counts = auctionID, now, false, counts
	return counts, now, nil
}

// interestChanged marks the kept counts stale after a write to an auction's orders.
func (m *Market) interestChanged() {
	m.interest.mu.Lock()
	m.interest.stale = true
	m.interest.mu.Unlock()
}

func (m *Market) countInterest(ctx context.Context, auctionID int64) (map[string]Interest, error) {
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
