package exchange

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// instance builds the clock's instance from an auction's pools and open orders,
// inside tx. Orders become bidders named by their ids, in id order. Each pool's
// supply is the one fixed when the auction opened, never more than the effective
// capacity no team holds now. When pre was solved from exactly the open orders tx
// reads (every column equal), their bundles are taken from pre rather than read
// again: an order's bundles and items are written with it and never change.
func (m *Market) instance(ctx context.Context, tx *gorm.DB, a Auction, pre *solved) (auction.Instance, []Order, []OrderView, error) {
	var aps []AuctionPool
	if err := tx.Where("auction_id = ?", a.ID).Order("pool_id").Find(&aps).Error; err != nil {
		return auction.Instance{}, nil, nil, err
	}
	os, err := openOrders(tx, a.ID)
	if err != nil {
		return auction.Instance{}, nil, nil, err
	}
	inst := auction.Instance{}
	if err := json.Unmarshal([]byte(a.Params), &inst.Params); err != nil {
		return auction.Instance{}, nil, nil, fmt.Errorf("auction %d: parameters: %w", a.ID, err)
	}
	supply, err := supplyIn(tx, m.now())
	if err != nil {
		return auction.Instance{}, nil, nil, err
	}
	for _, ap := range aps {
		// The supply fixed at opening, less any fall of the effective capacity since:
		// a run never sells what the cluster no longer has.
		inst.Pools = append(inst.Pools, auction.Pool{ID: ap.PoolID, Supply: float64(min(ap.Supply, supply[ap.PoolID])), ReservePrice: ap.ReservePrice})
	}
	if pre != nil && reflect.DeepEqual(os, pre.orders) {
		inst.Bidders = pre.inst.Bidders
		return inst, os, pre.views, nil
	}
	views, err := loadViews(tx, os, false)
	if err != nil {
		return auction.Instance{}, nil, nil, err
	}
	inst.Bidders = make([]auction.Bidder, 0, len(views))
	for _, v := range views {
		b := auction.Bidder{ID: strconv.FormatInt(v.ID, 10)}
		for _, bundle := range v.Spec.Bundles {
			ab := auction.Bundle{}
			for pool, q := range bundle {
				ab[pool] = float64(q)
			}
			b.Bundles = append(b.Bundles, ab)
		}
		if v.Spec.Limit != nil {
			l := v.Spec.Limit.Dollars()
			b.Limit = &l
		} else {
			for _, l := range v.Spec.Limits {
				b.Limits = append(b.Limits, l.Dollars())
			}
		}
		inst.Bidders = append(inst.Bidders, b)
	}
	return inst, os, views, nil
}

// openOrders reads an auction's open orders in id order, every column, scanned row
// by row rather than through gorm's reflection: a close of 100,000 orders reads
// them twice (the presolve, then the transaction, to check they are the same).
func openOrders(tx *gorm.DB, auctionID int64) ([]Order, error) {
	var os []Order
	err := scanRows(tx.Raw(`SELECT id, team_id, auction_id, created_by, status, shared_limit, hold_id, note, idem_key, idem_digest,
	decided_by, created_at, updated_at FROM orders WHERE auction_id = ? AND status = ? ORDER BY id`, auctionID, OrderOpen), func(rs *sql.Rows) error {
		var o Order
		if err := rs.Scan(&o.ID, &o.TeamID, &o.AuctionID, &o.CreatedBy, &o.Status, &o.SharedLimit, &o.HoldID, &o.Note, &o.IdemKey,
			&o.IdemDigest, &o.DecidedBy, &o.CreatedAt, &o.UpdatedAt); err != nil {
			return err
		}
		os = append(os, o)
		return nil
	})
	return os, err
}

// PreviewFinalSeconds is the most time a preview gives the final round: previews
// run every few minutes inside a write transaction, so they show a quick final
// round; the binding run gives it the auction's own limit (params.final_round,
// default auction.DefaultFinalSeconds), outside the write transaction.
const PreviewFinalSeconds = 1.0

// solved is a result computed before the write transaction, with its instance.
type solved struct {
	inst   auction.Instance
	res    auction.Result
	orders []Order     // the open orders inst was built from
	views  []OrderView // and their views
}

