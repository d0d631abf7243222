package web

import (
	"context"

	"github.com/clearhouse/clearhouse/exchange"
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

// explainOutcomes adds to each losing or lost order's outcome why it gets nothing,
// from its auction's latest run: its prices, what it had for sale, and who took
// each pool's units (exchange.LossReason).
func (s *Server) explainOutcomes(ctx context.Context, vs []exchange.OrderView, rows []templates.OrderRow) error {
	facts := map[int64]*exchange.LossFacts{}
	for i, v := range vs {
		if v.Status != exchange.OrderOpen && v.Status != exchange.OrderLost || v.Provisional == nil || v.Provisional.BundleIndex >= 0 || v.AuctionID == nil {
			continue
		}
		f, ok := facts[*v.AuctionID]
		if !ok {
			lf, ran, err := s.svc.Market.LossFactsOf(ctx, *v.AuctionID)
			if err != nil {
				return err
			}
			if ran {
				f = &lf
			}
			facts[*v.AuctionID] = f
		}
		if f == nil {
			continue
		}
		ff := *f
		ff.Final = v.Status == exchange.OrderLost
		if why := exchange.LossReason(v.Spec, ff); why != "" {
			rows[i].Provisional.Text += ": " + why
		}
	}
	return nil
}
