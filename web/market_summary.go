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
	reserve, err := s.svc.Market.ReservePrices(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	var v templates.MarketView
	current := map[string]float64{}
	indicative := map[string]bool{} // pools where nothing traded at the current price
	interest := map[string]exchange.Interest{}
	if a, ok, err := s.svc.Market.CurrentAuction(ctx); err != nil {
		s.fail(c, err)
		return
	} else if ok {
		v.Auction = &templates.AuctionBanner{ID: a.ID, Status: string(a.Status), ClosesAt: fmtTime(a.ClosesAt), OpensAt: fmtTime(a.OpensAt)}
		if a.Status == exchange.AuctionOpen {
			v.Auction.TimeLeft = fmtDuration(a.ClosesAt.Sub(s.now()))
			aps, err := s.svc.Market.AuctionPools(ctx, a.ID)
			if err != nil {
				s.fail(c, err)
				return
			}
			for _, ap := range aps {
				reserve[ap.PoolID] = ap.ReservePrice // fixed when the window opened
			}
		}
		if _, prices, ok, err := s.svc.Market.LatestRun(ctx, a.ID); err != nil {
			s.fail(c, err)
			return
		} else if ok {
			for _, p := range prices {
				current[p.PoolID] = p.Price
				if !p.Traded() {
					indicative[p.PoolID] = true
				}
			}
		}
		if interest, err = s.svc.Market.OpenInterest(ctx, a.ID); err != nil {
			s.fail(c, err)
			return
		}
	}
	psi, source, err := s.psiOf(ctx, pools)
	if err != nil {
		s.fail(c, err)
		return
	}
	basis, err := s.psiBases(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	trend, err := s.trends(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	byCluster := map[string][]exchange.Pool{}
	for _, p := range pools {
		byCluster[p.ClusterID] = append(byCluster[p.ClusterID], p)
	}
	for _, cl := range clusters {
		cv := templates.ClusterView{ID: cl.ID, Name: cl.Name, Region: cl.Region}
		for _, p := range byCluster[cl.ID] {
			pv := templates.PoolView{
				ID: p.ID, Resource: p.Resource, Unit: p.Unit, Capacity: p.Capacity, Held: held[p.ID],
				UnitCost: unitCost(p), Utilization: fmt.Sprintf("%.0f%%", psi[p.ID]*100),
				PsiSource: source[p.ID], PsiBasis: basis[p.ID], Trend: trend[p.ID],
				Bids: interest[p.ID].Bids, Offers: interest[p.ID].Offers,
			}
			if r, ok := reserve[p.ID]; ok {
				pv.Reserve = &templates.Price{Dollars: r, Unit: p.Unit}
			}
			if cp, ok := current[p.ID]; ok {
				pv.Price = &templates.Price{Dollars: cp, Unit: p.Unit, Indicative: indicative[p.ID]}
			}
			cv.Pools = append(cv.Pools, pv)
		}
		v.Clusters = append(v.Clusters, cv)
	}
	s.render(c, http.StatusOK, templates.MarketPage(s.page(c, "Market", "market"), v))
}
