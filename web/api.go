package web

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// apiRoutes registers the JSON API. Answers give money and prices per unit as
// strings of dollars ("1234.56", exact to the micro-dollar); requests may give an
// amount as such a string or as a plain JSON number, read exactly from its text
// (jsonMoney); times are RFC 3339.
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

type apiPool struct {
	ID       string `json:"id"`
	Cluster  string `json:"cluster"`
	Resource string `json:"resource"`
	Unit     string `json:"unit"`
	Capacity int64  `json:"capacity"` // configured
	// EffectiveCapacity is what the market sells (exchange.PoolCapacities): an
	// operator's override, else the agent's measured capacity, else the configured one.
	EffectiveCapacity int64   `json:"effective_capacity"`
	CapacitySource    string  `json:"capacity_source"` // configured, measured or override
	Held              int64   `json:"held"`
	UnitCost          string  `json:"unit_cost"`
	Utilization       float64 `json:"utilization"`
	// UtilizationSource says where psi comes from: measured, override or held (no usage data).
	UtilizationSource string  `json:"utilization_source,omitempty"`
	ReservePrice      *string `json:"reserve_price"`
	Price             *string `json:"price"`
	PriceBasis        string  `json:"price_basis,omitempty"` // "traded" or "indicative" (nothing traded at it)
	Bids              int     `json:"open_bids"`
	Offers            int     `json:"open_offers"`
}

type apiAuction struct {
	ID       int64            `json:"id"`
	Status   string           `json:"status"`
	OpensAt  time.Time        `json:"opens_at"`
	ClosesAt time.Time        `json:"closes_at"`
	ClosedAt *time.Time       `json:"closed_at"`  // when it actually stopped taking bids; null while it takes them
	Settled  *time.Time       `json:"settled_at"` // null until it settles
	Failure  string           `json:"failure,omitempty"`
	Pools    []apiAuctionPool `json:"pools,omitempty"`
	Run      *apiRun          `json:"latest_run,omitempty"`
}

type apiAuctionPool struct {
	Pool         string   `json:"pool"`
	ReservePrice string   `json:"reserve_price"`
	Supply       int64    `json:"supply"`
	Price        *string  `json:"price"`
	PriceBasis   string   `json:"price_basis,omitempty"` // "traded" or "indicative" (nothing traded at it)
	TradedUnits  int64    `json:"traded_units"`          // units bought at the price
	ExcessDemand *float64 `json:"excess_demand"`
}

type apiRun struct {
	Binding   bool      `json:"binding"`
	Converged bool      `json:"converged"`
	Rounds    int       `json:"rounds"`
	Orders    int       `json:"orders"`
	RanAt     time.Time `json:"ran_at"`
}

// priceBasis says what an auction price is: "traded" when units changed hands at
// it, "indicative" when nothing did (where the clock stopped; nobody paid it).
func priceBasis(traded bool) string {
	if traded {
		return "traded"
	}
	return "indicative"
}

func toAPIAuction(a exchange.Auction) apiAuction {
	return apiAuction{ID: a.ID, Status: string(a.Status), OpensAt: a.OpensAt, ClosesAt: a.ClosesAt, ClosedAt: a.ClosedAt, Settled: a.SettledAt, Failure: a.Failure}
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
	out := struct {
		Auction *apiAuction `json:"auction"`
		Pools   []apiPool   `json:"pools"`
	}{Pools: []apiPool{}}
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
		ap := apiPool{ID: p.ID, Cluster: p.ClusterID, Resource: p.Resource, Unit: p.Unit, Capacity: p.Capacity, Held: held[p.ID],
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
	out := []apiAuction{}
	for _, a := range as {
		out = append(out, toAPIAuction(a))
	}
	c.JSON(http.StatusOK, gin.H{"auctions": out})
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
		out.Run = &apiRun{Binding: run.Binding, Converged: run.Converged, Rounds: run.Rounds, Orders: run.Orders, RanAt: run.RanAt}
	}
	for _, ap := range aps {
		row := apiAuctionPool{Pool: ap.PoolID, ReservePrice: apiPrice(ap.ReservePrice), Supply: ap.Supply}
		if p, ok := byPool[ap.PoolID]; ok {
			ps := apiPrice(p.Price)
			row.Price, row.ExcessDemand, row.PriceBasis, row.TradedUnits = &ps, &p.ExcessDemand, priceBasis(p.Traded()), p.TradedUnits
		}
		out.Pools = append(out.Pools, row)
	}
	c.JSON(http.StatusOK, out)
}

