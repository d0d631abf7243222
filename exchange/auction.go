package exchange

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// AuctionStatus is where an auction is in its life: scheduled, open (taking bids),
// closing (the binding run is under way), settled or failed (the binding run did not
// converge; nothing was settled).
type AuctionStatus string

// Auction statuses.
const (
	AuctionScheduled AuctionStatus = "scheduled"
	AuctionOpen      AuctionStatus = "open"
	AuctionClosing   AuctionStatus = "closing"
	AuctionSettled   AuctionStatus = "settled"
	AuctionFailed    AuctionStatus = "failed"
)

// Auction is one periodic auction with its bid window [OpensAt, ClosesAt).
type Auction struct {
	ID        int64
	Status    AuctionStatus
	OpensAt   time.Time
	ClosesAt  time.Time
	Params    string // the clock's parameters, JSON as in the auction format
	Failure   string
	CreatedAt time.Time
	ClosedAt  *time.Time // when it actually stopped taking bids: ClosesAt, or earlier when an operator closed it
	SettledAt *time.Time
}

// Closed is when the auction stopped taking bids, or its scheduled close while it
// still takes them: the time auctions are ordered and charted by.
func (a Auction) Closed() time.Time {
	if a.ClosedAt != nil {
		return *a.ClosedAt
	}
	return a.ClosesAt
}

// Halted is true for an auction whose close failed (Failure says why): nothing
// was settled, it takes no bids, its orders may be withdrawn, and it waits for an
// operator to retry the close (Close) or cancel it (CancelAuction), which
// releases every hold. The next auction opens only after one of them.
func (a Auction) Halted() bool { return a.Status == AuctionClosing && a.Failure != "" }

// closedOrder orders auctions newest first by when they closed (or are to close).
const closedOrder = "COALESCE(closed_at, closes_at) DESC, id DESC"

// AuctionPool is a pool's reserve price and operator supply, fixed when the
// auction's window opens.
type AuctionPool struct {
	AuctionID    int64
	PoolID       string
	ReservePrice float64 // dollars per unit
	Supply       int64
	Utilization  float64
}

// AuctionRun is one run of the clock on an auction's orders: preliminary while the
// window is open, binding at close.
type AuctionRun struct {
	ID         int64
	AuctionID  int64
	Binding    bool
	Converged  bool
	Rounds     int
	Seconds    float64
	Orders     int
	Trajectory string // JSON: the prices of every round
	RanAt      time.Time
	// The final round, when one ran (FinalRound): the welfare of the run's
	// allocation and of the clock's alone, the best proven bound on the welfare,
	// whether the allocation is proved optimal, and the final round's own time.
	FinalRound   bool
	Welfare      float64
	ClockWelfare float64
	WelfareBound float64
	Optimal      bool
	FinalSeconds float64
	// Payments is the rule the run's payments followed (auction.PaymentsCore,
	// PaymentsCappedPrices or PaymentsMixed); "" when no final round ran, and for
	// runs from before it was recorded (which paid capped prices).
	Payments string
	// Which rule paid which part of the final round (migration 00036), as the
	// engine's final_round says: FinalParts independent parts, CoreParts of them
	// paid core payments (the rest capped prices), LeastRevenueParts of those the
	// LP's least-revenue core point instead of the one nearest VCG, because the
	// nearest-VCG step failed (docs/final-round.md). nil when not recorded: no
	// final round, or a run from before migration 00036 or written by an older
	// release.
	FinalParts, CoreParts, LeastRevenueParts *int
}

// PaymentParts is the final round of the run as far as the payment rule goes,
// for SettlementRule: the rule (capped prices for runs from before it was
// recorded) and, when recorded, which parts paid it; nil when no final round ran.
func (r AuctionRun) PaymentParts() *auction.FinalRound {
	if !r.FinalRound {
		return nil
	}
	f := &auction.FinalRound{Payments: r.Payments}
	if f.Payments == "" {
		f.Payments = auction.PaymentsCappedPrices
	}
	if r.FinalParts != nil && r.CoreParts != nil && r.LeastRevenueParts != nil {
		f.Parts, f.CoreParts, f.LeastRevenueParts = *r.FinalParts, *r.CoreParts, *r.LeastRevenueParts
	}
	return f
}

// Gap is the share of the bound the run's welfare may be short of: 0 when the
// final round did not run or proved its allocation optimal.
func (r AuctionRun) Gap() float64 {
	if !r.FinalRound || r.Optimal || r.WelfareBound <= 0 {
		return 0
	}
	return max(0, (r.WelfareBound-r.Welfare)/r.WelfareBound)
}

