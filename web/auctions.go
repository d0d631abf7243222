package web

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

func (s *Server) auctionPage(c *gin.Context) {
	id, err := auctionID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	a, err := s.svc.Market.Auction(ctx, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	v := templates.AuctionView{ID: a.ID, Status: string(a.Status), Window: auctionWindow(a), Failure: a.Failure}
	if a.SettledAt != nil {
		v.Settled = fmtTime(*a.SettledAt)
	}
	if a.Status == exchange.AuctionOpen {
		v.Left = fmtDuration(a.ClosesAt.Sub(s.now()))
	}
	if u := viewerFrom(c); u.Can("finance") && a.Status == exchange.AuctionSettled {
		v.Settlement = fmt.Sprintf("/finance/auctions/%d", a.ID)
	}
	aps, err := s.svc.Market.AuctionPools(ctx, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	units, err := s.poolUnits(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	run, prices, ran, err := s.svc.Market.LatestRun(ctx, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	byPool := map[string]exchange.RunPrice{}
	for _, p := range prices {
		byPool[p.PoolID] = p
	}
	if ran {
		kind := "Preliminary run"
		if run.Binding {
			kind = "Binding run"
		}
		outcome := "prices settled"
		if !run.Converged {
			outcome = "prices had not settled when the round limit was reached"
		}
		v.Run = fmt.Sprintf("%s at %s: %s, %s, %s.", kind, fmtTime(run.RanAt), countOf(int64(run.Orders), "order"), countOf(int64(run.Rounds), "round"), outcome)
		if v.Final, err = s.finalRoundView(ctx, run, units); err != nil {
			s.fail(c, err)
			return
		}
	}
	for _, ap := range aps {
		row := templates.AuctionPoolRow{Pool: ap.PoolID, Supply: ap.Supply, Reserve: templates.Price{Dollars: ap.ReservePrice, Unit: units[ap.PoolID]}}
		if p, ok := byPool[ap.PoolID]; ok {
			row.Price = &templates.Price{Dollars: p.Price, Unit: units[ap.PoolID], Indicative: !p.Traded()}
			row.Balance = demandBalance(p.ExcessDemand)
			if ap.Supply == 0 && !p.Traded() && math.Round(p.ExcessDemand) == 0 {
				row.Balance = "no supply, no trades"
			}
			row.Sold = groupDigits(int64(math.Round(p.OperatorSold)))
			if ap.ReservePrice > 0 {
				row.Change = fmt.Sprintf("%+.1f%%", 100*(p.Price/ap.ReservePrice-1))
				if unsold := -math.Round(p.ExcessDemand); unsold > 0 && p.Price > ap.ReservePrice*1.0001 {
					v.PriceNotes = append(v.PriceNotes, unsoldAboveReserve(ap.PoolID, row.Change, unsold, units[ap.PoolID]))
				}
				if !p.Traded() {
					row.Change += " (indicative)"
				}
			}
		}
		v.Pools = append(v.Pools, row)
	}
	v.Trajectory = templates.LineChart{ID: "trajectory", Title: "Prices round by round (latest run), relative to each pool's reserve price",
		XLabel: "round", YLabel: "× reserve", FormatY: func(y float64) string { return strconv.FormatFloat(y, 'g', 3, 64) + "×" }}
	if ran {
		rounds, err := run.PriceRounds()
		if err == nil {
			v.Trajectory.Series = trajectorySeries(rounds, aps)
		}
	}
	s.render(c, http.StatusOK, templates.AuctionPage(s.page(c, fmt.Sprintf("Auction #%d", a.ID), "market"), v))
}

// unsoldAboveReserve explains a pool that ends above its reserve price with units
// unsold: bids for more than it supplied raised its price, and each bid takes its
// whole bundle or nothing, so they moved to other clusters or dropped out.
func unsoldAboveReserve(pool, change string, unsold float64, unit string) string {
	return fmt.Sprintf("Why is %s %s over reserve with %s unsold? Bids asked for more of it than was on offer, so its price rose round by round. "+
		"Each bid gets all of its bundle or nothing: as the price rose, they chose another cluster or dropped out, "+
		"and none was left that the units on offer could fill. The price shows where the last of them left; nobody pays it for units not sold.",
		pool, change, countOf(int64(unsold), unit))
}

// trajectorySeries draws every pool's price round by round as a multiple of its
// reserve price, so a $0.20 pool and a $200 pool both show how far they moved;
// pools that moved most come first (in the legend too).
func trajectorySeries(rounds []auction.Round, aps []exchange.AuctionPool) []templates.Series {
	if len(rounds) == 0 {
		return nil
	}
	last := rounds[len(rounds)-1].Prices
	type moved struct {
		pool    string
		reserve float64
		rise    float64
	}
	var ms []moved
	for _, ap := range aps {
		if ap.ReservePrice > 0 {
			ms = append(ms, moved{ap.PoolID, ap.ReservePrice, last[ap.PoolID] / ap.ReservePrice})
		}
	}
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].rise != ms[j].rise {
			return ms[i].rise > ms[j].rise
		}
		return ms[i].pool < ms[j].pool
	})
	out := make([]templates.Series, 0, len(ms))
	for _, m := range ms {
		sr := templates.Series{Name: m.pool}
		for _, r := range rounds {
			sr.Points = append(sr.Points, templates.Point{X: float64(r.Round), Y: r.Prices[m.pool] / m.reserve})
		}
		out = append(out, sr)
	}
	return out
}

func (s *Server) auctionsPage(c *gin.Context) {
	ctx := c.Request.Context()
	as, err := s.svc.Market.Auctions(ctx, 100)
	if err != nil {
		s.fail(c, err)
		return
	}
	var v templates.AuctionsView
	for _, a := range as {
		v.Auctions = append(v.Auctions, templates.AuctionLink{ID: a.ID, Status: string(a.Status), Window: auctionWindow(a)})
	}
	hist, err := s.svc.Market.PriceHistory(ctx, 60)
	if err != nil {
		s.fail(c, err)
		return
	}
	v.History = historyCharts(hist)
	s.render(c, http.StatusOK, templates.AuctionsPage(s.page(c, "Auctions and price history", "market"), v))
}

// auctionWindow says when an auction takes or took bids: its window while it is to
// come or open, then when it actually closed, with the scheduled close beside it
// when an operator closed it early.
func auctionWindow(a exchange.Auction) string {
	if a.ClosedAt == nil {
		return fmtTime(a.OpensAt) + " – " + fmtTime(a.ClosesAt)
	}
	w := fmtTime(a.OpensAt) + " – closed " + fmtTime(*a.ClosedAt)
	if a.ClosedAt.Before(a.ClosesAt.Add(-time.Minute)) {
		w += " (early; scheduled " + fmtTime(a.ClosesAt) + ")"
	}
	return w
}

// closesText is an auction's close for a table column: when it actually closed, or
// its scheduled close while it has not.
func closesText(a exchange.Auction) string {
	if a.ClosedAt == nil {
		return fmtTime(a.ClosesAt)
	}
	return "closed " + fmtTime(*a.ClosedAt)
}

// historyCharts draws one step chart per cluster of binding prices by auction, the
// auctions in the order they closed (hist's order), of prices at which units traded
// (a price where nothing traded is indicative only, and not charted): the x axis counts them, each
// labelled with its number, so an auction closed early and one added after it
// chart in the order they settled.
func historyCharts(hist []exchange.PricePoint) []templates.LineChart {
	series := map[string]map[string]*templates.Series{}
	var clusters []string
	position := map[int64]int{} // auction -> its place in closing order
	var order []int64
	for _, p := range hist {
		if _, ok := position[p.AuctionID]; !ok {
			position[p.AuctionID] = len(order)
			order = append(order, p.AuctionID)
		}
	}
	label := func(x float64) string {
		if i := int(x); float64(i) == x && i >= 0 && i < len(order) {
			return fmt.Sprintf("#%d", order[i])
		}
		return ""
	}
	for _, p := range hist {
		if !p.Traded() { // a price nobody paid is not charted as one
			continue
		}
		cl, _, _ := strings.Cut(p.PoolID, "/")
		if series[cl] == nil {
			series[cl] = map[string]*templates.Series{}
			clusters = append(clusters, cl)
		}
		sr := series[cl][p.PoolID]
		if sr == nil {
			sr = &templates.Series{Name: p.PoolID, Step: true}
			series[cl][p.PoolID] = sr
		}
		sr.Points = append(sr.Points, templates.Point{X: float64(position[p.AuctionID]), Y: p.Price})
	}
	sort.Strings(clusters)
	var out []templates.LineChart
	for _, cl := range clusters {
		ch := templates.LineChart{ID: "history-" + cl, Title: "Prices paid in " + cl + " (auctions where units of the pool traded; log scale)",
			XLabel: "auction", YLabel: "$ per unit", LogY: true, FormatY: func(y float64) string { return "$" + compactPrice(y) },
			FormatX: label}
		var pools []string
		for p := range series[cl] {
			pools = append(pools, p)
		}
		sort.Strings(pools)
		for _, p := range pools {
			ch.Series = append(ch.Series, *series[cl][p])
		}
		out = append(out, ch)
	}
	return out
}

// compactPrice is a tick label for prices on a log axis: "0.2", "5", "100".
func compactPrice(y float64) string { return strconv.FormatFloat(y, 'f', -1, 64) }
