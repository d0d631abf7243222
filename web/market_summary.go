package web

import (
	"fmt"
	"net/http"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// marketSummary shows each cluster's pools with capacity, holdings and prices.
func (s *Server) marketSummary(c *gin.Context) {
	ctx := c.Request.Context()
	clusters, err := s.svc.Market.Clusters(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	pools, err := s.svc.Market.Pools(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	holdings, err := s.svc.Market.Holdings(ctx, "")
	if err != nil {
		s.fail(c, err)
		return
	}
	held := map[string]int64{}
	for _, h := range holdings {
		held[h.PoolID] += h.Quantity
	}
	byCluster := map[string][]exchange.Pool{}
	for _, p := range pools {
		byCluster[p.ClusterID] = append(byCluster[p.ClusterID], p)
	}
	var v templates.MarketView
	for _, cl := range clusters {
		cv := templates.ClusterView{ID: cl.ID, Name: cl.Name, Region: cl.Region}
		for _, p := range byCluster[cl.ID] {
			cv.Pools = append(cv.Pools, templates.PoolView{
				ID: p.ID, Resource: p.Resource, Unit: p.Unit, Capacity: p.Capacity, Held: held[p.ID],
				UnitCost: dollars(p.UnitCost), Utilization: fmt.Sprintf("%.0f%%", p.Utilization*100),
			})
		}
		v.Clusters = append(v.Clusters, cv)
	}
	s.render(c, http.StatusOK, templates.MarketPage(s.page(c, "Market", "market"), v))
}

// dollars formats micro-dollars as dollars with two or more decimals.
func dollars(micros int64) string {
	neg := micros < 0
	if neg {
		micros = -micros
	}
	whole, frac := micros/1_000_000, micros%1_000_000
	s := fmt.Sprintf("%d.%06d", whole, frac)
	for len(s) > len(fmt.Sprint(whole))+3 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if neg {
		return "-" + s
	}
	return s
}
