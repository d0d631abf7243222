package web

import (
	"context"
	"fmt"
	"strings"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
)

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
		Rule: exchange.SettlementRule(run.PaymentParts())}
	v.Parts = paymentPartsText(run)
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
				Payment: monOf(c.Payment), AtPrice: monOf(c.AtPrices), Rule: exchange.PaymentRuleWords(c.PaymentRule)})
		}
	}
	prices, unsupported, err := s.svc.Market.SupportingPrices(ctx, run)
	if err != nil {
		return nil, err
	}
	for _, p := range prices {
		v.Supporting = append(v.Supporting, templates.SupportingPriceRow{Pool: p.PoolID,
			Clock:      templates.Price{Dollars: p.Price, Unit: units[p.PoolID]},
			Supporting: templates.Price{Dollars: float64(*p.SupportingPrice) / float64(ledger.Dollar), Unit: units[p.PoolID]}})
	}
	for _, u := range unsupported {
		v.Unsupported = append(v.Unsupported, templates.UnsupportedRow{Order: u.OrderID, Team: teamName(names, u.TeamID), Words: unsupportedWords(u, units)})
	}
	return v, nil
}

// paymentPartsText says which payment rule paid how many of the final round's
// independent parts, for finance; "" when the run did not record it.
func paymentPartsText(run exchange.AuctionRun) string {
	f := run.PaymentParts()
	if f == nil || run.FinalParts == nil || f.Parts == 0 {
		return ""
	}
	var said []string
	for _, p := range []struct {
		n    int
		what string
	}{
		{f.CoreParts - f.LeastRevenueParts, "paid core payments at the point nearest the VCG payments"},
		{f.LeastRevenueParts, "paid the least-revenue core point, not proved nearest the VCG payments (the step that finds that point failed on the numbers)"},
		{f.Parts - f.CoreParts, "paid capped prices (the bundle at the clock's prices, capped at the limit)"},
	} {
		switch {
		case p.n <= 0:
		case f.Parts == 1:
			said = append(said, "it "+p.what)
		default:
			said = append(said, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	if f.Parts == 1 {
		return fmt.Sprintf("Payments by part: the final round settled the market as one part: %s.", strings.Join(said, "; "))
	}
	return fmt.Sprintf("Payments by part: the final round split the market into %s, which share no pool and no order: %s.",
		countOf(int64(f.Parts), "independent part"), strings.Join(said, "; "))
}

// unsupportedWords says in words how the supporting prices fail an order.
func unsupportedWords(u exchange.Unsupported, units map[string]string) []templates.Word {
	var ws []templates.Word
	say := func(text string) { ws = append(ws, templates.Word{Text: text}) }
	amount := func(m ledger.Money) { ws = append(ws, templates.Word{Money: true, Amount: templates.Money(m)}) }
	cost := func(b exchange.Bundle, c ledger.Money) {
		if c < 0 {
			say(bundleText(b, units) + " would pay it ")
			amount(-c)
			return
		}
		say(bundleText(b, units) + " would cost ")
		amount(c)
	}
	limit := func(l ledger.Money) {
		if l < 0 {
			say("the ")
			amount(-l)
			say(" it asks at least")
			return
		}
		say("its limit of ")
		amount(l)
	}
	switch u.Why {
	case "too_dear":
		say("won, but at the supporting prices ")
		cost(u.Bundle, u.Cost)
		say(", worse than ")
		limit(u.Limit)
		say(": it would not want the bundle it won.")
	case "prefers_other":
		say("won, but at the supporting prices it would rather have another of its bundles: ")
		cost(u.Other, u.OtherCost)
		say(" against ")
		limit(u.OtherLimit)
		say(", while ")
		cost(u.Bundle, u.Cost)
		say(" against ")
		limit(u.Limit)
		say(".")
	case "wants":
		say("lost, but at the supporting prices ")
		cost(u.Other, u.OtherCost)
		say(", better than ")
		limit(u.OtherLimit)
		say(": it would want that bundle.")
	default:
		if u.Won {
			say("won")
		} else {
			say("lost")
		}
		say("; at the supporting prices, rounded to the micro-dollar, it is supported only to within a micro-dollar.")
	}
	return ws
}

// unsupportedText is unsupportedWords as one string, amounts exact.
func unsupportedText(u exchange.Unsupported, units map[string]string) string {
	var b strings.Builder
	for _, w := range unsupportedWords(u, units) {
		if w.Money {
			b.WriteString(moneyfmt.Exact(int64(w.Amount)))
		} else {
			b.WriteString(w.Text)
		}
	}
	return b.String()
}
