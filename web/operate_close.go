package web

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
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

// statsCharts draws the paper's figures by auction: the share of orders settled and
// the winners' bid premium (median and mean), and each pool's settlement price over
// its reference fixed price (pools without one are left out).
func statsCharts(stats []exchange.AuctionStats, refs map[string]int64) []templates.LineChart {
	pctY := func(y float64) string { return strconv.FormatFloat(y, 'f', -1, 64) + "%" }
	byAuction := func(x float64) string { return "#" + strconv.FormatFloat(x, 'f', 0, 64) }
	share := templates.LineChart{ID: "stats-settled", Title: "Orders settled and bid premium, by auction", XLabel: "auction", YLabel: "%",
		FormatX: byAuction, FormatY: pctY, YFromZero: true, Series: []templates.Series{{Name: "orders settled"}, {Name: "bid premium (median)"}, {Name: "bid premium (mean)"}}}
	ratio := templates.LineChart{ID: "stats-reference", Title: "Settlement price over the reference fixed price, by auction", XLabel: "auction", YLabel: "× reference",
		FormatX: byAuction, FormatY: func(y float64) string { return strconv.FormatFloat(y, 'g', 3, 64) + "×" }}
	pools := map[string]*templates.Series{}
	var names []string
	for i := len(stats) - 1; i >= 0; i-- { // oldest first
		st := stats[i]
		x := float64(st.Auction.ID)
		share.Series[0].Points = append(share.Series[0].Points, templates.Point{X: x, Y: 100 * st.ShareSettled})
		share.Series[1].Points = append(share.Series[1].Points, templates.Point{X: x, Y: 100 * st.PremiumMedian}) // NaN (no winner) is skipped
		share.Series[2].Points = append(share.Series[2].Points, templates.Point{X: x, Y: 100 * st.PremiumMean})
		for pool, p := range st.Prices {
			ref := refs[pool]
			if ref <= 0 {
				continue
			}
			sr := pools[pool]
			if sr == nil {
				sr = &templates.Series{Name: pool}
				pools[pool] = sr
				names = append(names, pool)
			}
			sr.Points = append(sr.Points, templates.Point{X: x, Y: p / ledger.Money(ref).Dollars()})
		}
	}
	sort.Strings(names)
	for _, n := range names {
		ratio.Series = append(ratio.Series, *pools[n])
	}
	out := []templates.LineChart{share}
	if len(names) > 0 {
		out = append(out, ratio)
	}
	return out
}

// setReferencePrice sets a pool's reference fixed price (empty or 0 clears it).
func (s *Server) setReferencePrice(c *gin.Context) {
	id := c.Param("cluster") + "/" + c.Param("resource")
	back := "/operate/pools/" + id
	raw := strings.TrimSpace(c.PostForm("reference_price"))
	var price ledger.Money
	if raw != "" {
		var err error
		if price, err = ledger.ParseMoney(raw); err != nil || price < 0 {
			s.redirectWithFlash(c, back, "error", "Reference fixed price: give an amount of dollars such as 1.25, or 0 for none.")
			return
		}
	}
	if err := s.svc.Market.SetReferencePrice(c.Request.Context(), id, int64(price)); err != nil {
		s.removeRefused(c, err, back)
		return
	}
	msg := "Reference fixed price of " + id + " set to " + moneyfmt.Cents(int64(price)) + " per unit."
	if price == 0 {
		msg = "Reference fixed price of " + id + " cleared."
	}
	s.redirectWithFlash(c, back, "ok", msg)
}