// RunPrice is one pool's price and excess demand at the end of a run.
type RunPrice struct {
	RunID        int64
	PoolID       string
	Price        float64
	ExcessDemand float64
	OperatorSold float64
	// SupportingPrice is the final round's supporting price per unit in the pool,
	// whole micro-dollars (docs/final-round.md, "Prices that explain the final
	// allocation"); nil when the run has none: no final round, one that kept the
	// clock's allocation, a market too large for the LP, or a run from before
	// migration 00035.
	SupportingPrice *int64
	TradedUnits     int64 `gorm:"-"` // units the run's winners buy in the pool; 0: the price is indicative only
}

type runOutcome struct {
	RunID       int64
	OrderID     int64
	BundleIndex int
	Payment     float64
	AtPrices    float64 // the bundle at the run's prices
	ClockBundle int     // the bundle the clock alone gave, -1 for none
	Unsupported bool    // the run's supporting prices fail to support this order
	PaymentRule string  // the rule the order's payment followed (PaymentRuleOf); "" for none or not recorded
	// VCGPayment is a core winner's VCG payment in dollars (auction.Winner.VCG),
	// the least a core payment could be; nil where it paid no core payment or it
	// was not recorded (runs from before migration 00038).
	VCGPayment *float64 `gorm:"column:vcg_payment"`
}

func (runOutcome) TableName() string { return "run_outcomes" }

// The rule one winner's payment followed (run_outcomes.payment_rule, migration
// 00037; docs/final-round.md). "" is an order that got nothing, or a run from
// before the rule was recorded per winner.
const (
	// PaidClockPrices: no final round ran; the bundle at the clock's prices.
	PaidClockPrices = "clock_prices"
	// PaidCore: a core payment at the core point nearest the VCG payments.
	PaidCore = "core"
	// PaidCoreLeastRevenue: a core payment at the least-revenue core point the
	// solver found, because the step to the point nearest VCG failed in the
	// winner's part (auction.Winner.LeastRevenue).
	PaidCoreLeastRevenue = "core_least_revenue"
	// PaidCappedPrices: the final round did not prove the winner's part optimal;
	// the bundle at the clock's prices, capped at the limit.
	PaidCappedPrices = "capped_prices"
)

// PaymentRuleOf is the rule winner w's payment followed, in a run with a final
// round (final) or without.
func PaymentRuleOf(w auction.Winner, final bool) string {
	switch {
	case !final:
		return PaidClockPrices
	case w.LeastRevenue:
		return PaidCoreLeastRevenue
	case w.Core:
		return PaidCore
	}
	return PaidCappedPrices
}

// SettlementLine is what one order won and paid (micro-dollars; negative received)
// when its auction settled.
type SettlementLine struct {
	AuctionID   int64
	OrderID     int64
	TeamID      string
	BundleIndex int // -1 for an order that lost
	Payment     int64
	EntryID     *int64
}

// How far ahead, and for how long, an auction may be scheduled.
const (
	MaxScheduleAhead = 366 * 24 * time.Hour
	MaxWindow        = 7 * 24 * time.Hour
)

// ScheduleAuction adds an auction with the bid window [opens, closes). Returns
// EINVALID for an empty or past window, one opening more than a year ahead or
// lasting more than a week, and ECONFLICT when it overlaps another auction that
// has not finished.
func (m *Market) ScheduleAuction(ctx context.Context, opens, closes time.Time, params auction.Params) (Auction, error) {
	opens, closes = opens.UTC().Truncate(time.Second), closes.UTC().Truncate(time.Second)
	if !closes.After(opens) {
		return Auction{}, clearhouse.Errorf(clearhouse.EINVALID, "closes: the window must close after it opens")
	}
	if closes.Before(m.now()) {
		return Auction{}, clearhouse.Errorf(clearhouse.EINVALID, "closes: the window is already over")
	}
	if opens.After(m.now().Add(MaxScheduleAhead)) {
		return Auction{}, clearhouse.Errorf(clearhouse.EINVALID, "opens: an auction may open at most a year ahead, by %s", m.now().Add(MaxScheduleAhead).Format("2006-01-02"))
	}
	if closes.Sub(opens) > MaxWindow {
		return Auction{}, clearhouse.Errorf(clearhouse.EINVALID, "closes: a bid window lasts at most 7 days")
	}
	if err := params.Validate(); err != nil {
		return Auction{}, err
	}
	pj, err := json.Marshal(params)
	if err != nil {
		return Auction{}, err
	}
	a := Auction{Status: AuctionScheduled, OpensAt: opens, ClosesAt: closes, Params: string(pj), CreatedAt: m.now()}
	err = m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&Auction{}).Where("status IN ? AND opens_at < ? AND closes_at > ?",
			[]AuctionStatus{AuctionScheduled, AuctionOpen, AuctionClosing}, closes, opens).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "opens: the window overlaps another auction's")
		}
		if err := tx.Omit("ID").Create(&a).Error; err != nil {
			return err
		}
		return m.record(ctx, tx, "auction.schedule", fmt.Sprintf("auction:%d", a.ID), nil, auctionState(a))
	})
	return a, err
}

