package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/ledger"
)

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
	c.JSON(http.StatusOK, apiv1.Budget{Team: team, Posted: b.Posted.Plain(), Held: b.Held.Plain(), Available: b.Available.Plain()})
}

func (s *Server) apiOwnBudget(c *gin.Context) { s.budget(c, userOf(c).TeamID) }

func (s *Server) apiTeamBudget(c *gin.Context) { s.budget(c, c.Param("team")) }

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
	lines := []apiv1.SettlementLine{}
	for _, l := range rep.Lines {
		lines = append(lines, apiv1.SettlementLine{Order: l.OrderID, Team: l.TeamID, BundleNumber: l.BundleIndex + 1, BundleIndex: l.BundleIndex, Bundle: l.Bundle,
			Payment: ledger.Money(l.Payment).Plain(), ClockPayment: apiPrice(l.Exact), AtPrices: apiPrice(l.AtPrices), EntryID: l.EntryID,
			PaymentRule: l.PaymentRule, VCGPayment: apiVCG(l.VCGPayment)})
	}
	body := apiv1.Settlement{Auction: toAPIAuction(rep.Auction), Lines: lines, Totals: apiv1.SettlementTotals{
		BuyersPaid: rep.BuyersPaid.Plain(), SellersReceived: rep.SellersReceived.Plain(),
		TreasuryNet: rep.TreasuryNet.Plain(), Rounding: apiPrice(rep.Rounding)}}
	if r := rep.Run; r.FinalRound {
		body.FinalRound = &apiv1.FinalRoundReport{Welfare: r.Welfare, ClockWelfare: r.ClockWelfare, Bound: r.WelfareBound, Optimal: r.Optimal, Seconds: r.FinalSeconds, Payments: r.PaymentParts().Payments,
			Parts: r.FinalParts, CoreParts: r.CoreParts, LeastRevenueParts: r.LeastRevenueParts}
		prices, unsupported, err := s.svc.Market.SupportingPrices(c.Request.Context(), r)
		if err != nil {
			s.fail(c, err)
			return
		}
		units, err := s.poolUnits(c.Request.Context())
		if err != nil {
			s.fail(c, err)
			return
		}
		for _, p := range prices {
			body.FinalRound.SupportingPrices = append(body.FinalRound.SupportingPrices, apiv1.SupportingPrice{Pool: p.PoolID,
				ClockPrice: apiPrice(p.Price), Price: ledger.Money(*p.SupportingPrice).Plain()})
		}
		for _, u := range unsupported {
			body.FinalRound.Unsupported = append(body.FinalRound.Unsupported, apiv1.UnsupportedOrder{Order: u.OrderID, Team: u.TeamID,
				Won: u.Won, Reason: u.Why, Text: unsupportedText(u, units)})
		}
	}
	c.JSON(http.StatusOK, body)
}

func (s *Server) apiTrialBalance(c *gin.Context) {
	tb, err := s.svc.Market.Ledger().TrialBalance(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	out := []apiv1.Account{}
	var total ledger.Money
	for _, a := range tb {
		out = append(out, apiv1.Account{Account: string(a.Account), Kind: a.Kind, Balance: a.Posted.Plain(), Held: a.Held.Plain()})
		if total, err = total.Add(a.Posted); err != nil {
			s.fail(c, err)
			return
		}
	}
	c.JSON(http.StatusOK, apiv1.TrialBalance{Accounts: out, Total: total.Plain()})
}