// solve runs the clock and the final round on inst; a preview's final round is
// capped at PreviewFinalSeconds.
func solve(inst auction.Instance, binding bool) (auction.Result, error) {
	if !binding {
		fp := auction.FinalParams{}
		if inst.Params.FinalRound != nil {
			fp = *inst.Params.FinalRound
		}
		if fp.Seconds == 0 || fp.Seconds > PreviewFinalSeconds {
			fp.Seconds = PreviewFinalSeconds
		}
		inst.Params.FinalRound = &fp
	}
	return auction.Solve(inst, auction.Options{Trajectory: true})
}

// presolve solves a closing auction from the read pool, before the binding run's
// write transaction: once an auction is closing no write to its orders succeeds,
// so the instance cannot change, and the final round's time is not spent holding
// the writer. It returns nil when anything is amiss; the binding run then solves
// inside its transaction, and it always checks the instance is the one solved.
func (m *Market) presolve(ctx context.Context, id int64) *solved {
	db := m.db.Read.WithContext(ctx)
	var a Auction
	if err := db.Take(&a, "id = ?", id).Error; err != nil || a.Status != AuctionClosing {
		return nil
	}
	inst, orders, views, err := m.instance(ctx, db, a, nil)
	if err != nil {
		return nil
	}
	res, err := solve(inst, true)
	if err != nil {
		return nil
	}
	return &solved{inst, res, orders, views}
}

// run solves the auction's open orders (or takes pre's result when pre solved
// exactly these) and records the run with its prices, its final round, and each
// order's outcome, inside tx.
func (m *Market) run(ctx context.Context, tx *gorm.DB, a Auction, binding bool, pre *solved) (AuctionRun, auction.Result, []OrderView, error) {
	inst, _, views, err := m.instance(ctx, tx, a, pre)
	if err != nil {
		return AuctionRun{}, auction.Result{}, nil, err
	}
	for _, p := range inst.Pools { // a supply the effective capacity cut is kept, so pages and grants see it
		if err := tx.Exec("UPDATE auction_pools SET supply = ? WHERE auction_id = ? AND pool_id = ? AND supply > ?",
			int64(p.Supply), a.ID, p.ID, int64(p.Supply)).Error; err != nil {
			return AuctionRun{}, auction.Result{}, nil, err
		}
	}
	var res auction.Result
	if pre != nil && reflect.DeepEqual(pre.inst, inst) {
		res = pre.res
	} else if res, err = solve(inst, binding); err != nil {
		return AuctionRun{}, auction.Result{}, nil, fmt.Errorf("auction %d: %w", a.ID, err)
	}
	traj, err := json.Marshal(res.Trajectory)
	if err != nil {
		return AuctionRun{}, auction.Result{}, nil, err
	}
	r := AuctionRun{AuctionID: a.ID, Binding: binding, Converged: res.Converged, Rounds: res.Rounds, Seconds: res.Seconds,
		Orders: len(views), Trajectory: string(traj), RanAt: m.now()}
	if f := res.FinalRound; f != nil {
		r.FinalRound, r.Welfare, r.ClockWelfare, r.WelfareBound, r.Optimal, r.FinalSeconds = true, f.Welfare, f.ClockWelfare, f.Bound, f.Optimal, f.Seconds
		r.Payments = f.Payments
		parts, core, leastRevenue := f.Parts, f.CoreParts, f.LeastRevenueParts
		r.FinalParts, r.CoreParts, r.LeastRevenueParts = &parts, &core, &leastRevenue
	}
	if err := tx.Omit("ID").Create(&r).Error; err != nil {
		return AuctionRun{}, auction.Result{}, nil, err
	}
	var support map[string]float64
	unsupported := map[string]bool{}
	if f := res.FinalRound; f != nil && f.Prices != nil {
		support = f.Prices
		for _, id := range f.Unsupported {
			unsupported[id] = true
		}
	}
	for _, p := range inst.Pools {
		rp := RunPrice{RunID: r.ID, PoolID: p.ID, Price: res.Prices[p.ID], ExcessDemand: res.ExcessDemand[p.ID], OperatorSold: res.OperatorSold[p.ID]}
		if sp, ok := support[p.ID]; ok {
			micro, err := roundPayment(sp)
			if err != nil {
				return AuctionRun{}, auction.Result{}, nil, err
			}
			rp.SupportingPrice = new(int64)
			*rp.SupportingPrice = int64(micro)
		}
		if err := tx.Create(&rp).Error; err != nil {
			return AuctionRun{}, auction.Result{}, nil, err
		}
	}
	won := winnersOf(res.Winners)
	clock := won
	if res.FinalRound != nil {
		clock = winnersOf(res.ClockWinners)
	}
	outs := make([][]any, len(views))
	vcg := make([]float64, len(views)) // the core winners' VCG payments, pointed to by their rows
	for i, v := range views {
		outs[i] = []any{r.ID, v.ID, -1, 0.0, 0.0, -1, unsupported[strconv.FormatInt(v.ID, 10)], "", (*float64)(nil)}
		if w, ok := won[v.ID]; ok {
			outs[i][2], outs[i][3], outs[i][4], outs[i][7] = w.BundleIndex, w.Payment, w.AtPrices, PaymentRuleOf(w, res.FinalRound != nil)
			if w.Core && res.FinalRound != nil {
				vcg[i] = w.VCG
				outs[i][8] = &vcg[i]
			}
		}
		if w, ok := clock[v.ID]; ok {
			outs[i][5] = w.BundleIndex
		}
	}
	if _, err := store.Insert(tx, "run_outcomes", []string{"run_id", "order_id", "bundle_index", "payment", "at_prices", "clock_bundle", "unsupported", "payment_rule", "vcg_payment"}, outs, ""); err != nil {
		return AuctionRun{}, auction.Result{}, nil, err
	}
	return r, res, views, nil
}

