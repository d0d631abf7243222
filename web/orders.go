package web

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/templates"
)

// bundleText is a bundle for people: each pool with its signed quantity and unit,
// "us-east/cpu +100 cores, us-east/ram +400 GiB" (pools sorted).
func bundleText(b exchange.Bundle, units map[string]string) string {
	parts := make([]string, 0, len(b))
	for _, p := range slices.Sorted(maps.Keys(b)) {
		sign, n := "+", b[p]
		if n < 0 {
			sign, n = "-", -n
		}
		parts = append(parts, p+" "+sign+countOf(n, units[p]))
	}
	return strings.Join(parts, ", ")
}

// orderRows turns order views into table rows for viewer u; units maps pools to
// their units.
func orderRows(u identity.User, vs []exchange.OrderView, biddingOpen bool, units map[string]string) []templates.OrderRow {
	rows := make([]templates.OrderRow, 0, len(vs))
	for _, v := range vs {
		r := templates.OrderRow{ID: v.ID, Team: v.TeamID, Kind: v.Spec.Kind(), Status: string(v.Status), Created: fmtTime(v.CreatedAt)}
		if v.AuctionID != nil {
			r.Auction = *v.AuctionID
		}
		if v.Spec.Limit != nil {
			m := mon(*v.Spec.Limit)
			r.Limit = &m
		}
		for k, b := range v.Spec.Bundles {
			br := templates.BundleRow{Items: bundleText(b, units)}
			if v.Spec.Limits != nil {
				m := mon(v.Spec.Limits[k])
				br.Limit = &m
			}
			if v.Provisional != nil && v.Provisional.BundleIndex == k {
				br.Won = true
			}
			r.Bundles = append(r.Bundles, br)
		}
		text, left := outcomeWithout(v.Status)
		switch {
		case left:
			r.Provisional.Text = text
		case v.Provisional == nil && v.Status == exchange.OrderOpen:
			r.Provisional.Text = "no preliminary run yet"
		case v.Provisional == nil:
		case v.Provisional.BundleIndex < 0:
			r.Provisional.Text = "loses at current prices"
			if v.Status == exchange.OrderLost {
				r.Provisional.Text = "lost"
			}
		default:
			r.Provisional = templates.Outcome{Bundle: v.Provisional.BundleIndex + 1, Amount: monOf(v.Provisional.Payment), Final: v.Status == exchange.OrderWon}
			if v.Provisional.PaymentRule != exchange.PaidClockPrices {
				r.Provisional.Rule = exchange.PaymentRuleWords(v.Provisional.PaymentRule)
			}
			if vcg := v.Provisional.VCGPayment; vcg != nil && v.Provisional.Payment >= 0 {
				m := monOf(*vcg)
				r.Provisional.VCG = &m
			}
		}
		r.CanWithdraw = biddingOpen && v.Status.Live() && u.Role.OnTeam() && u.TeamID == v.TeamID
		r.CanDecide = biddingOpen && v.Status == exchange.OrderAwaitingApproval && u.Role == identity.RoleOwner && u.TeamID == v.TeamID
		rows = append(rows, r)
	}
	return rows
}

// biddingAuction reports whether an auction takes bids now, with a notice if not.
func (s *Server) biddingState(c *gin.Context) (bool, string, error) {
	a, ok, err := s.svc.Market.CurrentAuction(c.Request.Context())
	if err != nil {
		return false, "", err
	}
	if !ok {
		return false, "No auction is scheduled; operators schedule them under Operate.", nil
	}
	if a.Halted() {
		return false, fmt.Sprintf("Auction #%d could not close (%s). Its orders may be withdrawn until an operator retries the close or cancels it.", a.ID, a.Failure), nil
	}
	if a.Status != exchange.AuctionOpen || !s.now().Before(a.ClosesAt) {
		return false, fmt.Sprintf("Auction #%d opens %s; bids are taken then.", a.ID, fmtTime(a.OpensAt)), nil
	}
	return true, "", nil
}