// biddingAuction returns the auction taking bids now (its id, status, close and
// failure; on PostgreSQL all of it) and locks its row shared until tx ends (see the
// lock order), or returns ECONFLICT saying why no auction
// takes bids: the current one is closing, or none is open.
func biddingAuction(tx *gorm.DB, now time.Time) (Auction, error) {
	var cur Auction // only what placing needs, scanned without reflection: see placeOrder
	err := store.ScanRow(tx, "SELECT id, status, closes_at, failure FROM auctions WHERE status IN (?, ?) ORDER BY closes_at LIMIT 1",
		[]any{AuctionOpen, AuctionClosing}, &cur.ID, &cur.Status, &cur.ClosesAt, &cur.Failure)
	if err == nil {
		a := cur
		if tx.Dialector.Name() == "postgres" {
			if a, err = shareAuction(tx, cur.ID); err != nil { // it may have moved while we waited for the gate
				return Auction{}, err
			}
		}
		switch {
		case a.Status == AuctionOpen && now.Before(a.ClosesAt):
			return a, nil
		case a.Status == AuctionOpen || a.Status == AuctionClosing:
			return Auction{}, closingError(Auction{ID: a.ID, Status: AuctionClosing})
		}
	} else if !errors.Is(err, sql.ErrNoRows) {
		return Auction{}, err
	}
	var next Auction
	if tx.Where("status = ?", AuctionScheduled).Order("opens_at").Take(&next).Error == nil {
		return Auction{}, clearhouse.Errorf(clearhouse.ECONFLICT, "No auction is taking bids; the next opens at %s.", next.OpensAt.Format("2006-01-02 15:04 MST"))
	}
	return Auction{}, clearhouse.Errorf(clearhouse.ECONFLICT, "No auction is taking bids and none is scheduled.")
}

// CancelAuction removes a scheduled auction that has not opened: nothing depends
// on it yet (orders attach only to an open auction). A halted auction (its close
// failed) is cancelled instead: every live order gets nothing and its holds are
// released, as for a clock that did not converge, and the auction is marked
// failed, saying it was cancelled and why its close had failed. Returns ENOTFOUND
// for an unknown auction and ECONFLICT for one that has opened and is not halted.
func (m *Market) CancelAuction(ctx context.Context, id int64) error {
	defer m.interestChanged()
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := enterGate(tx, id, true); err != nil { // waits for withdrawals in flight
			return err
		}
		a, err := lockAuction(tx, id)
		if err != nil {
			return err
		}
		var after any // a scheduled auction is deleted; a halted one ends failed
		if a.Halted() {
			if err := m.cancelHalted(ctx, tx, a); err != nil {
				return err
			}
			after = map[string]any{"status": AuctionFailed}
		} else if a.Status != AuctionScheduled {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "auction %d is %s; only an auction that has not opened, or one whose close failed, can be cancelled", id, a.Status)
		} else if err := tx.Where("id = ? AND status = ?", id, AuctionScheduled).Delete(&Auction{}).Error; err != nil {
			return err
		}
		return m.record(ctx, tx, "auction.cancel", fmt.Sprintf("auction:%d", id), auctionState(a), after)
	})
}

// cancelHalted releases every live order of a halted auction and marks it failed,
// inside tx, which holds the auction's gate and row.
func (m *Market) cancelHalted(ctx context.Context, tx *gorm.DB, a Auction) error {
	var open, waiting []Order
	if err := tx.Where("auction_id = ? AND status = ?", a.ID, OrderOpen).Order("id").Find(&open).Error; err != nil {
		return err
	}
	if err := tx.Where("auction_id = ? AND status = ?", a.ID, OrderAwaitingApproval).Order("id").Find(&waiting).Error; err != nil {
		return err
	}
	views, err := loadViews(tx, open, false)
	if err != nil {
		return err
	}
	// The binding run every finished auction has (verify checks it): one that ran
	// no round, in which every order got nothing.
	run := AuctionRun{AuctionID: a.ID, Binding: true, Orders: len(views), Trajectory: "[]", RanAt: m.now()}
	if err := tx.Omit("ID").Create(&run).Error; err != nil {
		return err
	}
	outs := make([][]any, len(views))
	for i, v := range views {
		outs[i] = []any{run.ID, v.ID, -1, 0.0, 0.0, -1}
	}
	if _, err := store.Insert(tx, "run_outcomes", []string{"run_id", "order_id", "bundle_index", "payment", "at_prices", "clock_bundle"}, outs, ""); err != nil {
		return err
	}
	if err := m.settle(ctx, tx, a, auction.Result{}, views, waiting); err != nil {
		return err
	}
	return tx.Model(&Auction{}).Where("id = ? AND status = ?", a.ID, AuctionClosing).Updates(map[string]any{
		"status": AuctionFailed, "failure": "cancelled by an operator after its close failed (" + a.Failure + "); every hold was released"}).Error
}