func winnersOf(winners []auction.Winner) map[int64]auction.Winner {
	won := map[int64]auction.Winner{}
	for _, w := range winners {
		if id, err := strconv.ParseInt(w.ID, 10, 64); err == nil {
			won[id] = w
		}
	}
	return won
}

// bulkTables are the tables a run reads and settlement writes in bulk.
var bulkTables = []string{"orders", "order_bundles", "order_items", "run_outcomes", "ledger_holds"}

// Preview runs the clock on an open auction's orders and publishes the preliminary
// prices and each order's provisional outcome. It changes no order, hold or budget.
// Returns ECONFLICT when the auction is not open.
func (m *Market) Preview(ctx context.Context, id int64) (AuctionRun, error) {
	if err := m.db.Analyze(ctx, bulkTables...); err != nil {
		return AuctionRun{}, err
	}
	var r AuctionRun
	err := m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var a Auction
		if err := tx.Take(&a, "id = ?", id).Error; err != nil {
			return notFound(err, "auction: no auction %d", id)
		}
		if a.Status != AuctionOpen {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "auction #%d is %s; only an open auction is previewed", id, a.Status)
		}
		var err error
		r, _, _, err = m.run(ctx, tx, a, false, nil)
		return err
	})
	return r, err
}

// Close runs the binding clock and final round on an auction and settles it. It
// first marks the auction closing in a transaction of its own, which waits for
// order writes in flight; from then on every write to the auction's orders is
// refused, so the binding run sees exactly the orders whose writes were confirmed.
// The clock and the final round are solved from the read pool before the write
// transaction (the final round may take its whole time limit), and the result is
// used only if the transaction reads the very same instance. Then, in one
// transaction: orders still awaiting approval are rejected, the clock runs, and
// winners' holds are captured for what they pay and the rest released, sellers are
// paid from the treasury, quota moves, losers' holds are released, and the auction
// is marked settled. When the clock does not converge the auction is marked
// failed, every order is released as lost, and nothing is settled.
//
// Close is safe to repeat and to run concurrently (on one server or several): a
// settled or failed auction returns its binding run and changes nothing; a close
// interrupted after the first step is finished by the next. Returns ECONFLICT for
// an auction not yet open, ENOTFOUND for an unknown one.
func (m *Market) Close(ctx context.Context, id int64) (AuctionRun, error) {
	defer m.interestChanged()
	start := time.Now()
	run, done, err := m.stopBidding(ctx, id)
	if err != nil || done {
		return run, err
	}
	if err := m.db.Analyze(ctx, bulkTables...); err != nil {
		return AuctionRun{}, err
	}
	pre := m.presolve(ctx, id)
	var bound bool // this call ran the binding clock
	settling := time.Now()
	err = m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		a, err := lockAuction(tx, id)
		if err != nil {
			return err
		}
		switch a.Status {
		case AuctionSettled, AuctionFailed: // another close finished first
			return tx.Where("auction_id = ? AND binding", id).Take(&run).Error
		case AuctionClosing:
		default:
			return clearhouse.Errorf(clearhouse.EINTERNAL, "auction %d is %s after it was marked closing", id, a.Status)
		}
		run, err = m.bindingRun(ctx, tx, a, pre)
		bound = err == nil
		return err
	})
	if err != nil {
		return AuctionRun{}, m.halt(ctx, id, err)
	}
	if bound {
		// The close just committed a row per order to the tables the settlement
		// report joins; statistics taken before (or by an autovacuum ANALYZE while
		// the transaction was open, which sees none of them) would have the planner
		// treat them as empty and rescan one for every row of the other. Refreshed
		// here so the first report after a large close uses its indexes. A failure
		// changes nothing settled (the next close or autovacuum refreshes them).
		_ = m.db.Analyze(ctx, settledTables...)
		m.observeClose(ctx, run, time.Since(start), time.Since(settling))
	}
	return run, nil
}

