package exchange

import (
	"context"
	"errors"
	"math"

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
}

// ReportLine is one order's part of a settlement.
type ReportLine struct {
	SettlementLine
	Bundle Bundle  // the bundle it got, nil when it lost
	Exact  float64 // the clock's payment in dollars, before rounding
}

// SettlementReport returns the report of a settled auction; before settlement the
// lines are empty. Returns ENOTFOUND for an unknown auction.
func (m *Market) SettlementReport(ctx context.Context, id int64) (SettlementReport, error) {
	a, err := m.Auction(ctx, id)
	if err != nil {
		return SettlementReport{}, err
	}
	rep := SettlementReport{Auction: a}
	db := m.db.Read.WithContext(ctx)
	var lines []SettlementLine
	if err := db.Where("auction_id = ?", id).Order("order_id").Find(&lines).Error; err != nil {
		return rep, err
	}
	if len(lines) == 0 {
		return rep, nil
	}
	var run AuctionRun
	if err := db.Where("auction_id = ? AND binding", id).Take(&run).Error; err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return rep, err
	}
	var outs []runOutcome
	if err := db.Where("run_id = ?", run.ID).Find(&outs).Error; err != nil {
		return rep, err
	}
	exact := map[int64]float64{}
	for _, o := range outs {
		exact[o.OrderID] = o.Payment
	}
	ids := make([]int64, len(lines))
	for i, l := range lines {
		ids[i] = l.OrderID
	}
	var os []Order
	if err := db.Where("id IN ?", ids).Find(&os).Error; err != nil {
		return rep, err
	}
	views, err := m.views(ctx, db, os)
	if err != nil {
		return rep, err
	}
	byID := map[int64]OrderView{}
	for _, v := range views {
		byID[v.ID] = v
	}
	var exactSum float64
	for _, l := range lines {
		rl := ReportLine{SettlementLine: l, Exact: exact[l.OrderID]}
		if l.BundleIndex >= 0 {
			rl.Bundle = byID[l.OrderID].Spec.Bundles[l.BundleIndex]
			exactSum += rl.Exact
		}
		p := ledger.Money(l.Payment)
		if p > 0 {
			rep.BuyersPaid += p
		} else {
			rep.SellersReceived -= p
		}
		rep.Lines = append(rep.Lines, rl)
	}
	rep.TreasuryNet = rep.BuyersPaid - rep.SellersReceived
	rep.Rounding = math.Round(((rep.TreasuryNet.Dollars())-exactSum)*1e6) / 1e6
	return rep, nil
}

// AuctionStats are an operator's figures for one auction.
type AuctionStats struct {
	Auction       Auction
	Orders, Won   int
	ShareSettled  float64 // won orders over orders that took part
	PremiumMedian float64 // (limit - payment) / payment over winning buyers
	PremiumMean   float64
	PriceChange   map[string]float64 // relative change against the previous settled auction, per pool
	Utilization   map[string]float64 // utilization of pools where trades settled
}
