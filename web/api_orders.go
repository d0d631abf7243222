package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
)

func toAPIOrder(v exchange.OrderView) apiv1.Order {
	created := v.CreatedAt
	o := apiv1.Order{ID: v.ID, Team: v.TeamID, Auction: v.AuctionID, Status: string(v.Status), CreatedAt: &created}
	for _, b := range v.Spec.Bundles {
		o.Bundles = append(o.Bundles, map[string]int64(b))
	}
	if v.Spec.Limit != nil {
		l := apiMoney(*v.Spec.Limit)
		o.Limit = &l
	}
	for _, l := range v.Spec.Limits {
		o.Limits = append(o.Limits, apiMoney(l))
	}
	if v.Provisional != nil {
		o.Provisional = &apiv1.Outcome{BundleNumber: v.Provisional.BundleIndex + 1, BundleIndex: v.Provisional.BundleIndex, Payment: apiPrice(v.Provisional.Payment), PaymentRule: v.Provisional.PaymentRule, VCGPayment: apiVCG(v.Provisional.VCGPayment)}
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
	out := []apiv1.Order{}
	for _, v := range vs {
		out = append(out, toAPIOrder(v))
	}
	body := apiv1.OrderList{Orders: out}
	if next != 0 {
		q := c.Request.URL.Query()
		q.Set("before", strconv.FormatInt(next, 10))
		body.Next = c.Request.URL.Path + "?" + q.Encode()
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
	var body apiv1.NewOrder
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
		l, err := parseMoney(*body.Limit, "limit")
		if err != nil {
			s.fail(c, err)
			return
		}
		spec.Limit = &l
	}
	if body.Limits != nil {
		spec.Limits = []ledger.Money{}
		for i, raw := range body.Limits {
			l, err := parseMoney(raw, fmt.Sprintf("limits[%d]", i))
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
	out := apiv1.PlacedOrder{Order: toAPIOrder(v)}
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