// Auction returns one auction or ENOTFOUND.
func (m *Market) Auction(ctx context.Context, id int64) (Auction, error) {
	var a Auction
	err := m.db.Read.WithContext(ctx).Take(&a, "id = ?", id).Error
	return a, notFound(err, "auction: no auction %d", id)
}

// Auctions lists auctions, newest first by when they closed (or are to close).
func (m *Market) Auctions(ctx context.Context, limit int) ([]Auction, error) {
	var as []Auction
	q := m.db.Read.WithContext(ctx).Order(closedOrder)
	if limit > 0 {
		q = q.Limit(limit)
	}
	return as, q.Find(&as).Error
}

// CurrentAuction returns the auction taking bids, else the next scheduled one; ok is
// false when there is neither.
func (m *Market) CurrentAuction(ctx context.Context) (Auction, bool, error) {
	var a Auction
	err := m.db.Read.WithContext(ctx).Where("status IN ?", []AuctionStatus{AuctionOpen, AuctionClosing, AuctionScheduled}).
		Order("opens_at").Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Auction{}, false, nil
	}
	return a, err == nil, err
}

// AuctionPools returns the reserve prices and supply fixed when the auction opened.
func (m *Market) AuctionPools(ctx context.Context, id int64) ([]AuctionPool, error) {
	var ps []AuctionPool
	return ps, m.db.Read.WithContext(ctx).Where("auction_id = ?", id).Order("pool_id").Find(&ps).Error
}

// LatestRun returns the newest run of an auction (the binding one once settled);
// ok is false before the first run.
func (m *Market) LatestRun(ctx context.Context, id int64) (AuctionRun, []RunPrice, bool, error) {
	var r AuctionRun
	err := m.db.Read.WithContext(ctx).Where("auction_id = ?", id).Order("binding DESC, id DESC").Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return AuctionRun{}, nil, false, nil
	} else if err != nil {
		return AuctionRun{}, nil, false, err
	}
	var ps []RunPrice
	if err := m.db.Read.WithContext(ctx).Where("run_id = ?", r.ID).Order("pool_id").Find(&ps).Error; err != nil {
		return r, nil, true, err
	}
	traded, err := tradedUnits(m.db.Read.WithContext(ctx), []int64{r.ID})
	for i := range ps {
		ps[i].TradedUnits = traded[r.ID][ps[i].PoolID]
	}
	return r, ps, true, err
}

// OpenDue opens the scheduled auctions whose window has begun, one at a time: an
// auction opens only when no other is open or closing, since each fixes its
// operator supply from the capacity no team holds and two live auctions would sell
// it twice (a unique index backs this up across servers). Opening fixes each
// pool's reserve price from its curve, utilization psi (MeasuredUtilization) and
// unit cost, and its supply: the effective capacity (PoolCapacities) no team holds.
// It returns the auctions it opened; one left waiting opens once the auction
// before it has settled (Tick closes before it opens).
func (m *Market) OpenDue(ctx context.Context) ([]Auction, error) {
	var due []Auction
	if err := m.db.Read.WithContext(ctx).Where("status = ? AND opens_at <= ?", AuctionScheduled, m.now()).Order("opens_at").Find(&due).Error; err != nil {
		return nil, err
	}
	var opened []Auction
	for _, a := range due {
		did := false
		err := m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var live int64
			if err := tx.Model(&Auction{}).Where("status IN ?", []AuctionStatus{AuctionOpen, AuctionClosing}).Count(&live).Error; err != nil || live > 0 {
				return err // the auction before it has not settled yet
			}
			res := tx.Model(&Auction{}).Where("id = ? AND status = ?", a.ID, AuctionScheduled).Update("status", AuctionOpen)
			if res.Error != nil || res.RowsAffected == 0 {
				return res.Error // someone else opened it
			}
			did = true
			if err := m.fixReserves(tx, a.ID); err != nil {
				return err
			}
			return m.notifyDrafts(tx, a)
		})
		if isDuplicate(err) {
			break // another server opened an auction at the same moment
		}
		if err != nil {
			return opened, fmt.Errorf("opening auction %d: %w", a.ID, err)
		}
		if !did {
			break // one live auction at a time: the rest wait
		}
		a.Status = AuctionOpen
		opened = append(opened, a)
	}
	return opened, nil
}

