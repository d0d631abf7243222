package web

import (
	"context"
	"fmt"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/templates"
)

// paymentsRule is the payment rule a run with a final round followed: runs from
// before the rule was recorded paid capped prices.
func paymentsRule(run exchange.AuctionRun) string {
	if run.Payments == "" {
		return auction.PaymentsCappedPrices
	}
	return run.Payments
}

// finalRoundView builds what a run's final round added over the clock, for the
// auction page and the settlement report; nil when no final round ran.
func (s *Server) finalRoundView(ctx context.Context, run exchange.AuctionRun, units map[string]string) (*templates.FinalRoundView, error) {
	if !run.FinalRound {
		return nil, nil
	}
	changes, err := s.svc.Market.FinalRoundChanges(ctx, run)
	if err != nil {
		return nil, err
	}
	teams, err := s.svc.Market.Teams(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, t := range teams {
		names[t.ID] = t.Name
	}
	v := &templates.FinalRoundView{Welfare: monOf(run.Welfare), ClockWelfare: monOf(run.ClockWelfare),
		Added: monOf(run.Welfare - run.ClockWelfare), Bound: monOf(run.WelfareBound), Proved: run.Optimal,
		Gap: fmt.Sprintf("%.2f%%", 100*run.Gap()), Seconds: fmt.Sprintf("%.2f s", run.FinalSeconds),
		Rule: exchange.SettlementRule(&auction.FinalRound{Payments: paymentsRule(run)})}
	if run.FinalSeconds < 0.005 {
		v.Seconds = "under 0.01 s"
	}
	text := func(b exchange.Bundle) string {
		if b == nil {
			return "nothing"
		}
		return bundleText(b, units)
	}
	for _, c := range changes {
		if c.Changed {
			v.Changed = append(v.Changed, templates.FinalChangeRow{Order: c.OrderID, Team: teamName(names, c.TeamID), Clock: text(c.Clock), Final: text(c.Bundle)})
		}
		if !c.Uniform {
			v.NonUniform = append(v.NonUniform, templates.NonUniformRow{Order: c.OrderID, Team: teamName(names, c.TeamID), Bundle: text(c.Bundle),
				Payment: monOf(c.Payment), AtPrice: monOf(c.AtPrices)})
		}
	}
	return v, nil
}