// ordersPage lists the team's orders.
func (s *Server) ordersPage(c *gin.Context) {
	u := userOf(c)
	open, notice, err := s.biddingState(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	vs, pg, err := s.orderPage(c, exchange.OrderFilter{Team: u.TeamID, Limit: 50}, "orders")
	if err != nil {
		s.fail(c, err)
		return
	}
	units, err := s.poolUnits(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	drafts, err := s.svc.Market.Drafts(c.Request.Context(), u.TeamID)
	if err != nil {
		s.fail(c, err)
		return
	}
	rows := orderRows(u, vs, open, units)
	if a, ok, err := s.svc.Market.CurrentAuction(c.Request.Context()); err == nil && ok && a.Halted() {
		for i, v := range vs { // a halted auction's orders may leave it
			rows[i].CanWithdraw = v.AuctionID != nil && *v.AuctionID == a.ID && v.Status.Live() && u.Role.OnTeam() && u.TeamID == v.TeamID
		}
	}
	if err := s.explainOutcomes(c.Request.Context(), vs, rows); err != nil {
		s.fail(c, err)
		return
	}
	v := templates.OrdersView{Team: u.TeamID, Orders: rows, Drafts: draftRows(drafts, open, units), CanOrder: open, Notice: notice, Pager: pg}
	s.render(c, http.StatusOK, templates.OrdersPage(s.page(c, "Orders of team "+u.TeamID, "orders"), v))
}

// idParam is the route's positive :id (an order's or a draft's).
func idParam(c *gin.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	return id, err == nil && id > 0
}

func (s *Server) withdrawOrder(c *gin.Context) {
	id, ok := idParam(c)
	if !ok {
		s.fail(c, clearhouse.Errorf(clearhouse.ENOTFOUND, "No such order."))
		return
	}
	o, err := s.svc.Market.Order(c.Request.Context(), userOf(c), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	if !s.confirmed(c, "orders", templates.Confirm{
		Question: fmt.Sprintf("Withdraw order #%d?", id),
		Lines: []string{fmt.Sprintf("Order #%d (%s) leaves the auction: it cannot win, and what it holds of the team's budget and quota is released.", id, strings.ReplaceAll(string(o.Status), "_", " ")),
			"It cannot be put back; while bidding is open you can place a new order instead."},
		Button: fmt.Sprintf("Withdraw order #%d", id), Back: "/orders", Keep: "Keep the order",
	}) {
		return
	}
	if err := s.svc.Market.WithdrawOrder(c.Request.Context(), userOf(c), id); err != nil {
		if clearhouse.ErrorCode(err) == clearhouse.ECONFLICT {
			s.redirectWithFlash(c, "/orders", "error", clearhouse.ErrorMessage(err))
			return
		}
		s.fail(c, err)
		return
	}
	s.redirectWithFlash(c, "/orders", "ok", fmt.Sprintf("Order #%d withdrawn; its holds are released.", id))
}

// orderPage lists the page of orders the request's ?before= names, and the pager
// that leads on; what names the listed things ("orders").
func (s *Server) orderPage(c *gin.Context, f exchange.OrderFilter, what string) ([]exchange.OrderView, templates.Pager, error) {
	before, err := parseBefore(c)
	if err != nil {
		return nil, templates.Pager{}, err
	}
	f.Before = before
	vs, next, err := s.svc.Market.OrderPage(c.Request.Context(), f)
	if err != nil {
		return nil, templates.Pager{}, err
	}
	pg := templates.Pager{Shown: fmt.Sprintf("%d %s", len(vs), what)}
	if next != 0 {
		q := c.Request.URL.Query()
		q.Set("before", strconv.FormatInt(next, 10))
		pg.Next = c.Request.URL.Path + "?" + q.Encode()
	}
	if f.Before != 0 {
		pg.First = c.Request.URL.Path
	}
	return vs, pg, nil
}