// settledTables are the tables a close fills with a row per order, which the
// settlement report joins.
var settledTables = []string{"run_outcomes", "settlement_lines"}

// maxFailure is the most of a failed close's error an auction keeps.
const maxFailure = 1000

// halt records why an auction's binding run failed, leaving it halted (see
// Auction.Halted) instead of closing for good: the failure repeats on every try
// when it lies in the auction's own data, and only an operator can decide between
// retrying and cancelling. It returns ECONFLICT saying so, or err itself when the
// close was interrupted (ctx ended: the next close finishes it) or the failure
// could not be recorded.
func (m *Market) halt(ctx context.Context, id int64, err error) error {
	if ctx.Err() != nil {
		return err
	}
	why := clearhouse.ErrorMessage(err)
	if clearhouse.ErrorCode(err) == clearhouse.EINTERNAL {
		why = err.Error() // operators read it on /operate; the server logs it too
	}
	if len(why) > maxFailure {
		why = strings.ToValidUTF8(why[:maxFailure], "") + "…"
	}
	res := m.db.Write.WithContext(ctx).Model(&Auction{}).Where("id = ? AND status = ?", id, AuctionClosing).Update("failure", why)
	if res.Error != nil || res.RowsAffected == 0 {
		return err // settled by another close meanwhile, or the database is gone
	}
	return clearhouse.Errorf(clearhouse.ECONFLICT,
		"Auction #%d could not close: %s. Nothing was settled. Its orders may be withdrawn; retry the close, or cancel the auction to release every hold.", id, why)
}

// stopBidding marks an open auction closing in its own transaction. done is true
// (with the binding run) when the auction was already settled or failed.
func (m *Market) stopBidding(ctx context.Context, id int64) (run AuctionRun, done bool, err error) {
	err = m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := enterGate(tx, id, true); err != nil { // waits for order writes in flight
			return err
		}
		a, err := lockAuction(tx, id)
		if err != nil {
			return err
		}
		switch a.Status {
		case AuctionSettled, AuctionFailed:
			done = true
			return tx.Where("auction_id = ? AND binding", id).Take(&run).Error
		case AuctionScheduled:
			return clearhouse.Errorf(clearhouse.ECONFLICT, "auction %d has not opened yet", id)
		case AuctionOpen:
			if err := tx.Model(&Auction{}).Where("id = ? AND status = ?", id, AuctionOpen).
				Updates(map[string]any{"status": AuctionClosing, "closed_at": m.now()}).Error; err != nil {
				return err
			}
			return m.record(ctx, tx, "auction.close", fmt.Sprintf("auction:%d", id), map[string]any{"status": a.Status},
				map[string]any{"status": AuctionClosing, "closed_at": m.now()})
		}
		if a.Halted() { // a retry: from here on its orders are fixed again
			if err := tx.Model(&Auction{}).Where("id = ? AND status = ?", id, AuctionClosing).Update("failure", "").Error; err != nil {
				return err
			}
			return m.record(ctx, tx, "auction.retry", fmt.Sprintf("auction:%d", id), map[string]any{"status": a.Status, "failure": a.Failure},
				map[string]any{"status": AuctionClosing})
		}
		return nil // closing: an earlier close stopped bidding
	})
	return run, done, err
}

