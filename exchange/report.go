package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/clearhouse/clearhouse/ledger"
	"gorm.io/gorm"
)

// SettlementReport is what an auction's settlement moved: each order's bundle and
// payment, and the totals finance reconciles. BuyersPaid = SellersReceived +
// TreasuryNet always holds exactly (in micro-dollars); Rounding is how far the
// settled payments are from the clock's unrounded ones, absorbed by the treasury.
type SettlementReport struct {
	Auction         Auction
	Lines           []ReportLine
	BuyersPaid      ledger.Money
	SellersReceived ledger.Money
	TreasuryNet     ledger.Money
	Rounding        float64 // dollars: settled minus unrounded payments
	// Run is the binding run: whether a final round ran, its welfare against the
	// clock's, its bound and whether it proved its allocation optimal
	// (FinalRoundChanges lists whom it changed and every non-uniform payment).
	Run AuctionRun
}

// ReportLine is one order's part of a settlement.
type ReportLine struct {
	SettlementLine
	Bundle      Bundle   // the bundle it got, nil when it lost
	Exact       float64  // the engine's payment in dollars, before rounding
	AtPrices    float64  // its bundle at the published prices, in dollars
	ClockBundle int      // the bundle the clock alone gave it, -1 for none
	PaymentRule string   // the rule its payment followed (PaidCore, ...); "" when it lost or not recorded
	VCGPayment  *float64 // a core payment's VCG payment in dollars, the least it could be; nil for no core payment or not recorded
}

// Uniform reports whether the line's payment is its bundle at the published prices
// (to the micro-dollar).
func (l ReportLine) Uniform() bool {
	return l.BundleIndex < 0 || math.Abs(l.Exact-l.AtPrices) < 5e-7
}

// SettlementReport returns the whole report of a settled auction; before
// settlement the lines are empty. Returns ENOTFOUND for an unknown auction. For
// pages, SettlementPage reads the totals and one page of lines.
func (m *Market) SettlementReport(ctx context.Context, id int64) (SettlementReport, error) {
	rep, _, err := m.SettlementPage(ctx, id, 0, 0)
	return rep, err
}

// SettlementPage returns a settled auction's totals (over every line) and the
// lines of orders after order id after, at most limit of them (0: all). next is
// the after of the following page, or 0 when this is the last. Returns ENOTFOUND
// for an unknown auction.
func (m *Market) SettlementPage(ctx context.Context, id, after int64, limit int) (rep SettlementReport, next int64, err error) {
	a, err := m.Auction(ctx, id)
	if err != nil {
		return SettlementReport{}, 0, err
	}
	rep = SettlementReport{Auction: a}
	db := m.db.Read.WithContext(ctx)
	var totals struct {
		Paid, Received int64
		Exact          float64
	}
	if err := db.Raw(`SELECT COALESCE(SUM(CASE WHEN l.payment > 0 THEN l.payment ELSE 0 END), 0) AS paid,
		COALESCE(SUM(CASE WHEN l.payment < 0 THEN -l.payment ELSE 0 END), 0) AS received,
		COALESCE(SUM(CASE WHEN l.bundle_index >= 0 THEN o.payment ELSE 0 END), 0) AS exact
		FROM settlement_lines l LEFT JOIN auction_runs r ON r.auction_id = l.auction_id AND r.binding
		LEFT JOIN run_outcomes o ON o.run_id = r.id AND o.order_id = l.order_id
		WHERE l.auction_id = ?`, id).Scan(&totals).Error; err != nil {
		return rep, 0, err
	}
	rep.BuyersPaid, rep.SellersReceived = ledger.Money(totals.Paid), ledger.Money(totals.Received)
	rep.TreasuryNet = rep.BuyersPaid - rep.SellersReceived
	rep.Rounding = math.Round((rep.TreasuryNet.Dollars()-totals.Exact)*1e6) / 1e6
	q := db.Where("auction_id = ? AND order_id > ?", id, after).Order("order_id")
	if limit > 0 {
		q = q.Limit(limit + 1)
	}
	var lines []SettlementLine
	if err := q.Find(&lines).Error; err != nil {
		return rep, 0, err
	}
	if limit > 0 && len(lines) > limit {
		lines = lines[:limit]
		next = lines[limit-1].OrderID
	}
	if rep.Lines, err = m.reportLines(db, id, lines); err != nil {
		return rep, 0, err
	}
	if err := db.Where("auction_id = ? AND binding", id).Limit(1).Find(&rep.Run).Error; err != nil {
		return rep, 0, err
	}
	return rep, next, err
}

