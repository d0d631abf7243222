package web

import (
	"context"
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
	held, err := s.heldByPool(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	reserve, err := s.svc.Market.ReservePrices(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	var v templates.MarketView
	a, err := s.marketAuction(ctx, reserve)
	if err != nil {
		s.fail(c, err)
		return
	}
	v.Auction = a.banner
	u, err := s.marketUtilization(ctx, pools)
	if err != nil {
		s.fail(c, err)
		return
	}
	caps, err := s.svc.Market.Capacities(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	v.Clusters = marketClusters(clusters, pools, held, reserve, a, u)
	capacity := capacityByPool(caps)
	for i := range v.Clusters {
		for j := range v.Clusters[i].Pools {
			pv := &v.Clusters[i].Pools[j]
			pv.Capacity, pv.CapacitySource = capacity[pv.ID].Effective, capacity[pv.ID].Source
		}
	}
	s.render(c, http.StatusOK, templates.MarketPage(s.page(c, "Market", "market"), v))
}

// heldByPool returns the units all teams hold, by pool.
func (s *Server) heldByPool(ctx context.Context) (map[string]int64, error) {
	holdings, err := s.svc.Market.Holdings(ctx, "")
	if err != nil {
		return nil, err
	}
	held := map[string]int64{}
	for _, h := range holdings {
		held[h.PoolID] += h.Quantity
	}
	return held, nil
}

// marketAuctionView is what the market page shows of the current auction.
type marketAuctionView struct {
	banner     *templates.AuctionBanner // nil when there is no current auction
	current    map[string]float64       // pool -> its latest run's price
	indicative map[string]bool          // pools where nothing traded at the current price
	interest   map[string]exchange.Interest
}

// marketAuction returns the current auction's banner, its latest run's prices and
// its open interest, all empty when there is none. While its window is open, the
// reserve prices fixed when it opened replace those in reserve.
func (s *Server) marketAuction(ctx context.Context, reserve map[string]float64) (marketAuctionView, error) {
	v := marketAuctionView{
		current:    map[string]float64{},
		indicative: map[string]bool{}, // pools where nothing traded at the current price
		interest:   map[string]exchange.Interest{},
	}
	a, ok, err := s.svc.Market.CurrentAuction(ctx)
	if err != nil || !ok {
		return v, err
	}
	v.banner = &templates.AuctionBanner{ID: a.ID, Status: string(a.Status), ClosesAt: fmtTime(a.ClosesAt), OpensAt: fmtTime(a.OpensAt)}
	if a.Status == exchange.AuctionOpen {
		v.banner.TimeLeft = fmtDuration(a.ClosesAt.Sub(s.now()))
		aps, err := s.svc.Market.AuctionPools(ctx, a.ID)
		if err != nil {
			return v, err
		}
		for _, ap := range aps {
			reserve[ap.PoolID] = ap.ReservePrice // fixed when the window opened
		}
	}
	if _, prices, ok, err := s.svc.Market.LatestRun(ctx, a.ID); err != nil {
		return v, err
	} else if ok {
		for _, p := range prices {
			v.current[p.PoolID] = p.Price
			if !p.Traded() {
				v.indicative[p.PoolID] = true
			}
		}
	}
	if v.interest, err = s.svc.Market.OpenInterest(ctx, a.ID); err != nil {
		return v, err
	}
	return v, nil
}

// marketUtilizationView is each pool's utilization as the market page shows it.
type marketUtilizationView struct {
	psi    map[string]float64
	source map[string]string
	basis  map[string]string
	trend  map[string]templates.Sparkline
}

// marketUtilization returns the pools' utilization (psi), where it comes from,
// its basis and its trend.
func (s *Server) marketUtilization(ctx context.Context, pools []exchange.Pool) (marketUtilizationView, error) {
	var u marketUtilizationView
	var err error
	if u.psi, u.source, err = s.psiOf(ctx, pools); err != nil {
		return u, err
	}
	if u.basis, err = s.psiBases(ctx); err != nil {
		return u, err
	}
	if u.trend, err = s.trends(ctx); err != nil {
		return u, err
	}
	return u, nil
}

// marketClusters builds the market page's clusters, each with its pools in the
// order given.
func marketClusters(clusters []exchange.Cluster, pools []exchange.Pool, held map[string]int64, reserve map[string]float64, a marketAuctionView, u marketUtilizationView) []templates.ClusterView {
	byCluster := map[string][]exchange.Pool{}
	for _, p := range pools {
		byCluster[p.ClusterID] = append(byCluster[p.ClusterID], p)
	}
	var out []templates.ClusterView
	for _, cl := range clusters {
		cv := templates.ClusterView{ID: cl.ID, Name: cl.Name, Region: cl.Region}
		for _, p := range byCluster[cl.ID] {
			pv := templates.PoolView{
				ID: p.ID, Resource: p.Resource, Unit: p.Unit, Capacity: p.Capacity, Held: held[p.ID],
				UnitCost: unitCost(p), Utilization: fmt.Sprintf("%.0f%%", u.psi[p.ID]*100),
				PsiSource: u.source[p.ID], PsiBasis: u.basis[p.ID], Trend: u.trend[p.ID],
				Bids: a.interest[p.ID].Bids, Offers: a.interest[p.ID].Offers,
			}
			if r, ok := reserve[p.ID]; ok {
				pv.Reserve = &templates.Price{Dollars: r, Unit: p.Unit}
			}
			if cp, ok := a.current[p.ID]; ok {
				pv.Price = &templates.Price{Dollars: cp, Unit: p.Unit, Indicative: a.indicative[p.ID]}
			}
			cv.Pools = append(cv.Pools, pv)
		}
		out = append(out, cv)
	}
	return out
}