func (m *Market) fixReserves(tx *gorm.DB, auctionID int64) error {
	var pools []Pool
	if err := tx.Order("id").Find(&pools).Error; err != nil {
		return err
	}
	supply, err := supplyIn(tx, m.now())
	if err != nil {
		return err
	}
	curves, err := m.curvesIn(tx)
	if err != nil {
		return err
	}
	util, err := m.utilizationIn(tx, pools)
	if err != nil {
		return err
	}
	for _, p := range pools {
		c, ok := curves[p.CurveID]
		if !ok {
			return clearhouse.Errorf(clearhouse.EINTERNAL, "pool %s: reserve curve %q is missing", p.ID, p.CurveID)
		}
		r, err := p.ReservePrice(c, util[p.ID])
		if err != nil {
			return fmt.Errorf("pool %s: %w", p.ID, err)
		}
		ap := AuctionPool{AuctionID: auctionID, PoolID: p.ID, ReservePrice: r, Supply: supply[p.ID], Utilization: util[p.ID]}
		if err := tx.Create(&ap).Error; err != nil {
			return err
		}
	}
	return nil
}

// OrderCount is how many orders an auction has had: TakingPart (open, then won or
// lost: the orders a close would clear, as the close confirmation counts them),
// Waiting (awaiting an owner's approval: they take part once approved) and Left
// (withdrawn or rejected: they take no part).
type OrderCount struct {
	TakingPart, Waiting, Left int
}

// OrderCounts returns each auction's order count.
func (m *Market) OrderCounts(ctx context.Context) (map[int64]OrderCount, error) {
	var rows []struct {
		AuctionID int64
		Status    OrderStatus
		N         int
	}
	if err := m.db.Read.WithContext(ctx).Table("orders").Select("auction_id, status, COUNT(*) AS n").Where("auction_id IS NOT NULL").
		Group("auction_id, status").Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := map[int64]OrderCount{}
	for _, r := range rows {
		c := out[r.AuctionID]
		switch r.Status {
		case OrderWithdrawn, OrderRejected:
			c.Left += r.N
		case OrderAwaitingApproval:
			c.Waiting += r.N
		default:
			c.TakingPart += r.N
		}
		out[r.AuctionID] = c
	}
	return out, nil
}

// PricePoint is a pool's binding price in one settled auction.
type PricePoint struct {
	AuctionID   int64
	RunID       int64     // the binding run
	ClosedAt    time.Time // when the auction actually closed
	PoolID      string
	Price       float64
	TradedUnits int64 // units bought at the price; 0: indicative only, nobody paid it
}

// PriceHistory returns the binding prices of the last n settled auctions to close,
// each with the units bought at it (none: the price is indicative only),
// oldest first by when each actually closed (an auction closed early and the one
// after it chart in the order they closed, not by their scheduled windows).
func (m *Market) PriceHistory(ctx context.Context, n int) ([]PricePoint, error) {
	var out []PricePoint
	db := m.db.Read.WithContext(ctx)
	err := db.Raw(`SELECT a.id AS auction_id, r.id AS run_id, a.closed_at, p.pool_id, p.price
		FROM auctions a JOIN auction_runs r ON r.auction_id = a.id AND r.binding JOIN run_prices p ON p.run_id = r.id
		WHERE a.status = ? AND a.id IN (SELECT id FROM auctions WHERE status = ? ORDER BY `+closedOrder+` LIMIT ?)
		ORDER BY a.closed_at, a.id, p.pool_id`, AuctionSettled, AuctionSettled, n).Scan(&out).Error
	if err != nil {
		return nil, err
	}
	var runs []int64
	for i, p := range out {
		if i == 0 || p.RunID != out[i-1].RunID {
			runs = append(runs, p.RunID)
		}
	}
	traded, err := tradedUnits(db, runs)
	for i := range out {
		out[i].TradedUnits = traded[out[i].RunID][out[i].PoolID]
	}
	return out, err
}

// PriceRounds decodes the run's per-round prices.
func (r AuctionRun) PriceRounds() ([]auction.Round, error) {
	var rs []auction.Round
	err := json.Unmarshal([]byte(r.Trajectory), &rs)
	return rs, err
}
