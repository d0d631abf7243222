package web

import (
	"fmt"
	"sort"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/gin-gonic/gin"
)

// oppositeOrder says why a team should not place spec from a form: it already has
// a live order in the auction taking bids that sells a pool spec buys, or buys a
// pool spec sells (the team would trade with itself and pay the spread). "" when
// there is none. The JSON API does not apply this guard.
func (s *Server) oppositeOrder(c *gin.Context, team string, spec exchange.OrderSpec) (string, error) {
	a, ok, err := s.svc.Market.CurrentAuction(c.Request.Context())
	if err != nil || !ok {
		return "", err
	}
	sign := map[string]int64{}
	for _, b := range spec.Bundles {
		for pool, q := range b {
			sign[pool] = q
		}
	}
	vs, err := s.svc.Market.Orders(c.Request.Context(), exchange.OrderFilter{Team: team, AuctionID: a.ID,
		Statuses: []exchange.OrderStatus{exchange.OrderOpen, exchange.OrderAwaitingApproval}, Limit: exchange.MaxPage})
	if err != nil {
		return "", err
	}
	for _, v := range vs {
		var clash []string
		for _, b := range v.Spec.Bundles {
			for pool, q := range b {
				if s, ok := sign[pool]; ok && (s > 0) != (q > 0) {
					clash = append(clash, pool)
				}
			}
		}
		if len(clash) > 0 {
			sort.Strings(clash)
			verb := "sells"
			if sign[clash[0]] < 0 {
				verb = "buys"
			}
			return fmt.Sprintf("Your team's order #%d already %s %s in auction #%d: buying and selling the same pool in one auction only trades with yourself. Withdraw that order first.", v.ID, verb, clash[0], a.ID), nil
		}
	}
	return "", nil
}
