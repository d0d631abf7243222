package exchange

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/ledger"
	"gorm.io/gorm"
)

// instance builds the clock's instance from an auction's pools and open orders,
// inside tx. Orders become bidders named by their ids, in id order.
func (m *Market) instance(ctx context.Context, tx *gorm.DB, a Auction) (auction.Instance, []OrderView, error) {
	var aps []AuctionPool
	if err := tx.Where("auction_id = ?", a.ID).Order("pool_id").Find(&aps).Error; err != nil {
		return auction.Instance{}, nil, err
	}
	var os []Order
	if err := tx.Where("auction_id = ? AND status = ?", a.ID, OrderOpen).Order("id").Find(&os).Error; err != nil {
		return auction.Instance{}, nil, err
	}
	views, err := m.views(ctx, tx, os)
	if err != nil {
		return auction.Instance{}, nil, err
	}
	inst := auction.Instance{}
	if err := json.Unmarshal([]byte(a.Params), &inst.Params); err != nil {
		return auction.Instance{}, nil, fmt.Errorf("auction %d: parameters: %w", a.ID, err)
	}
	for _, ap := range aps {
		inst.Pools = append(inst.Pools, auction.Pool{ID: ap.PoolID, Supply: float64(ap.Supply), ReservePrice: ap.ReservePrice})
	}
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
	return inst, views, nil
}

// run solves the auction's open orders and records the run with its prices and each
// order's outcome, inside tx.
func (m *Market) run(ctx context.Context, tx *gorm.DB, a Auction, binding bool) (AuctionRun, auction.Result, []OrderView, error) {
	inst, views, err := m.instance(ctx, tx, a)
	if err != nil {
		return AuctionRun{}, auction.Result{}, nil, err
	}
	res, err := auction.Solve(inst, auction.Options{Trajectory: true})
	if err != nil {
		return AuctionRun{}, auction.Result{}, nil, fmt.Errorf("auction %d: %w", a.ID, err)
	}
	traj, err := json.Marshal(res.Trajectory)
	if err != nil {
		return AuctionRun{}, auction.Result{}, nil, err
	}
	r := AuctionRun{AuctionID: a.ID, Binding: binding, Converged: res.Converged, Rounds: res.Rounds, Seconds: res.Seconds,
		Orders: len(views), Trajectory: string(traj), RanAt: m.now()}
	if err := tx.Omit("ID").Create(&r).Error; err != nil {
		return AuctionRun{}, auction.Result{}, nil, err
	}
	for _, p := range inst.Pools {
		rp := RunPrice{RunID: r.ID, PoolID: p.ID, Price: res.Prices[p.ID], ExcessDemand: res.ExcessDemand[p.ID], OperatorSold: res.OperatorSold[p.ID]}
		if err := tx.Create(&rp).Error; err != nil {
			return AuctionRun{}, auction.Result{}, nil, err
		}
	}
	won := winnersOf(res)
	outs := make([]runOutcome, len(views))
	for i, v := range views {
		outs[i] = runOutcome{RunID: r.ID, OrderID: v.ID, BundleIndex: -1}
		if w, ok := won[v.ID]; ok {
			outs[i].BundleIndex, outs[i].Payment = w.BundleIndex, w.Payment
		}
	}
	if len(outs) > 0 {
		if err := tx.CreateInBatches(&outs, 500).Error; err != nil {
			return AuctionRun{}, auction.Result{}, nil, err
		}
	}
	return r, res, views, nil
}

func winnersOf(res auction.Result) map[int64]auction.Winner {
	won := map[int64]auction.Winner{}
	for _, w := range res.Winners {
		if id, err := strconv.ParseInt(w.ID, 10, 64); err == nil {
			won[id] = w
		}
	}
	return won
}

// Preview runs the clock on an open auction's orders and publishes the preliminary
// prices and each order's provisional outcome. It changes no order, hold or budget.
// Returns ECONFLICT when the auction is not open.
func (m *Market) Preview(ctx context.Context, id int64) (AuctionRun, error) {
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
		r, _, _, err = m.run(ctx, tx, a, false)
		return err
	})
	return r, err
}

