package web

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// tradesPage lists every live order of every team.
func (s *Server) tradesPage(c *gin.Context) {
	vs, pg, err := s.orderPage(c, exchange.OrderFilter{Statuses: []exchange.OrderStatus{exchange.OrderOpen, exchange.OrderAwaitingApproval}, Limit: 100}, "open trades")
	if err != nil {
		s.fail(c, err)
		return
	}
	units, err := s.poolUnits(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, http.StatusOK, templates.TradesPage(s.page(c, "Open trades", "operate"), orderRows(userOf(c), vs, false, units), pg))
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "—"
	}
	return fmt.Sprintf("%+.1f%%", f*100)
}

// statsPage shows the operator's per-auction statistics.
func (s *Server) statsPage(c *gin.Context) {
	stats, err := s.svc.Market.Stats(c.Request.Context(), 30)
	if err != nil {
		s.fail(c, err)
		return
	}
	refs, err := s.svc.Market.ReferencePrices(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	var rows []templates.StatsRow
	for _, st := range stats {
		r := templates.StatsRow{ID: st.Auction.ID, Closed: fmtTime(st.Auction.Closed()),
			Settled:       fmt.Sprintf("%d of %d (%.0f%%)", st.Won, st.Orders, 100*st.ShareSettled),
			PremiumMedian: pct(st.PremiumMedian), PremiumMean: pct(st.PremiumMean)}
		for _, pool := range sortedKeys(st.PriceChange) {
			if math.Abs(st.PriceChange[pool]) >= 0.0005 { // unchanged pools would drown the rest
				r.Changes = append(r.Changes, pool+" "+pct(st.PriceChange[pool]))
			}
		}
		if len(r.Changes) == 0 && len(st.PriceChange) > 0 {
			r.Changes = []string{"no traded price moved"}
		}
		if len(st.Indicative) > 0 {
			r.Indicative = "Nothing traded in " + strings.Join(sortedKeys(st.Indicative), ", ") + ": their prices are indicative only and left out."
		}
		for _, pool := range sortedKeys(st.Utilization) {
			r.Utilization = append(r.Utilization, fmt.Sprintf("%s %.0f%%", pool, 100*st.Utilization[pool]))
		}
		for _, pool := range sortedKeys(st.Prices) {
			if ref := refs[pool]; ref > 0 {
				r.Reference = append(r.Reference, fmt.Sprintf("%s %.2f×", pool, st.Prices[pool]/ledger.Money(ref).Dollars()))
			}
		}
		rows = append(rows, r)
	}
	box, err := s.tradeBoxPlot(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	v := templates.StatsView{Rows: rows, Charts: statsCharts(stats, refs), NoReferences: len(refs) == 0, Box: box}
	s.render(c, http.StatusOK, templates.StatsPage(s.page(c, "Auction statistics", "operate"), v))
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
