package web

import (
	"github.com/clearhouse/clearhouse/moneyfmt"

	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/templates"
)

// capacitySourceNote says where an effective capacity comes from, for pages: the
// override's author and expiry, or when the agent measured it.
func capacitySourceNote(c exchange.PoolCapacity) string {
	switch c.Source {
	case exchange.CapacityFromOverride:
		return fmt.Sprintf("by %s until %s: %s", c.OverrideBy, fmtTime(*c.OverrideExpires), c.OverrideReason)
	case exchange.CapacityFromMeasured:
		return "at " + fmtTime(*c.MeasuredAt)
	}
	return ""
}

// oversoldRows are the pools whose holdings exceed their effective capacity, for
// /operate.
func oversoldRows(cs []exchange.PoolCapacity) []templates.OversoldRow {
	var rows []templates.OversoldRow
	for _, c := range cs {
		if c.Oversold() > 0 {
			rows = append(rows, templates.OversoldRow{Pool: c.Pool, Unit: c.Unit, Held: c.Held, Effective: c.Effective,
				Oversold: c.Oversold(), Source: c.Source, SourceNote: capacitySourceNote(c)})
		}
	}
	return rows
}

// capacityByPool is every pool's capacity now, by pool id.
func capacityByPool(cs []exchange.PoolCapacity) map[string]exchange.PoolCapacity {
	out := make(map[string]exchange.PoolCapacity, len(cs))
	for _, c := range cs {
		out[c.Pool] = c
	}
	return out
}

// poolCapacityView is the capacity part of a pool's page; form carries what an
// operator typed into a refused override form (nil: a fresh form).
func (s *Server) poolCapacityView(c *gin.Context, p exchange.Pool, form *templates.CapacityOverrideForm) (*templates.PoolCapacityView, error) {
	ctx := c.Request.Context()
	pc, err := s.svc.Market.Capacity(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	v := &templates.PoolCapacityView{Pool: p.ID, Unit: p.Unit, Effective: moneyfmt.Quantity(pc.Effective, p.Unit), Configured: moneyfmt.Quantity(pc.Configured, p.Unit),
		Source: pc.Source, Held: moneyfmt.Quantity(pc.Held, p.Unit),
		Form: templates.CapacityOverrideForm{Expires: s.now().Add(24 * time.Hour).Format(formTime), Errors: templates.FieldErrors{}}}
	if pc.Measured != nil {
		v.Measured, v.MeasuredAt, v.Below = moneyfmt.Quantity(*pc.Measured, p.Unit), fmtTime(*pc.MeasuredAt), *pc.Measured < pc.Configured
	}
	if pc.Oversold() > 0 {
		v.Oversold = moneyfmt.Quantity(pc.Oversold(), p.Unit)
	}
	if pc.Override != nil {
		v.Override = fmt.Sprintf("%s %s", moneyfmt.Quantity(*pc.Override, p.Unit), capacitySourceNote(pc))
	}
	if form != nil {
		v.Form = *form
	}
	log, err := s.svc.Market.CapacityOverrideLog(ctx, p.ID, 5)
	if err != nil {
		return nil, err
	}
	for _, e := range log {
		line := fmt.Sprintf("%s: %s cleared the override", fmtTime(e.At), e.ByWhom)
		if e.Action == "set" {
			line = fmt.Sprintf("%s: %s set %s until %s: %s", fmtTime(e.At), e.ByWhom, moneyfmt.Quantity(*e.Units, p.Unit), fmtTime(*e.ExpiresAt), e.Reason)
		}
		v.Log = append(v.Log, line)
	}
	return v, nil
}

// overrideCapacity sets a pool's capacity override with a reason and an expiry, by
// the signed-in operator. A refused form shows the page again with the field named
// and changes nothing.
func (s *Server) overrideCapacity(c *gin.Context) {
	ctx := c.Request.Context()
	p, err := s.svc.Market.Pool(ctx, c.Param("cluster")+"/"+c.Param("resource"))
	if err != nil {
		s.fail(c, err)
		return
	}
	form := templates.CapacityOverrideForm{Units: c.PostForm("capacity_units"), Reason: c.PostForm("capacity_reason"),
		Expires: c.PostForm("capacity_expires"), Errors: templates.FieldErrors{}}
	units, err := parseWhole(form.Units, 0, exchange.MaxCapacity)
	if err != nil {
		form.Errors["capacity_units"] = err.Error()
	}
	expires, err := parseFormTime(form.Expires)
	if err != nil {
		form.Errors["capacity_expires"] = "Give a date and time (UTC)."
	}
	if len(form.Errors) == 0 {
		u, _ := userFrom(c)
		err := s.svc.Market.OverrideCapacity(ctx, p.ID, units, form.Reason, expires, u.Email)
		if err == nil {
			s.log.InfoContext(ctx, "capacity overridden", "pool", p.ID, "units", units, "until", expires, "by", u.Email, "reason", strings.TrimSpace(form.Reason))
			s.redirectWithFlash(c, "/operate/pools/"+p.ID, "ok", fmt.Sprintf("%s: capacity overridden to %s until %s.", p.ID, moneyfmt.Quantity(units, p.Unit), fmtTime(expires)))
			return
		}
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			s.fail(c, err)
			return
		}
		for field, msg := range formErrors(err, "units") {
			form.Errors["capacity_"+field] = msg
		}
	}
	f, err := s.poolEditForm(c, p)
	if err == nil {
		f.CapacityView, err = s.poolCapacityView(c, p, &form)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, http.StatusUnprocessableEntity, templates.PoolEditPage(s.page(c, "Pool "+p.ID, "operate"), f))
}

// clearCapacityOverride removes a pool's capacity override, by the signed-in operator.
func (s *Server) clearCapacityOverride(c *gin.Context) {
	ctx := c.Request.Context()
	p, err := s.svc.Market.Pool(ctx, c.Param("cluster")+"/"+c.Param("resource"))
	if err != nil {
		s.fail(c, err)
		return
	}
	u, _ := userFrom(c)
	if err := s.svc.Market.ClearCapacityOverride(ctx, p.ID, u.Email); err != nil {
		s.fail(c, err)
		return
	}
	s.log.InfoContext(ctx, "capacity override cleared", "pool", p.ID, "by", u.Email)
	s.redirectWithFlash(c, "/operate/pools/"+p.ID, "ok", p.ID+": capacity override cleared; the measured (or configured) capacity applies again.")
}
