package web

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/templates"
)

func (s *Server) approvalsPage(c *gin.Context) {
	u := userOf(c)
	open, _, err := s.biddingState(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	vs, pg, err := s.orderPage(c, exchange.OrderFilter{Team: u.TeamID, Statuses: []exchange.OrderStatus{exchange.OrderAwaitingApproval}, Limit: 50}, "orders awaiting approval")
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	t, err := s.svc.Market.Team(ctx, u.TeamID)
	if err != nil {
		s.fail(c, err)
		return
	}
	b, err := s.svc.Market.Ledger().Balance(ctx, ledger.TeamAccount(u.TeamID))
	if err != nil {
		s.fail(c, err)
		return
	}
	units, err := s.poolUnits(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	rows := orderRows(u, vs, open, units)
	for i, v := range vs {
		rows[i].Requester = s.userEmail(c, v.CreatedBy)
		m := mon(v.Spec.MaxPayment())
		rows[i].MaxCost = &m
	}
	v := templates.ApprovalsView{Threshold: mon(ledger.Money(t.ApprovalThreshold)), Available: mon(b.Available), Orders: rows, Pager: pg}
	s.render(c, http.StatusOK, templates.ApprovalsPage(s.page(c, "Approvals", "approvals"), v))
}

func (s *Server) decideOrder(c *gin.Context) {
	id, ok := idParam(c)
	if !ok {
		s.fail(c, clearhouse.Errorf(clearhouse.ENOTFOUND, "No such order."))
		return
	}
	approve := c.PostForm("decision") == "approve"
	if !approve && c.PostForm("decision") != "reject" {
		s.fail(c, clearhouse.Errorf(clearhouse.EINVALID, "decision: approve or reject"))
		return
	}
	if err := s.svc.Market.DecideOrder(c.Request.Context(), userOf(c), id, approve); err != nil {
		if code := clearhouse.ErrorCode(err); code == clearhouse.ECONFLICT || code == clearhouse.EUNPROCESSABLE {
			s.redirectWithFlash(c, "/approvals", "error", clearhouse.ErrorMessage(s.withAvailable(c.Request.Context(), userOf(c).TeamID, err)))
			return
		}
		s.fail(c, err)
		return
	}
	word := "approved"
	if !approve {
		word = "rejected; its holds are released"
	}
	s.redirectWithFlash(c, "/approvals", "ok", fmt.Sprintf("Order #%d %s.", id, word))
}