// reportLines adds each line's bundle and unrounded payment.
func (m *Market) reportLines(db *gorm.DB, auctionID int64, lines []SettlementLine) ([]ReportLine, error) {
	if len(lines) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(lines))
	for i, l := range lines {
		ids[i] = l.OrderID
	}
	exact := map[int64]runOutcome{}
	for part := range slices.Chunk(ids, chunkSize) {
		var outs []runOutcome
		if err := db.Raw(`SELECT o.* FROM run_outcomes o JOIN auction_runs r ON r.id = o.run_id
			WHERE r.auction_id = ? AND r.binding AND o.order_id IN ?`, auctionID, part).Scan(&outs).Error; err != nil {
			return nil, err
		}
		for _, o := range outs {
			exact[o.OrderID] = o
		}
	}
	os, err := ordersByID(db, ids)
	if err != nil {
		return nil, err
	}
	views, err := loadViews(db, os, false)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]OrderView, len(views))
	for _, v := range views {
		byID[v.ID] = v
	}
	out := make([]ReportLine, len(lines))
	for i, l := range lines {
		o, ok := exact[l.OrderID]
		if !ok {
			o.ClockBundle = -1
		}
		out[i] = ReportLine{SettlementLine: l, Exact: o.Payment, AtPrices: o.AtPrices, ClockBundle: o.ClockBundle, PaymentRule: o.PaymentRule, VCGPayment: o.VCGPayment}
		if l.BundleIndex >= 0 {
			out[i].Bundle = byID[l.OrderID].Spec.Bundles[l.BundleIndex]
		}
	}
	return out, nil
}

// AuctionStats are an operator's figures for one auction.
type AuctionStats struct {
	Auction       Auction
	Orders, Won   int
	ShareSettled  float64 // won orders over orders that took part
	PremiumMedian float64 // bid premium of the winners (eq. 5): buyers (limit - paid) / paid, sellers (received - minimum) / received
	PremiumMean   float64
	Prices        map[string]float64 // traded price per pool (dollars per unit): pools where units changed hands
	Indicative    map[string]float64 // where the clock stopped in pools where nothing traded: no one paid it
	PriceChange   map[string]float64 // relative change of a traded price against the previous auction's traded price there
	Utilization   map[string]float64 // utilization of pools where trades settled
}

// statsRow is a row of auction_stats: an auction's figures, computed once when it
// settles.
type statsRow struct {
	AuctionID     int64
	Orders, Won   int
	PremiumMedian *float64
	PremiumMean   *float64
	Utilization   string // JSON: pool -> utilization, for pools where trades settled
}

func (statsRow) TableName() string { return "auction_stats" }

// figures works out an auction's statistics from its settlement: the orders that
// took part, the winners, each winning buyer's bid premium, and the utilization
// (fixed when the auction opened) of the pools where trades settled.
func figures(a Auction, views []OrderView, lines []SettlementLine, aps []AuctionPool) (statsRow, error) {
	util := map[string]float64{}
	for _, ap := range aps {
		util[ap.PoolID] = ap.Utilization
	}
	byID := make(map[int64]OrderView, len(views))
	for _, v := range views {
		byID[v.ID] = v
	}
	row := statsRow{AuctionID: a.ID, Orders: len(lines)}
	settled := map[string]float64{}
	var premiums []float64
	for _, l := range lines {
		if l.BundleIndex < 0 {
			continue
		}
		row.Won++
		v := byID[l.OrderID]
		for pool := range v.Spec.Bundles[l.BundleIndex] {
			settled[pool] = util[pool]
		}
		switch limit := v.Spec.LimitOf(l.BundleIndex); {
		case l.Payment > 0: // a buyer: how much more it would have paid
			premiums = append(premiums, float64(limit)/float64(l.Payment)-1)
		case l.Payment < 0 && limit < 0: // a seller: how much of what it received was above its minimum
			premiums = append(premiums, 1-float64(limit)/float64(l.Payment))
		}
	}
	if len(premiums) > 0 {
		med, mean := medianMean(premiums)
		row.PremiumMedian, row.PremiumMean = &med, &mean
	}
	u, err := json.Marshal(settled)
	row.Utilization = string(u)
	return row, err
}

