package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// closeCountPages bounds how many pages of orders the confirmation counts.
const closeCountPages = 20

// closeConfirmPage says what closing an auction now will do: the orders taking
// part, what the latest preliminary prices would move, and when bidding resumes.
// Nothing changes until the operator confirms with a POST.
func (s *Server) closeConfirmPage(c *gin.Context) {
	id, err := auctionID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	a, err := s.svc.Market.Auction(ctx, id)
	if err != nil {
		s.fail(c, err)
		return
	}
	if a.Status != exchange.AuctionOpen && a.Status != exchange.AuctionClosing {
		s.redirectWithFlash(c, "/operate", "error", "Auction #"+strconv.FormatInt(id, 10)+" is "+string(a.Status)+"; only an open auction can be closed.")
		return
	}
	v := templates.CloseConfirm{ID: id, Window: fmtTime(a.OpensAt) + " – " + fmtTime(a.ClosesAt)}
	f := exchange.OrderFilter{AuctionID: id, Statuses: []exchange.OrderStatus{exchange.OrderOpen, exchange.OrderAwaitingApproval}, Limit: exchange.MaxPage}
	var pay, get float64
	for page := 0; ; page++ {
		if page == closeCountPages {
			v.More = true
			break
		}
		vs, next, err := s.svc.Market.OrderPage(ctx, f)
		if err != nil {
			s.fail(c, err)
			return
		}
		for _, o := range vs {
			if o.Status == exchange.OrderAwaitingApproval {
				v.Awaiting++
				continue
			}
			v.Open++
			if o.Provisional != nil {
				v.HasRun = true
				if o.Provisional.BundleIndex >= 0 {
					v.Winners++
					if o.Provisional.Payment > 0 {
						pay += o.Provisional.Payment
					} else {
						get -= o.Provisional.Payment
					}
				}
			}
		}
		if next == 0 {
			break
		}
		f.Before = next
	}
	v.BuyersPay, v.SellersGet = monOf(pay), monOf(get)
	as, err := s.svc.Market.Auctions(ctx, 20)
	if err != nil {
		s.fail(c, err)
		return
	}
	var next time.Time
	for _, n := range as {
		if n.Status == exchange.AuctionScheduled && n.OpensAt.After(a.OpensAt) && (next.IsZero() || n.OpensAt.Before(next)) {
			next = n.OpensAt
		}
	}
	if !next.IsZero() {
		v.NextOpens = fmtTime(next)
	}
	s.render(c, http.StatusOK, templates.CloseConfirmPage(s.page(c, "Close auction", "operate"), v))
}

// removePool removes a pool nothing depends on, or says why it stays.
func (s *Server) removePool(c *gin.Context) {
	id := c.Param("cluster") + "/" + c.Param("resource")
	if err := s.svc.Market.RemovePool(c.Request.Context(), id); err != nil {
		s.removeRefused(c, err, "/operate/pools/"+id)
		return
	}
	s.redirectWithFlash(c, "/operate", "ok", "Pool "+id+" removed.")
}

// removeCluster removes a cluster with no pools, or says why it stays.
func (s *Server) removeCluster(c *gin.Context) {
	id := c.Param("id")
	if err := s.svc.Market.RemoveCluster(c.Request.Context(), id); err != nil {
		s.removeRefused(c, err, "/operate")
		return
	}
	s.redirectWithFlash(c, "/operate", "ok", "Cluster "+id+" removed.")
}

func (s *Server) removeRefused(c *gin.Context, err error, back string) {
	switch clearhouse.ErrorCode(err) {
	case clearhouse.ECONFLICT, clearhouse.ENOTFOUND:
		s.redirectWithFlash(c, back, "error", clearhouse.ErrorMessage(err))
	default:
		s.fail(c, err)
	}
}