// Close runs the binding clock on an auction and settles it, all in one
// transaction: winners' holds are captured for what they pay and the rest released,
// sellers are paid from the treasury, quota moves, losers' holds are released, and
// the auction is marked settled. Orders still awaiting approval are rejected. When
// the clock does not converge the auction is marked failed, every order is released
// as lost, and nothing is settled. Closing a settled or failed auction returns its
// binding run and changes nothing. Returns ECONFLICT for an auction not yet open.
func (m *Market) Close(ctx context.Context, id int64) (AuctionRun, error) {
	var r AuctionRun
	err := m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var a Auction
		if err := tx.Take(&a, "id = ?", id).Error; err != nil {
			return notFound(err, "auction: no auction %d", id)
		}
		switch a.Status {
		case AuctionSettled, AuctionFailed:
			return tx.Where("auction_id = ? AND binding", id).Take(&r).Error
		case AuctionScheduled:
			return clearhouse.Errorf(clearhouse.ECONFLICT, "auction #%d has not opened yet", id)
		}
		if err := tx.Model(&Auction{}).Where("id = ?", id).Update("status", AuctionClosing).Error; err != nil {
			return err
		}
		var waiting []Order
		if err := tx.Where("auction_id = ? AND status = ?", id, OrderAwaitingApproval).Find(&waiting).Error; err != nil {
			return err
		}
		for _, o := range waiting {
			if err := m.releaseOrder(ctx, tx, o, OrderRejected, "not approved before the auction closed"); err != nil {
				return err
			}
		}
		run, res, views, err := m.run(ctx, tx, a, true)
		if err != nil {
			return err
		}
		r = run
		if !res.Converged {
			for _, v := range views {
				if err := m.releaseOrder(ctx, tx, v.Order, OrderLost, "the auction did not converge"); err != nil {
					return err
				}
			}
			return tx.Model(&Auction{}).Where("id = ?", id).Updates(map[string]any{
				"status": AuctionFailed, "failure": fmt.Sprintf("the clock did not converge in %d rounds", res.Rounds)}).Error
		}
		if err := m.settle(ctx, tx, a, res, views); err != nil {
			return err
		}
		now := m.now()
		return tx.Model(&Auction{}).Where("id = ?", id).Updates(map[string]any{"status": AuctionSettled, "settled_at": now}).Error
	})
	return r, err
}