// bindingRun runs the clock on a closing auction and settles (or fails) it, inside
// tx, which holds the auction's row.
func (m *Market) bindingRun(ctx context.Context, tx *gorm.DB, a Auction, pre *solved) (AuctionRun, error) {
	var waiting []Order
	if err := tx.Where("auction_id = ? AND status = ?", a.ID, OrderAwaitingApproval).Order("id").Find(&waiting).Error; err != nil {
		return AuctionRun{}, err
	}
	run, res, views, err := m.run(ctx, tx, a, true, pre)
	if err != nil {
		return AuctionRun{}, err
	}
	if !res.Converged {
		if err := m.settle(ctx, tx, a, auction.Result{}, views, waiting); err != nil {
			return AuctionRun{}, err
		}
		return run, tx.Model(&Auction{}).Where("id = ?", a.ID).Updates(map[string]any{
			"status": AuctionFailed, "failure": fmt.Sprintf("the clock did not converge in %d rounds", res.Rounds)}).Error
	}
	if err := m.settle(ctx, tx, a, res, views, waiting); err != nil {
		return AuctionRun{}, err
	}
	return run, tx.Model(&Auction{}).Where("id = ?", a.ID).Updates(map[string]any{"status": AuctionSettled, "settled_at": m.now()}).Error
}

// settlement is what settling an auction moves, worked out before anything is
// written.
type settlement struct {
	batch      ledger.Batch
	capturedBy []int // line index of each capture
	payoutBy   []int // line index of each payout
	lines      []SettlementLine
	holdings   map[[2]string]int64
	won, lost  []int64
	rejected   []int64
}

// settle moves money and quota for the binding run's result res, inside tx, in
// bulk: winners' holds are captured (what they pay goes to the treasury), sellers
// are paid from the treasury, losers' and rejected orders' holds are released,
// quota moves, and each order of the run gets a settlement line. A result with no
// winners (a run that did not converge) releases everything. Every order has its
// own journal entry and idempotency key; every status write is conditional on the
// status it expects; locks follow the package's order.
func (m *Market) settle(ctx context.Context, tx *gorm.DB, a Auction, res auction.Result, views []OrderView, waiting []Order) error {
	st, err := workOut(a, res, views, waiting)
	if err != nil {
		return err
	}
	now := m.now()
	for _, set := range []struct {
		ids  []int64
		from OrderStatus
		to   OrderStatus
	}{{st.won, OrderOpen, OrderWon}, {st.lost, OrderOpen, OrderLost}, {st.rejected, OrderAwaitingApproval, OrderRejected}} {
		if err := setStatus(tx, set.ids, []OrderStatus{set.from}, set.to, now); err != nil {
			return err
		}
	}
	if err := moveHoldings(tx, st.holdings); err != nil {
		return err
	}
	if err := bumpPlan(tx); err != nil { // quotas moved: every server rebuilds its reservation plan
		return err
	}
	if err := deleteQuotaHolds(tx, st.won, st.lost, st.rejected); err != nil {
		return err
	}
	out, err := m.ledger.WithTx(tx).Apply(ctx, st.batch)
	if err != nil {
		return err
	}
	for j, e := range out.Captured {
		if e.ID != 0 {
			id := e.ID
			st.lines[st.capturedBy[j]].EntryID = &id
		}
	}
	for j, e := range out.Posted {
		id := e.ID
		st.lines[st.payoutBy[j]].EntryID = &id
	}
	if res.Converged {
		if err := recordFigures(tx, a, views, st.lines); err != nil {
			return err
		}
		if err := m.recordTradeUtilization(tx, a, views, st.lines); err != nil {
			return err
		}
	}
	if err := m.notifySettled(tx, a, res.Converged, res.FinalRound, res.Prices, views, st.lines, st.rejected, winnersOf(res.Winners)); err != nil {
		return err
	}
	rows := make([][]any, len(st.lines))
	for i, l := range st.lines {
		rows[i] = []any{l.AuctionID, l.OrderID, l.TeamID, l.BundleIndex, l.Payment, l.EntryID}
	}
	_, err = store.Insert(tx, "settlement_lines", []string{"auction_id", "order_id", "team_id", "bundle_index", "payment", "entry_id"}, rows, "")
	return err
}

