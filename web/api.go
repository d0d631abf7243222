package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
)

// apiRoutes registers the JSON API. Answers give money and prices per unit as
// strings of dollars ("1234.56", exact to the micro-dollar); requests may give an
// amount as such a string or as a plain JSON number, read exactly from its text
// (apiv1.Money); times are RFC 3339. The bodies are the types of api/v1.
func (s *Server) apiRoutes(g *gin.RouterGroup) {
	g.GET("/openapi.json", s.openAPI)
	all := g.Group("", s.requireRole(anyone...))
	all.GET("/market", s.apiMarket)
	all.GET("/auctions", s.apiAuctions)
	all.GET("/auctions/:id", s.apiAuction)
	all.GET("/orders", s.apiOrders)
	all.GET("/orders/:id", s.apiOrder)
	team := g.Group("", s.requireRole(onTeam...))
	team.POST("/orders", s.apiPlaceOrder)
	team.DELETE("/orders/:id", s.apiWithdraw)
	team.POST("/orders/:id/withdraw", s.apiWithdraw)
	team.GET("/budget", s.apiOwnBudget)
	fin := g.Group("", s.requireRole(finance...))
	fin.GET("/teams/:team/budget", s.apiTeamBudget)
	fin.GET("/ledger/trial-balance", s.apiTrialBalance)
	g.GET("/auctions/:id/settlement", s.requireRole(identity.RoleFinance, identity.RoleOperator), s.apiSettlement)
	g.POST("/auctions/:id/close", s.requireRole(operator...), s.apiCloseAuction)

	// Reservations: teams make them; finance and operators read them.
	team.POST("/reservations/new", s.apiNewReservation)
	team.POST("/reservations", s.apiSubmitReservation)
	team.POST("/reservations/quote", s.apiQuoteReservation)
	team.POST("/reservations/:id/update", s.apiUpdateReservation)
	team.DELETE("/reservations/:id", s.apiDeleteReservation)
	all.GET("/reservations", s.apiReservations)
	all.GET("/reservations/:id", s.apiReservation)
	// Best-effort jobs on idle capacity: teams submit and cancel; everyone reads
	// (members their own team's).
	team.POST("/best-effort", s.apiSubmitBestEffort)
	team.DELETE("/best-effort/:id", s.apiCancelBestEffort)
	all.GET("/best-effort", s.apiBestEffortJobs)
	all.GET("/best-effort/:id", s.apiBestEffortJob)
	// Cluster agents, each with a token bound to its cluster; operators may read.
	g.GET("/clusters/:cluster/allocation", s.requireAgent(identity.RoleOperator), s.apiAllocation)
	g.POST("/clusters/:cluster/updates", s.requireAgent(), s.apiClusterUpdates)
	g.GET("/lost-value", s.requireRole(identity.RoleOperator, identity.RoleFinance), s.apiLostValue)
}

// priceBasis says what an auction price is: "traded" when units changed hands at
// it, "indicative" when nothing did (where the clock stopped; nobody paid it).
func priceBasis(traded bool) string {
	if traded {
		return "traded"
	}
	return "indicative"
}

func toAPIAuction(a exchange.Auction) apiv1.Auction {
	return apiv1.Auction{ID: a.ID, Status: string(a.Status), OpensAt: a.OpensAt, ClosesAt: a.ClosesAt, ClosedAt: a.ClosedAt, Settled: a.SettledAt, Failure: a.Failure}
}