// apiOrderBody is an order as the API takes and returns it.
type apiOrderBody struct {
	ID          int64              `json:"id,omitempty"`
	Team        string             `json:"team,omitempty"`
	Auction     *int64             `json:"auction,omitempty"`
	Status      string             `json:"status,omitempty"`
	Bundles     []map[string]int64 `json:"bundles"`
	Limit       *jsonMoney         `json:"limit,omitempty"`
	Limits      []jsonMoney        `json:"limits,omitempty"`
	Provisional *apiOutcome        `json:"provisional,omitempty"`
	CreatedAt   *time.Time         `json:"created_at,omitempty"`
}

type apiOutcome struct {
	BundleNumber int    `json:"bundle_number,omitempty"` // counted from 1, as pages and CSV count; absent: loses
	BundleIndex  int    `json:"bundle_index"`            // deprecated: counted from 0; -1: loses
	Payment      string `json:"payment"`                 // dollars; negative: received
}

func toAPIOrder(v exchange.OrderView) apiOrderBody {
	created := v.CreatedAt
	o := apiOrderBody{ID: v.ID, Team: v.TeamID, Auction: v.AuctionID, Status: string(v.Status), CreatedAt: &created}
	for _, b := range v.Spec.Bundles {
		o.Bundles = append(o.Bundles, map[string]int64(b))
	}
	if v.Spec.Limit != nil {
		l := moneyOut(*v.Spec.Limit)
		o.Limit = &l
	}
	for _, l := range v.Spec.Limits {
		o.Limits = append(o.Limits, moneyOut(l))
	}
	if v.Provisional != nil {
		o.Provisional = &apiOutcome{BundleNumber: v.Provisional.BundleIndex + 1, BundleIndex: v.Provisional.BundleIndex, Payment: apiPrice(v.Provisional.Payment)}
	}
	return o
}

func (s *Server) apiOrders(c *gin.Context) {
	u := userOf(c)
	pg, err := parsePage(c, 100, exchange.MaxPage)
	if err != nil {
		s.fail(c, err)
		return
	}
	f := exchange.OrderFilter{Limit: pg.Limit, Before: pg.Before}
	if u.Role.OnTeam() {
		f.Team = u.TeamID
	} else {
		f.Team = c.Query("team")
	}
	if st := c.Query("status"); st != "" {
		f.Statuses = []exchange.OrderStatus{exchange.OrderStatus(st)}
	}
	if a := c.Query("auction"); a != "" {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			s.fail(c, clearhouse.Errorf(clearhouse.EINVALID, "auction: must be an auction id"))
			return
		}
		f.AuctionID = id
	}
	vs, next, err := s.svc.Market.OrderPage(c.Request.Context(), f)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := []apiOrderBody{}
	for _, v := range vs {
		out = append(out, toAPIOrder(v))
	}
	body := gin.H{"orders": out}
	if next != 0 {
		q := c.Request.URL.Query()
		q.Set("before", strconv.FormatInt(next, 10))
		body["next"] = c.Request.URL.Path + "?" + q.Encode()
	}
	c.JSON(http.StatusOK, body)
}

func (s *Server) apiOrder(c *gin.Context) {
	id, ok := idParam(c)
	if !ok {
		s.fail(c, clearhouse.Errorf(clearhouse.ENOTFOUND, "No such order."))
		return
	}
	v, err := s.svc.Market.Order(c.Request.Context(), userOf(c), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toAPIOrder(v))
}

func (s *Server) apiPlaceOrder(c *gin.Context) {
	u := userOf(c)
	var body apiOrderBody
	if err := decodeJSON(c, &body); err != nil {
		s.fail(c, err)
		return
	}
	spec := exchange.OrderSpec{Team: u.TeamID, Key: c.GetHeader("Idempotency-Key")}
	if body.Team != "" {
		spec.Team = body.Team
	}
	for _, b := range body.Bundles {
		spec.Bundles = append(spec.Bundles, exchange.Bundle(b))
	}
	if body.Limit != nil {
		l, err := body.Limit.money("limit")
		if err != nil {
			s.fail(c, err)
			return
		}
		spec.Limit = &l
	}
	if body.Limits != nil {
		spec.Limits = []ledger.Money{}
		for i, raw := range body.Limits {
			l, err := raw.money(fmt.Sprintf("limits[%d]", i))
			if err != nil {
				s.fail(c, err)
				return
			}
			spec.Limits = append(spec.Limits, l)
		}
	}
	o, err := s.svc.Market.PlaceOrder(c.Request.Context(), u, spec)
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.svc.Market.Order(c.Request.Context(), u, o.ID)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := apiPlacedOrder{apiOrderBody: toAPIOrder(v)}
	if spec.Kind() == "bid" {
		bc, err := s.loadBidContext(c)
		if err != nil {
			s.fail(c, err)
			return
		}
		out.Warnings = limitBelowReserve(bc, spec)
	}
	c.Header("Location", fmt.Sprintf("/api/v1/orders/%d", o.ID))
	c.JSON(http.StatusCreated, out)
}

