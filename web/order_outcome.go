package web

import (
	"context"
	"fmt"
	"math"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
)

// outcomeWithout is what an order that takes no part in the clearing says instead
// of an outcome: a withdrawn or rejected order did not lose, it left.
func outcomeWithout(st exchange.OrderStatus) (string, bool) {
	switch st {
	case exchange.OrderWithdrawn:
		return "withdrawn before the close: took no part", true
	case exchange.OrderRejected:
		return "rejected by an owner: took no part", true
	}
	return "", false
}

// lossReason says why an order gets nothing at prices (dollars per unit, by pool):
// every bundle costs more than its limit (naming the cheapest), or a bundle was
// within its limit and the pools' units went to other orders at those prices.
// final is false for a preliminary run ("would").
func lossReason(spec exchange.OrderSpec, prices map[string]float64, final bool) string {
	best, bestK := math.Inf(1), -1
	for k, b := range spec.Bundles {
		cost := 0.0
		for pool, q := range b {
			cost += float64(q) * prices[pool]
		}
		if over := cost - spec.LimitOf(k).Dollars(); over < best { // the bundle nearest its limit
			best, bestK = over, k
		}
	}
	if bestK < 0 {
		return ""
	}
	cost := 0.0
	for pool, q := range spec.Bundles[bestK] {
		cost += float64(q) * prices[pool]
	}
	limit := spec.LimitOf(bestK)
	is := "is"
	if final {
		is = "was"
	}
	c, _ := moneyfmt.FromDollars(math.Abs(cost))
	if best > 1e-6 { // over its limit
		if limit < 0 {
			return fmt.Sprintf("at the %s prices bundle %d fetches %s, below the %s it asks", priceWord(final), bestK+1, moneyfmt.Cents(c), moneyfmt.Cents(int64(-limit)))
		}
		return fmt.Sprintf("at the %s prices its nearest bundle (%d) costs %s, above its limit of %s", priceWord(final), bestK+1, moneyfmt.Cents(c), moneyfmt.Cents(int64(limit)))
	}
	return fmt.Sprintf("bundle %d %s within its limit at the %s prices, but the pools' units went to other orders at those prices", bestK+1, is, priceWord(final))
}

func priceWord(final bool) string {
	if final {
		return "final"
	}
	return "current"
}

// explainOutcomes adds to each losing or lost order's outcome why it gets nothing,
// from its auction's latest run's prices.
func (s *Server) explainOutcomes(ctx context.Context, vs []exchange.OrderView, rows []templates.OrderRow) error {
	prices := map[int64]map[string]float64{}
	for i, v := range vs {
		if v.Status != exchange.OrderOpen && v.Status != exchange.OrderLost || v.Provisional == nil || v.Provisional.BundleIndex >= 0 || v.AuctionID == nil {
			continue
		}
		ps, ok := prices[*v.AuctionID]
		if !ok {
			_, rps, ran, err := s.svc.Market.LatestRun(ctx, *v.AuctionID)
			if err != nil {
				return err
			}
			ps = map[string]float64{}
			if ran {
				for _, p := range rps {
					ps[p.PoolID] = p.Price
				}
			}
			prices[*v.AuctionID] = ps
		}
		if len(ps) == 0 {
			continue
		}
		if why := lossReason(v.Spec, ps, v.Status == exchange.OrderLost); why != "" {
			rows[i].Provisional.Text += ": " + why
		}
	}
	return nil
}