func (s *Server) apiMarket(c *gin.Context) {
	ctx := c.Request.Context()
	pools, err := s.svc.Market.Pools(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	hs, err := s.svc.Market.Holdings(ctx, "")
	if err != nil {
		s.fail(c, err)
		return
	}
	held := map[string]int64{}
	for _, h := range hs {
		held[h.PoolID] += h.Quantity
	}
	reserve, err := s.svc.Market.ReservePrices(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := apiv1.Market{Pools: []apiv1.Pool{}}
	current := map[string]float64{}
	traded := map[string]bool{}
	interest := map[string]exchange.Interest{}
	if a, ok, err := s.svc.Market.CurrentAuction(ctx); err != nil {
		s.fail(c, err)
		return
	} else if ok {
		aa := toAPIAuction(a)
		out.Auction = &aa
		if aps, err := s.svc.Market.AuctionPools(ctx, a.ID); err == nil {
			for _, ap := range aps {
				reserve[ap.PoolID] = ap.ReservePrice
			}
		}
		if _, prices, ok, err := s.svc.Market.LatestRun(ctx, a.ID); err == nil && ok {
			for _, p := range prices {
				current[p.PoolID], traded[p.PoolID] = p.Price, p.Traded()
			}
		}
		if interest, err = s.svc.Market.OpenInterest(ctx, a.ID); err != nil {
			s.fail(c, err)
			return
		}
	}
	if len(current) == 0 { // no run in the current auction yet: the last settled prices
		hist, err := s.svc.Market.PriceHistory(ctx, 1)
		if err != nil {
			s.fail(c, err)
			return
		}
		for _, p := range hist {
			current[p.PoolID], traded[p.PoolID] = p.Price, p.Traded()
		}
	}
	psi, source, err := s.psiOf(ctx, pools)
	if err != nil {
		s.fail(c, err)
		return
	}
	caps, err := s.svc.Market.Capacities(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	capacity := capacityByPool(caps)
	for _, p := range pools {
		ap := apiv1.Pool{ID: p.ID, Cluster: p.ClusterID, Resource: p.Resource, Unit: p.Unit, Capacity: p.Capacity, Held: held[p.ID],
			EffectiveCapacity: capacity[p.ID].Effective, CapacitySource: capacity[p.ID].Source,
			UnitCost: p.UnitCost.Plain(), Utilization: psi[p.ID], UtilizationSource: source[p.ID], Bids: interest[p.ID].Bids, Offers: interest[p.ID].Offers}
		if r, ok := reserve[p.ID]; ok {
			rs := apiPrice(r)
			ap.ReservePrice = &rs
		}
		if cp, ok := current[p.ID]; ok {
			cs := apiPrice(cp)
			ap.Price, ap.PriceBasis = &cs, priceBasis(traded[p.ID])
		}
		out.Pools = append(out.Pools, ap)
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) apiAuctions(c *gin.Context) {
	as, err := s.svc.Market.Auctions(c.Request.Context(), 100)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := []apiv1.Auction{}
	for _, a := range as {
		out = append(out, toAPIAuction(a))
	}
	c.JSON(http.StatusOK, apiv1.AuctionList{Auctions: out})
}

func (s *Server) apiAuction(c *gin.Context) {
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
	out := toAPIAuction(a)
	aps, err := s.svc.Market.AuctionPools(ctx, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	run, prices, ok, err := s.svc.Market.LatestRun(ctx, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	byPool := map[string]exchange.RunPrice{}
	for _, p := range prices {
		byPool[p.PoolID] = p
	}
	if ok {
		out.Run = &apiv1.Run{Binding: run.Binding, Converged: run.Converged, Rounds: run.Rounds, Orders: run.Orders, RanAt: run.RanAt}
	}
	for _, ap := range aps {
		row := apiv1.AuctionPool{Pool: ap.PoolID, ReservePrice: apiPrice(ap.ReservePrice), Supply: ap.Supply}
		if p, ok := byPool[ap.PoolID]; ok {
			ps := apiPrice(p.Price)
			row.Price, row.ExcessDemand, row.PriceBasis, row.TradedUnits = &ps, &p.ExcessDemand, priceBasis(p.Traded()), p.TradedUnits
		}
		out.Pools = append(out.Pools, row)
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) apiCloseAuction(c *gin.Context) {
	id, err := auctionID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if _, err := s.svc.Market.Close(c.Request.Context(), id); err != nil {
		s.fail(c, err)
		return
	}
	s.apiAuction(c)
}