// deleteQuotaHolds deletes the quota holds of the orders in each list: on
// PostgreSQL in one statement (the ids as one array), on SQLite a thousand
// orders a statement.
func deleteQuotaHolds(tx *gorm.DB, lists ...[]int64) error {
	for _, ids := range lists {
		if len(ids) > 0 && tx.Dialector.Name() == store.Postgres {
			if err := tx.Where("order_id = ANY(CAST(? AS BIGINT[]))", store.BigintArray(ids)).Delete(&quotaHold{}).Error; err != nil {
				return err
			}
			continue
		}
		for part := range slices.Chunk(ids, chunkSize) {
			if err := tx.Where("order_id IN ?", part).Delete(&quotaHold{}).Error; err != nil {
				return err
			}
		}
	}
	return nil
}

// workOut works out a settlement from the run's result.
func workOut(a Auction, res auction.Result, views []OrderView, waiting []Order) (settlement, error) {
	ref := fmt.Sprintf("auction:%d", a.ID)
	won := winnersOf(res.Winners)
	st := settlement{lines: make([]SettlementLine, len(views)), holdings: map[[2]string]int64{}}
	for _, o := range waiting {
		st.rejected = append(st.rejected, o.ID)
		if o.HoldID != nil {
			st.batch.Releases = append(st.batch.Releases, ledger.Release{Key: fmt.Sprintf("settle/%d/order/%d/reject", a.ID, o.ID), HoldID: *o.HoldID})
		}
	}
	for i, v := range views {
		st.lines[i] = SettlementLine{AuctionID: a.ID, OrderID: v.ID, TeamID: v.TeamID, BundleIndex: -1}
		key := fmt.Sprintf("settle/%d/order/%d", a.ID, v.ID)
		w, ok := won[v.ID]
		if !ok {
			st.lost = append(st.lost, v.ID)
			if v.HoldID != nil {
				st.batch.Releases = append(st.batch.Releases, ledger.Release{Key: key + "/release", HoldID: *v.HoldID})
			}
			continue
		}
		st.won = append(st.won, v.ID)
		pay, err := settledPayment(w, v.Spec.Bundles[w.BundleIndex], res.Prices)
		if err != nil {
			return settlement{}, fmt.Errorf("order %d: %w", v.ID, err)
		}
		switch {
		case pay > 0 && v.HoldID != nil:
			// The clock's proxy only demands a bundle it can afford and the final round
			// never charges past a bundle's limit, so the payment is within the hold; the
			// clamp only guards the last micro-dollar of float rounding.
			pay = min(pay, v.Spec.MaxPayment())
			st.batch.Captures = append(st.batch.Captures, ledger.Capture{Key: key, HoldID: *v.HoldID, Amount: pay, To: ledger.Treasury, Reason: ledger.ReasonSettlement, Ref: ref})
			st.capturedBy = append(st.capturedBy, i)
		case pay > 0:
			return settlement{}, clearhouse.Errorf(clearhouse.EINTERNAL, "order %d pays %s but holds nothing", v.ID, pay)
		default:
			if v.HoldID != nil {
				st.batch.Releases = append(st.batch.Releases, ledger.Release{Key: key + "/release", HoldID: *v.HoldID})
			}
			if pay < 0 {
				st.batch.Entries = append(st.batch.Entries, ledger.NewEntry{Key: key, Reason: ledger.ReasonSettlement, Ref: ref,
					Memo:     fmt.Sprintf("order %d sold in auction %d", v.ID, a.ID),
					Postings: []ledger.Posting{{Account: ledger.Treasury, Amount: pay}, {Account: ledger.TeamAccount(v.TeamID), Amount: -pay}}})
				st.payoutBy = append(st.payoutBy, i)
			}
		}
		for pool, q := range v.Spec.Bundles[w.BundleIndex] {
			st.holdings[[2]string{v.TeamID, pool}] += q
		}
		st.lines[i].BundleIndex, st.lines[i].Payment = w.BundleIndex, int64(pay)
	}
	return st, nil
}