// apiPlacedOrder is a newly placed order with what its client should know: a
// bid whose limit is below the cost at reserve prices is placed, with a warning
// that it cannot win in this auction.
type apiPlacedOrder struct {
	apiOrderBody
	Warnings []string `json:"warnings,omitempty"`
}

func (s *Server) apiWithdraw(c *gin.Context) {
	id, ok := idParam(c)
	if !ok {
		s.fail(c, clearhouse.Errorf(clearhouse.ENOTFOUND, "No such order."))
		return
	}
	if err := s.svc.Market.WithdrawOrder(c.Request.Context(), userOf(c), id); err != nil {
		s.fail(c, err)
		return
	}
	s.apiOrder(c)
}

type apiBudget struct {
	Team      string `json:"team"`
	Posted    string `json:"posted"`
	Held      string `json:"held"`
	Available string `json:"available"`
}

func (s *Server) budget(c *gin.Context, team string) {
	if _, err := s.svc.Market.Team(c.Request.Context(), team); err != nil {
		s.fail(c, err)
		return
	}
	b, err := s.svc.Market.Ledger().Balance(c.Request.Context(), ledger.TeamAccount(team))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, apiBudget{Team: team, Posted: b.Posted.Plain(), Held: b.Held.Plain(), Available: b.Available.Plain()})
}

func (s *Server) apiOwnBudget(c *gin.Context)  { s.budget(c, userOf(c).TeamID) }
func (s *Server) apiTeamBudget(c *gin.Context) { s.budget(c, c.Param("team")) }

type apiSettlementLine struct {
	Order        int64            `json:"order"`
	Team         string           `json:"team"`
	BundleNumber int              `json:"bundle_number,omitempty"` // counted from 1, as pages and CSV count; absent: lost
	BundleIndex  int              `json:"bundle_index"`            // deprecated: counted from 0; -1: lost
	Bundle       map[string]int64 `json:"bundle,omitempty"`
	Payment      string           `json:"payment"`
	ClockPayment string           `json:"clock_payment"` // the engine's payment (clock and final round), unrounded
	AtPrices     string           `json:"at_prices"`     // the bundle at the published prices
	EntryID      *int64           `json:"entry_id,omitempty"`
}

// apiSettlement returns an auction's settlement report as JSON, or as CSV with
// ?format=csv.
func (s *Server) apiSettlement(c *gin.Context) {
	if c.Query("format") == "csv" {
		s.settlementCSV(c)
		return
	}
	id, err := auctionID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	rep, err := s.svc.Market.SettlementReport(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	lines := []apiSettlementLine{}
	for _, l := range rep.Lines {
		lines = append(lines, apiSettlementLine{Order: l.OrderID, Team: l.TeamID, BundleNumber: l.BundleIndex + 1, BundleIndex: l.BundleIndex, Bundle: l.Bundle,
			Payment: ledger.Money(l.Payment).Plain(), ClockPayment: apiPrice(l.Exact), AtPrices: apiPrice(l.AtPrices), EntryID: l.EntryID})
	}
	body := gin.H{"auction": toAPIAuction(rep.Auction), "lines": lines, "totals": gin.H{
		"buyers_paid": rep.BuyersPaid.Plain(), "sellers_received": rep.SellersReceived.Plain(),
		"treasury_net": rep.TreasuryNet.Plain(), "rounding": apiPrice(rep.Rounding)}}
	if r := rep.Run; r.FinalRound {
		body["final_round"] = gin.H{"welfare": r.Welfare, "clock_welfare": r.ClockWelfare, "bound": r.WelfareBound, "optimal": r.Optimal, "seconds": r.FinalSeconds, "payments": paymentsRule(r)}
	}
	c.JSON(http.StatusOK, body)
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

func (s *Server) apiTrialBalance(c *gin.Context) {
	tb, err := s.svc.Market.Ledger().TrialBalance(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	type account struct {
		Account string `json:"account"`
		Kind    string `json:"kind"`
		Balance string `json:"balance"`
		Held    string `json:"held"`
	}
	out := []account{}
	var total ledger.Money
	for _, a := range tb {
		out = append(out, account{Account: string(a.Account), Kind: a.Kind, Balance: a.Posted.Plain(), Held: a.Held.Plain()})
		if total, err = total.Add(a.Posted); err != nil {
			s.fail(c, err)
			return
		}
	}
	c.JSON(http.StatusOK, gin.H{"accounts": out, "total": total.Plain()})
}