// settle moves money and quota for a converged binding run, inside tx, in bulk:
// winners' holds are captured (what they pay goes to the treasury), sellers are paid
// from the treasury, losers' holds are released, quota moves, and each order gets a
// settlement line. Every order has its own journal entry and idempotency key.
func (m *Market) settle(ctx context.Context, tx *gorm.DB, a Auction, res auction.Result, views []OrderView) error {
	l := m.ledger.WithTx(tx)
	ref := fmt.Sprintf("auction:%d", a.ID)
	won := winnersOf(res)
	var captures []ledger.Capture
	var capturedBy []int // view index of each capture
	var releases []ledger.Release
	var payouts []ledger.NewEntry
	var payoutBy []int
	lines := make([]SettlementLine, len(views))
	holdings := map[[2]string]int64{}
	var wonIDs, lostIDs []int64
	for i, v := range views {
		lines[i] = SettlementLine{AuctionID: a.ID, OrderID: v.ID, TeamID: v.TeamID, BundleIndex: -1}
		key := fmt.Sprintf("settle/%d/order/%d", a.ID, v.ID)
		w, ok := won[v.ID]
		if !ok {
			lostIDs = append(lostIDs, v.ID)
			if v.HoldID != nil {
				releases = append(releases, ledger.Release{Key: fmt.Sprintf("order/%d/release", v.ID), HoldID: *v.HoldID})
			}
			continue
		}
		wonIDs = append(wonIDs, v.ID)
		pay, err := roundPayment(w.Payment)
		if err != nil {
			return fmt.Errorf("order %d: %w", v.ID, err)
		}
		switch {
		case pay > 0 && v.HoldID != nil:
			// The proxy only demands a bundle it can afford, so the payment is within the
			// hold; the clamp only guards the last micro-dollar of float rounding.
			pay = min(pay, v.Spec.MaxPayment())
			captures = append(captures, ledger.Capture{Key: key, HoldID: *v.HoldID, Amount: pay, To: ledger.Treasury, Reason: ledger.ReasonSettlement, Ref: ref})
			capturedBy = append(capturedBy, i)
		case pay > 0:
			return clearhouse.Errorf(clearhouse.EINTERNAL, "order %d pays %s but holds nothing", v.ID, pay)
		default:
			if v.HoldID != nil {
				releases = append(releases, ledger.Release{Key: key + "/release", HoldID: *v.HoldID})
			}
			if pay < 0 {
				payouts = append(payouts, ledger.NewEntry{Key: key, Reason: ledger.ReasonSettlement, Ref: ref,
					Memo:     fmt.Sprintf("order %d sold in auction %d", v.ID, a.ID),
					Postings: []ledger.Posting{{Account: ledger.Treasury, Amount: pay}, {Account: ledger.TeamAccount(v.TeamID), Amount: -pay}}})
				payoutBy = append(payoutBy, i)
			}
		}
		for pool, q := range v.Spec.Bundles[w.BundleIndex] {
			holdings[[2]string{v.TeamID, pool}] += q
		}
		lines[i].BundleIndex, lines[i].Payment = w.BundleIndex, int64(pay)
	}
	if err := l.ReleaseHolds(ctx, releases); err != nil {
		return err
	}
	entries, err := l.CaptureHolds(ctx, captures)
	if err != nil {
		return err
	}
	for j, e := range entries {
		if e.ID != 0 {
			id := e.ID
			lines[capturedBy[j]].EntryID = &id
		}
	}
	for j, ne := range payouts {
		e, err := l.Post(ctx, ne)
		if err != nil {
			return err
		}
		id := e.ID
		lines[payoutBy[j]].EntryID = &id
	}
	// Quota moves per team and pool; sellers' quota comes first so that no holding
	// ever goes negative while buyers' grows.
	keys := make([][2]string, 0, len(holdings))
	for k := range holdings {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if (holdings[keys[i]] < 0) != (holdings[keys[j]] < 0) {
			return holdings[keys[i]] < 0
		}
		return keys[i][0]+"/"+keys[i][1] < keys[j][0]+"/"+keys[j][1]
	})
	for _, k := range keys {
		if q := holdings[k]; q != 0 {
			if err := addHolding(tx, k[0], k[1], q); err != nil {
				return fmt.Errorf("team %s: quota of %s: %w", k[0], k[1], err)
			}
		}
	}
	if err := bumpPlan(tx); err != nil { // quotas moved: every server rebuilds its reservation plan
		return err
	}
	now := m.now()
	for _, set := range []struct {
		ids    []int64
		status OrderStatus
	}{{wonIDs, OrderWon}, {lostIDs, OrderLost}} {
		for lo := 0; lo < len(set.ids); lo += 500 {
			part := set.ids[lo:min(lo+500, len(set.ids))]
			if err := tx.Where("order_id IN ?", part).Delete(&quotaHold{}).Error; err != nil {
				return err
			}
			if err := tx.Model(&Order{}).Where("id IN ?", part).Updates(map[string]any{"status": set.status, "updated_at": now}).Error; err != nil {
				return err
			}
		}
	}
	if len(lines) > 0 {
		return tx.CreateInBatches(&lines, 500).Error
	}
	return nil
}

// roundPayment turns a payment in dollars into micro-dollars, rounding half away
// from zero: the one place auction prices become money.
func roundPayment(dollars float64) (ledger.Money, error) {
	if math.IsNaN(dollars) || math.IsInf(dollars, 0) {
		return 0, clearhouse.Errorf(clearhouse.EINTERNAL, "payment %v is not a number", dollars)
	}
	return ledger.FromDollars(dollars)
}
