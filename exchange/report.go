package exchange

import (
	"context"
	"errors"
	"math"
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

// Stats returns the operator's figures for the last n settled auctions, newest
// first: share of orders settled, winning buyers' bid premium (limit over payment,
// minus one: how much more they would have paid), each pool's price change against
// the previous settled auction, and the utilization of pools where trades settled.
func (m *Market) Stats(ctx context.Context, n int) ([]AuctionStats, error) {
	var as []Auction
	if err := m.db.Read.WithContext(ctx).Where("status = ?", AuctionSettled).Order("closes_at DESC").Limit(n + 1).Find(&as).Error; err != nil {
		return nil, err
	}
	prices := func(id int64) (map[string]float64, error) {
		var rows []RunPrice
		err := m.db.Read.WithContext(ctx).Raw(`SELECT p.* FROM run_prices p JOIN auction_runs r ON r.id = p.run_id WHERE r.auction_id = ? AND r.binding`, id).Scan(&rows).Error
		out := map[string]float64{}
		for _, r := range rows {
			out[r.PoolID] = r.Price
		}
		return out, err
	}
	var out []AuctionStats
	for i, a := range as {
		if i == n {
			break
		}
		rep, err := m.SettlementReport(ctx, a.ID)
		if err != nil {
			return nil, err
		}
		st := AuctionStats{Auction: a, Orders: len(rep.Lines), PriceChange: map[string]float64{}, Utilization: map[string]float64{}}
		var premiums []float64
		ids := make([]int64, 0, len(rep.Lines))
		for _, l := range rep.Lines {
			ids = append(ids, l.OrderID)
		}
		var os []Order
		if err := m.db.Read.WithContext(ctx).Where("id IN ?", ids).Find(&os).Error; err != nil {
			return nil, err
		}
		views, err := m.views(ctx, m.db.Read.WithContext(ctx), os)
		if err != nil {
			return nil, err
		}
		byID := map[int64]OrderView{}
		for _, v := range views {
			byID[v.ID] = v
		}
		var aps []AuctionPool
		if err := m.db.Read.WithContext(ctx).Where("auction_id = ?", a.ID).Find(&aps).Error; err != nil {
			return nil, err
		}
		util := map[string]float64{}
		for _, ap := range aps {
			util[ap.PoolID] = ap.Utilization
		}
		for _, l := range rep.Lines {
			if l.BundleIndex < 0 {
				continue
			}
			st.Won++
			for pool := range l.Bundle {
				st.Utilization[pool] = util[pool]
			}
			if l.Payment > 0 {
				limit := byID[l.OrderID].Spec.LimitOf(l.BundleIndex)
				premiums = append(premiums, float64(limit)/float64(l.Payment)-1)
			}
		}
		if st.Orders > 0 {
			st.ShareSettled = float64(st.Won) / float64(st.Orders)
		}
		st.PremiumMedian, st.PremiumMean = medianMean(premiums)
		if i+1 < len(as) {
			now, err := prices(a.ID)
			if err != nil {
				return nil, err
			}
			prev, err := prices(as[i+1].ID)
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
