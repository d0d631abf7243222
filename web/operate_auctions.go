package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

func (s *Server) scheduleAuction(c *gin.Context) {
	f := templates.AuctionForm{Opens: c.PostForm("opens"), Closes: c.PostForm("closes"), Final: c.PostForm("final"), Errors: templates.FieldErrors{}}
	parse := func(name, v string) time.Time {
		t, err := parseFormTime(v)
		if err != nil {
			f.Errors[name] = "Give a date and time, e.g. 2026-03-02T09:00 (UTC)."
		}
		return t
	}
	opens, closes := parse("opens", f.Opens), parse("closes", f.Closes)
	params := auction.DefaultParams
	if final, err := strconv.ParseFloat(strings.TrimSpace(f.Final), 64); err != nil || auction.CheckFinalSeconds(final) != nil {
		f.Errors["final"] = fmt.Sprintf("Give the final round's time limit in seconds, from 0 (no final round) to %g.", auction.MaxFinalSeconds)
	} else {
		params.FinalRound = auction.FinalRoundParams(final)
	}
	if len(f.Errors) == 0 {
		a, err := s.svc.Market.ScheduleAuction(c.Request.Context(), opens, closes, params)
		if err == nil {
			s.redirectWithFlash(c, "/operate", "ok", fmt.Sprintf("Auction #%d scheduled.", a.ID))
			return
		}
		if clearhouse.ErrorCode(err) == clearhouse.EINTERNAL {
			s.fail(c, err)
			return
		}
		f.Errors = formErrors(err, "opens")
	}
	s.renderOperate(c, http.StatusUnprocessableEntity, templates.OperateView{NewAuction: f})
}

func (s *Server) previewAuction(c *gin.Context) {
	id, err := auctionID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	run, err := s.svc.Market.Preview(c.Request.Context(), id)
	if err != nil {
		if clearhouse.ErrorCode(err) == clearhouse.ECONFLICT {
			s.redirectWithFlash(c, "/operate", "error", clearhouse.ErrorMessage(err))
			return
		}
		s.fail(c, err)
		return
	}
	outcome := "prices settled"
	if !run.Converged {
		outcome = "prices had not settled when the round limit was reached"
	}
	s.redirectWithFlash(c, fmt.Sprintf("/auctions/%d", id), "ok", fmt.Sprintf("Preliminary run: %s, %s, %s.", countOf(int64(run.Orders), "order"), countOf(int64(run.Rounds), "round"), outcome))
}

func (s *Server) closeAuction(c *gin.Context) {
	id, err := auctionID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if c.PostForm("confirm") != "yes" { // closing cannot be undone: say what it does first
		c.Redirect(http.StatusSeeOther, fmt.Sprintf("/operate/auctions/%d/close", id))
		return
	}
	run, err := s.svc.Market.Close(c.Request.Context(), id)
	if err != nil {
		if clearhouse.ErrorCode(err) == clearhouse.ECONFLICT {
			s.redirectWithFlash(c, "/operate", "error", clearhouse.ErrorMessage(err))
			return
		}
		s.fail(c, err)
		return
	}
	msg := fmt.Sprintf("Auction #%d closed and settled (%s, %s).", id, countOf(int64(run.Orders), "order"), countOf(int64(run.Rounds), "round"))
	if !run.Converged {
		msg = fmt.Sprintf("Auction #%d did not converge in %s; nothing was settled and every hold was released.", id, countOf(int64(run.Rounds), "round"))
	}
	s.redirectWithFlash(c, fmt.Sprintf("/auctions/%d", id), "ok", msg)
}

// saveLimits changes what one team may enter in one auction.
func (s *Server) saveLimits(c *gin.Context) {
	f := templates.LimitsForm{OpenOrders: c.PostForm("open_orders"), Bundles: c.PostForm("bundles"), Pools: c.PostForm("pools"), Errors: templates.FieldErrors{}}
	whole := func(name, raw string, hi int64) int {
		n, err := parseWhole(raw, 1, hi)
		if err != nil {
			f.Errors[name] = err.Error() + "."
		}
		return int(n)
	}
	l := exchange.Limits{OpenOrdersPerTeam: whole("open_orders", f.OpenOrders, exchange.MaxOpenOrdersPerTeam),
		BundlesPerOrder: whole("bundles", f.Bundles, exchange.MaxBundles), PoolsPerBundle: whole("pools", f.Pools, exchange.MaxPoolsPerBundle)}
	if len(f.Errors) == 0 {
		err := s.svc.Market.SetLimits(c.Request.Context(), l)
		if err == nil {
			s.redirectWithFlash(c, "/operate", "ok", "Limits saved; they apply to new orders.")
			return
		}
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			s.fail(c, err)
			return
		}
		f.Errors = formErrors(err, "open_orders")
	}
	s.renderOperate(c, http.StatusUnprocessableEntity, templates.OperateView{Limits: f})
}

// cancelAuction removes a scheduled auction that has not opened, or cancels a
// halted one once confirmed.
func (s *Server) cancelAuction(c *gin.Context) {
	id, err := auctionID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if a, err := s.svc.Market.Auction(c.Request.Context(), id); err == nil && a.Halted() && !s.confirmed(c, "operate", templates.Confirm{
		Question: fmt.Sprintf("Cancel auction #%d?", id),
		Lines: []string{"Its close failed: " + a.Failure + ".",
			"Every order still in it gets nothing and its holds are released; the auction is marked failed and the next one can open.",
			"To settle it instead, have the teams withdraw the orders that make it fail and retry the close."},
		Button: fmt.Sprintf("Cancel auction #%d", id), Back: "/operate", Keep: "Keep the auction",
	}) {
		return
	}
	if err := s.svc.Market.CancelAuction(c.Request.Context(), id); err != nil {
		if code := clearhouse.ErrorCode(err); code == clearhouse.ECONFLICT || code == clearhouse.ENOTFOUND {
			s.redirectWithFlash(c, "/operate", "error", clearhouse.ErrorMessage(err))
			return
		}
		s.fail(c, err)
		return
	}
	s.redirectWithFlash(c, "/operate", "ok", fmt.Sprintf("Auction #%d cancelled; the holds of any orders it had were released.", id))
}
