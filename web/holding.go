package web

import (
	"context"
	"net/http"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// holdingChargeForm fills the pool edit page's holding charge: the rate and when it
// applies from, in words.
func (s *Server) holdingChargeForm(ctx context.Context, p exchange.Pool, f *templates.PoolForm) error {
	rates, err := s.svc.Market.HoldingRates(ctx)
	if err != nil {
		return err
	}
	r := rates[p.ID]
	f.Holding = r.Rate.Plain()
	f.HoldingNote = holdingNote(r, p.Unit)
	return nil
}

// holdingNote says what a pool's holding charge does now.
func holdingNote(r exchange.HoldingRate, unit string) string {
	if r.Rate == 0 {
		return "Off: holding quota in this pool costs nothing after it is bought."
	}
	each := "Each team is charged " + moneyfmt.Exact(int64(r.Rate)) + " per " + moneyfmt.Unit(unit, true) + " it holds"
	if r.AppliesFrom.Day() != 1 {
		// Set this month on a pool that had no charge: the rest of the month first.
		next := r.AppliesFrom.AddDate(0, 1, 1-r.AppliesFrom.Day())
		days := next.Sub(r.AppliesFrom).Hours() / 24
		return each + " from " + r.AppliesFrom.Format("2 January 2006") + ": for " + r.AppliesFrom.Format("January") +
			" pro rata, " + moneyfmt.Count(int64(days)) + " of " + moneyfmt.Count(int64(next.AddDate(0, 0, -1).Day())) +
			" days, charged in the hour after it was set; then each month from " + next.Format("January 2006") + ", in its first hour."
	}
	return each + ", each month from " + r.AppliesFrom.Format("January 2006") + ", in the first hour of the month."
}

// setHoldingCharge sets a pool's holding charge per unit and month (0: off). A bad
// amount re-renders the page with the field marked and changes nothing.
func (s *Server) setHoldingCharge(c *gin.Context) {
	id := c.Param("cluster") + "/" + c.Param("resource")
	p, err := s.svc.Market.Pool(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	raw := strings.TrimSpace(c.PostForm("holding_charge"))
	var rate ledger.Money
	var msg string
	if raw != "" {
		if rate, err = ledger.ParseMoney(raw); err != nil {
			msg = "Give an amount of dollars per " + p.Unit + " and month, such as 0.10, or 0 to charge nothing."
		}
	}
	if msg == "" {
		if _, err = s.svc.Market.SetHoldingCharge(c.Request.Context(), id, rate); err != nil {
			if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
				s.fail(c, err)
				return
			}
			msg = strings.TrimPrefix(clearhouse.ErrorMessage(err), "holding charge: ")
			msg = strings.ToUpper(msg[:1]) + msg[1:] + "."
		}
	}
	if msg != "" {
		f, err := s.poolEditForm(c, p)
		if err != nil {
			s.fail(c, err)
			return
		}
		f.Holding, f.HoldingError = raw, msg
		s.render(c, http.StatusUnprocessableEntity, templates.PoolEditPage(s.page(c, "Pool "+id, "operate"), f))
		return
	}
	rates, err := s.svc.Market.HoldingRates(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	s.redirectWithFlash(c, "/operate/pools/"+id, "ok", "Holding charge of "+id+" saved. "+holdingNote(rates[id], p.Unit))
}
