package web

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
)

// unitPrice is an auction price per unit in micro-dollars, the precision the
// settlement report shows it at: quantities times these prices, summed and rounded
// to the cent, give the amounts charged.
func unitPrice(dollars float64) ledger.Money {
	m, _ := moneyfmt.FromDollars(dollars)
	return ledger.Money(m)
}

// bindingPrices returns a settled auction's binding price per unit by pool, or
// none before it ran.
func (s *Server) bindingPrices(ctx context.Context, id int64) ([]exchange.RunPrice, error) {
	_, prices, _, err := s.svc.Market.LatestRun(ctx, id)
	return prices, err
}

// derivation is how an order's payment follows from the unit prices, the way
// finance recomputes it: each pool's quantity times its price to the micro-dollar
// (pools sorted; a sale's quantity is negative). The page ends it with the amount
// charged, every digit shown, so the sum reproduces the charge.
func derivation(b exchange.Bundle, prices map[string]float64, units map[string]string) []templates.DerivationTerm {
	out := make([]templates.DerivationTerm, 0, len(b))
	for _, p := range slices.Sorted(maps.Keys(b)) {
		out = append(out, templates.DerivationTerm{Pool: p, Quantity: moneyfmt.Count(b[p]), Unit: units[p], Price: mon(unitPrice(prices[p]))})
	}
	return out
}

// csvUnitPrices is a bundle's unit prices for a CSV cell: "us-east/cpu=1.000000;
// us-east/ram=0.100000", six decimals, pools sorted.
func csvUnitPrices(b exchange.Bundle, prices map[string]float64) string {
	parts := make([]string, 0, len(b))
	for _, p := range slices.Sorted(maps.Keys(b)) {
		parts = append(parts, p+"="+unitPrice(prices[p]).CSV())
	}
	return strings.Join(parts, ";")
}

// priceRows are the settlement report's table of unit prices.
func priceRows(prices []exchange.RunPrice, units map[string]string) []templates.SettlementPriceRow {
	out := make([]templates.SettlementPriceRow, 0, len(prices))
	for _, p := range prices {
		out = append(out, templates.SettlementPriceRow{Pool: p.PoolID, Unit: units[p.PoolID], Price: mon(unitPrice(p.Price)), Traded: p.TradedUnits})
	}
	return out
}