// recordFigures stores an auction's statistics inside its settlement's tx.
func recordFigures(tx *gorm.DB, a Auction, views []OrderView, lines []SettlementLine) error {
	var aps []AuctionPool
	if err := tx.Where("auction_id = ?", a.ID).Find(&aps).Error; err != nil {
		return err
	}
	row, err := figures(a, views, lines, aps)
	if err != nil {
		return err
	}
	return tx.Create(&row).Error
}

// Stats returns the operator's figures for the last n settled auctions, newest
// first: share of orders settled, the winners' bid premium (eq. 5 of Stokely et al.:
// buyers (limit - paid) / paid, sellers (received - minimum) / received), the traded
// prices (and apart, the indicative ones of pools where nothing traded), each traded
// price's change against the previous settled auction's traded price in the pool,
// and the utilization of pools where trades settled.
// The figures of each auction were computed when it settled (or, for an auction
// settled before they were kept, the first time they are asked for), so the page
// costs the same whatever the auctions' size.
func (m *Market) Stats(ctx context.Context, n int) ([]AuctionStats, error) {
	db := m.db.Read.WithContext(ctx)
	var as []Auction
	if err := db.Where("status = ?", AuctionSettled).Order(closedOrder).Limit(n + 1).Find(&as).Error; err != nil {
		return nil, err
	}
	// prices are the binding run's prices, split into traded ones and indicative ones
	// (pools where nothing changed hands).
	prices := func(id int64) (traded, indicative map[string]float64, err error) {
		var rows []RunPrice
		if err := db.Raw(`SELECT p.* FROM run_prices p JOIN auction_runs r ON r.id = p.run_id WHERE r.auction_id = ? AND r.binding`, id).Scan(&rows).Error; err != nil {
			return nil, nil, err
		}
		var runs []int64
		if len(rows) > 0 {
			runs = []int64{rows[0].RunID}
		}
		units, err := tradedUnits(db, runs)
		if err != nil {
			return nil, nil, err
		}
		traded, indicative = map[string]float64{}, map[string]float64{}
		for _, r := range rows {
			if units[r.RunID][r.PoolID] > 0 {
				traded[r.PoolID] = r.Price
			} else {
				indicative[r.PoolID] = r.Price
			}
		}
		return traded, indicative, nil
	}
	var out []AuctionStats
	for i, a := range as {
		if i == n {
			break
		}
		row, err := m.statsOf(ctx, a)
		if err != nil {
			return nil, err
		}
		st := AuctionStats{Auction: a, Orders: row.Orders, Won: row.Won, PremiumMedian: math.NaN(), PremiumMean: math.NaN(),
			PriceChange: map[string]float64{}, Utilization: map[string]float64{}}
		if row.PremiumMedian != nil {
			st.PremiumMedian, st.PremiumMean = *row.PremiumMedian, *row.PremiumMean
		}
		if err := json.Unmarshal([]byte(row.Utilization), &st.Utilization); err != nil {
			return nil, fmt.Errorf("auction %d: statistics: %w", a.ID, err)
		}
		if st.Orders > 0 {
			st.ShareSettled = float64(st.Won) / float64(st.Orders)
		}
		now, indicative, err := prices(a.ID)
		if err != nil {
			return nil, err
		}
		st.Prices, st.Indicative = now, indicative
		if i+1 < len(as) {
			prev, _, err := prices(as[i+1].ID)
			if err != nil {
				return nil, err
			}
			for pool, p := range now {
				if q, ok := prev[pool]; ok && q > 0 {
					st.PriceChange[pool] = p/q - 1
				}
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// statsOf returns a settled auction's stored figures, working them out and storing
// them the first time for an auction that settled before they were kept.
func (m *Market) statsOf(ctx context.Context, a Auction) (statsRow, error) {
	var row statsRow
	err := m.db.Read.WithContext(ctx).Take(&row, "auction_id = ?", a.ID).Error
	if !errors.Is(err, gorm.ErrRecordNotFound) {
		return row, err
	}
	db := m.db.Read.WithContext(ctx)
	var lines []SettlementLine
	if err := db.Where("auction_id = ?", a.ID).Order("order_id").Find(&lines).Error; err != nil {
		return row, err
	}
	ids := make([]int64, len(lines))
	for i, l := range lines {
		ids[i] = l.OrderID
	}
	os, err := ordersByID(db, ids)
	if err != nil {
		return row, err
	}
	views, err := loadViews(db, os, false)
	if err != nil {
		return row, err
	}
	err = m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if tx.Take(&row, "auction_id = ?", a.ID).Error == nil {
			return nil // another request stored them first
		}
		if err := recordFigures(tx, a, views, lines); err != nil {
			return err
		}
		return tx.Take(&row, "auction_id = ?", a.ID).Error
	})
	return row, err
}

func medianMean(xs []float64) (median, mean float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	for _, x := range s {
		mean += x
	}
	mean /= float64(len(s))
	if len(s)%2 == 1 {
		return s[len(s)/2], mean
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, mean
}

// ordersByID loads orders by id, in chunks, in id order.
func ordersByID(db *gorm.DB, ids []int64) ([]Order, error) {
	out := make([]Order, 0, len(ids))
	for part := range slices.Chunk(ids, chunkSize) {
		var os []Order
		if err := db.Where("id IN ?", part).Order("id").Find(&os).Error; err != nil {
			return nil, err
		}
		out = append(out, os...)
	}
	return out, nil
}

// RunChange is one order in a run with a final round whose outcome differs from
// the clock's alone (Changed: won a different bundle, won instead of lost, or lost
// instead of won), or whose payment is not its bundle at the published prices
// (not Uniform: Payment differs from AtPrices), or both. Bundles are nil for
// nothing.
type RunChange struct {
	OrderID           int64
	TeamID            string
	Bundle, Clock     Bundle
	Payment, AtPrices float64 // dollars, as the engine computed them
	Changed, Uniform  bool
	PaymentRule       string   // the rule the winner's payment followed (PaidCore, ...); "" when it lost or not recorded
	VCGPayment        *float64 // a core payment's VCG payment in dollars; nil for no core payment or not recorded
}

// FinalRoundChanges returns, for a run, every order whose outcome the final round
// changed from the clock's and every winner whose payment is not uniform, in order
// id order. A run without a final round has none.
func (m *Market) FinalRoundChanges(ctx context.Context, run AuctionRun) ([]RunChange, error) {
	if !run.FinalRound {
		return nil, nil
	}
	db := m.db.Read.WithContext(ctx)
	var outs []runOutcome
	if err := db.Raw(`SELECT * FROM run_outcomes WHERE run_id = ? AND (clock_bundle <> bundle_index
		OR (bundle_index >= 0 AND ABS(payment - at_prices) >= 0.0000005)) ORDER BY order_id`, run.ID).Scan(&outs).Error; err != nil {
		return nil, err
	}
	ids := make([]int64, len(outs))
	for i, o := range outs {
		ids[i] = o.OrderID
	}
	os, err := ordersByID(db, ids)
	if err != nil {
		return nil, err
	}
	views, err := loadViews(db, os, false)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]OrderView, len(views))
	for _, v := range views {
		byID[v.ID] = v
	}
	out := make([]RunChange, len(outs))
	for i, o := range outs {
		v := byID[o.OrderID]
		c := RunChange{OrderID: o.OrderID, TeamID: v.TeamID, Payment: o.Payment, AtPrices: o.AtPrices,
			Changed: o.ClockBundle != o.BundleIndex, Uniform: o.BundleIndex < 0 || math.Abs(o.Payment-o.AtPrices) < 5e-7, PaymentRule: o.PaymentRule, VCGPayment: o.VCGPayment}
		if o.BundleIndex >= 0 && o.BundleIndex < len(v.Spec.Bundles) {
			c.Bundle = v.Spec.Bundles[o.BundleIndex]
		}
		if o.ClockBundle >= 0 && o.ClockBundle < len(v.Spec.Bundles) {
			c.Clock = v.Spec.Bundles[o.ClockBundle]
		}
		out[i] = c
	}
	return out, nil
}