// moveHoldings applies quota moves per (team, pool): it locks the holdings that
// exist in (team, pool) order, then applies sellers' moves before buyers' so that
// no holding ever goes negative while buyers' grow.
func moveHoldings(tx *gorm.DB, moves map[[2]string]int64) error {
	keys := make([][2]string, 0, len(moves))
	byTeam := map[string][]string{}
	for k, q := range moves {
		if q != 0 {
			keys = append(keys, k)
			byTeam[k[0]] = append(byTeam[k[0]], k[1])
		}
	}
	teams := make([]string, 0, len(byTeam))
	for t := range byTeam {
		teams = append(teams, t)
	}
	sort.Strings(teams)
	for _, t := range teams {
		sort.Strings(byTeam[t])
		for part := range slices.Chunk(byTeam[t], chunkSize) {
			if err := lockHoldings(tx, t, part); err != nil {
				return err
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if (moves[keys[i]] < 0) != (moves[keys[j]] < 0) {
			return moves[keys[i]] < 0
		}
		return keys[i][0]+"/"+keys[i][1] < keys[j][0]+"/"+keys[j][1]
	})
	for _, k := range keys {
		if err := addHolding(tx, k[0], k[1], moves[k]); err != nil {
			return fmt.Errorf("team %s: quota of %s: %w", k[0], k[1], err)
		}
	}
	return nil
}

// settledPayment is what winner w pays (negative: receives) for bundle b, in
// micro-dollars: the bundle at the run's unit prices, computed from the whole
// micro-dollar prices and whole quantities exactly (AtPrices), or, where the final
// round set another payment, that payment rounded to the micro-dollar.
func settledPayment(w auction.Winner, b Bundle, prices map[string]float64) (ledger.Money, error) {
	if math.Abs(w.Payment-w.AtPrices) >= 5e-7 {
		return roundPayment(w.Payment)
	}
	return AtPrices(b, prices)
}

// AtPrices is bundle b's cost at unit prices (dollars per unit, whole
// micro-dollars, as the clock publishes them) in micro-dollars: the sum of each
// pool's quantity times its price, exactly, as anyone recomputes it from a page or
// the CSV. EINTERNAL when it does not fit in the ledger's money.
func AtPrices(b Bundle, prices map[string]float64) (ledger.Money, error) {
	total := int64(0)
	for pool, q := range b {
		p, err := roundPayment(prices[pool])
		if err != nil {
			return 0, err
		}
		part := q * int64(p)
		sum := total + part
		if (q != 0 && (part/q != int64(p) || (q == -1 && p == math.MinInt64))) || (part > 0 && sum < total) || (part < 0 && sum > total) {
			return 0, clearhouse.Errorf(clearhouse.EINTERNAL, "a bundle's cost at unit prices does not fit in the ledger's money")
		}
		total = sum
	}
	return ledger.Money(total), nil
}

// roundPayment turns a payment in dollars into micro-dollars, rounding half away
// from zero: the one place auction prices become money.
func roundPayment(dollars float64) (ledger.Money, error) {
	if math.IsNaN(dollars) || math.IsInf(dollars, 0) {
		return 0, clearhouse.Errorf(clearhouse.EINTERNAL, "payment %v is not a number", dollars)
	}
	return ledger.FromDollars(dollars)
}
