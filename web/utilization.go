package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// psiOf returns each pool's psi in effect and where it comes from: measured,
// override or held (no usage data). Without a utilization service it is the
// pool's stored utilization.
func (s *Server) psiOf(ctx context.Context, pools []exchange.Pool) (map[string]float64, map[string]string, error) {
	psi, source := map[string]float64{}, map[string]string{}
	if s.svc.Utilization == nil {
		for _, p := range pools {
			psi[p.ID] = p.Utilization
		}
		return psi, source, nil
	}
	ps, err := s.svc.Utilization.Pools(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range ps {
		psi[p.Pool], source[p.Pool] = p.Psi, p.Source
	}
	return psi, source, nil
}

// psiBases says which figure each pool's utilization is, beside the sparkline's
// hourly means: "p95 of 7 days" when measured; nothing for an override or the held
// fallback, which their badges name.
func (s *Server) psiBases(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	if s.svc.Utilization == nil {
		return out, nil
	}
	ps, err := s.svc.Utilization.Pools(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if p.Source == fleet.PsiMeasured {
			out[p.Pool] = fmt.Sprintf("p%d of %d days", p.Percentile, p.WindowDays)
		}
	}
	return out, nil
}

// trends returns each pool's sparkline of hourly mean utilization over the last
// 7 days.
func (s *Server) trends(ctx context.Context) (map[string]templates.Sparkline, error) {
	out := map[string]templates.Sparkline{}
	if s.svc.Utilization == nil {
		return out, nil
	}
	ts, err := s.svc.Utilization.Trends(ctx, s.now().Add(-7*24*time.Hour))
	if err != nil {
		return nil, err
	}
	for pool, vs := range ts {
		lo, hi := slices.Min(vs), slices.Max(vs)
		out[pool] = templates.Sparkline{Values: vs, Now: fmt.Sprintf("%.0f%%", 100*vs[len(vs)-1]), Label: fmt.Sprintf("%s, hourly mean over 7 days: %.0f%% to %.0f%%, now %.0f%%", pool, 100*lo, 100*hi, 100*vs[len(vs)-1])}
	}
	return out, nil
}

// poolUtilization builds the measured-utilization part of a pool's page; form
// carries what an operator typed into a refused form (nil: the stored values).
func (s *Server) poolUtilization(c *gin.Context, p exchange.Pool, form *templates.PoolUtilizationView) (*templates.PoolUtilizationView, error) {
	if s.svc.Utilization == nil {
		return nil, nil
	}
	ctx := c.Request.Context()
	u, err := s.svc.Utilization.Pool(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	v := &templates.PoolUtilizationView{Pool: p.ID, Percentile: u.Percentile, WindowDays: strconv.Itoa(u.WindowDays), Samples: u.Samples,
		Source: u.Source, NoData: u.Measured == nil, Percentiles: fleet.Percentiles, Errors: templates.FieldErrors{}}
	now := s.now()
	series, err := s.svc.Utilization.Series(ctx, p.ID, now.Add(-time.Duration(u.WindowDays)*24*time.Hour), now.Add(time.Minute))
	if err != nil {
		return nil, err
	}
	pts := make([]templates.Point, len(series))
	for i, x := range series {
		pts[i] = templates.Point{X: float64(x.At.Unix()), Y: 100 * x.Ratio}
	}
	v.Series = templates.LineChart{ID: "usage-series", Title: fmt.Sprintf("Used / capacity, last %d days (%%)", u.WindowDays), YFromZero: true,
		Series: []templates.Series{{Name: "used/capacity", Points: pts}}, FormatX: func(x float64) string { return time.Unix(int64(x), 0).UTC().Format("Jan 2 15:04") }}
	if u.Measured != nil && len(pts) > 0 {
		v.Series.Series = append(v.Series.Series, templates.Series{Name: fmt.Sprintf("p%d = psi", u.Percentile),
			Points: []templates.Point{{X: pts[0].X, Y: 100 * *u.Measured}, {X: pts[len(pts)-1].X, Y: 100 * *u.Measured}}})
	}
	rc, err := s.svc.Market.Curve(ctx, p.CurveID)
	if err != nil {
		return nil, err
	}
	spec, err := rc.CurveSpec()
	if err != nil {
		return nil, err
	}
	curve, err := spec.Build()
	if err != nil {
		return nil, err
	}
	row := func(what string, psi float64, note string) templates.PsiRow {
		r := templates.PsiRow{What: what, Psi: fmt.Sprintf("%.1f%%", 100*psi), Phi: fmt.Sprintf("%.4f", curve.Phi(psi)), Note: note}
		if price, err := p.ReservePrice(curve, psi); err == nil {
			r.Reserve = fmt.Sprintf("$%.4f", price)
		}
		return r
	}
	if u.Measured != nil {
		r := row("measured", *u.Measured, fmt.Sprintf("p%d over %d days, %d samples", u.Percentile, u.WindowDays, u.Samples))
		r.InEffect = u.Source == fleet.PsiMeasured
		v.Rows = append(v.Rows, r)
	} else {
		v.Rows = append(v.Rows, templates.PsiRow{What: "measured", Psi: "no data", Phi: "—", Reserve: "—", Note: "no agent report or reservation in the window"})
	}
	if u.Override != nil {
		r := row("override", *u.Override, fmt.Sprintf("until %s: %s", fmtTime(*u.OverrideExpires), u.OverrideReason))
		r.InEffect = true
		v.Rows = append(v.Rows, r)
		v.Active = fmt.Sprintf("%.1f%% until %s by %s: %s", 100**u.Override, fmtTime(*u.OverrideExpires), u.OverrideBy, u.OverrideReason)
	} else {
		v.Rows = append(v.Rows, templates.PsiRow{What: "override", Psi: "none", Phi: "—", Reserve: "—"})
	}
	held := row("held", u.Fallback, fmt.Sprintf("%s of %s held by teams: used when there is no data", groupDigits(u.Held), countOf(u.Capacity, p.Unit)))
	held.InEffect = u.Source == fleet.PsiHeld
	v.Rows = append(v.Rows, held)
	v.Override.Expires = now.Add(72 * time.Hour).Format(formTime)
	if form != nil {
		v.Errors = form.Errors
		v.Override = form.Override
		if form.WindowDays != "" {
			v.WindowDays = form.WindowDays
		}
		if form.Percentile != 0 {
			v.Percentile = form.Percentile
		}
	}
	return v, nil
}

// renderPoolWithErrors shows the pool page again with a refused utilization form.
func (s *Server) renderPoolWithErrors(c *gin.Context, p exchange.Pool, form templates.PoolUtilizationView) {
	f, err := s.poolForm(c, templates.PoolForm{ID: p.ID, Unit: p.Unit, Capacity: strconv.FormatInt(p.Capacity, 10),
		UnitCost: p.UnitCost.Plain(), Curve: p.CurveID})
	if err == nil {
		f.Util, err = s.poolUtilization(c, p, &form)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, http.StatusUnprocessableEntity, templates.PoolEditPage(s.page(c, "Pool "+p.ID, "operate"), f))
}

// utilizationPool is the pool of a utilization form's path, or a failure
// answered.
func (s *Server) utilizationPool(c *gin.Context) (exchange.Pool, bool) {
	if s.svc.Utilization == nil {
		s.fail(c, clearhouse.Errorf(clearhouse.ENOTFOUND, "utilization: this server does not measure utilization"))
		return exchange.Pool{}, false
	}
	p, err := s.svc.Market.Pool(c.Request.Context(), c.Param("cluster")+"/"+c.Param("resource"))
	if err != nil {
		s.fail(c, err)
		return exchange.Pool{}, false
	}
	return p, true
}

// savePsiPolicy sets the percentile and window a pool's psi is measured with.
func (s *Server) savePsiPolicy(c *gin.Context) {
	p, ok := s.utilizationPool(c)
	if !ok {
		return
	}
	form := templates.PoolUtilizationView{WindowDays: c.PostForm("window"), Errors: templates.FieldErrors{}}
	pct, err := strconv.Atoi(strings.TrimSpace(c.PostForm("percentile")))
	if err != nil {
		form.Errors["percentile"] = "Choose p50, p90, p95 or p99."
	}
	form.Percentile = pct
	days, err := strconv.Atoi(strings.TrimSpace(form.WindowDays))
	if err != nil {
		form.Errors["window"] = fmt.Sprintf("Give a whole number of days from 1 to %d.", fleet.MaxWindowDays)
	}
	if len(form.Errors) == 0 {
		err := s.svc.Utilization.SetPolicy(c.Request.Context(), p.ID, pct, days)
		if err == nil {
			s.redirectWithFlash(c, "/operate/pools/"+p.ID, "ok", fmt.Sprintf("%s: psi is now measured as p%d over %d days.", p.ID, pct, days))
			return
		}
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			s.fail(c, err)
			return
		}
		form.Errors = formErrors(err, "percentile")
	}
	s.renderPoolWithErrors(c, p, form)
}

// overridePsi overrides a pool's psi with a reason until an expiry.
func (s *Server) overridePsi(c *gin.Context) {
	p, ok := s.utilizationPool(c)
	if !ok {
		return
	}
	form := templates.PoolUtilizationView{Errors: templates.FieldErrors{}}
	form.Override.Psi, form.Override.Reason, form.Override.Expires = c.PostForm("psi"), c.PostForm("reason"), c.PostForm("expires")
	psi, err := strconv.ParseFloat(strings.TrimSpace(form.Override.Psi), 64)
	if err != nil || psi < 0 || psi > 100 {
		form.Errors["psi"] = "Give a percentage from 0 to 100."
	}
	expires, err := parseFormTime(form.Override.Expires)
	if err != nil {
		form.Errors["expires"] = "Give a date and time (UTC)."
	}
	if len(form.Errors) == 0 {
		u, _ := userFrom(c)
		err := s.svc.Utilization.Override(c.Request.Context(), p.ID, psi/100, form.Override.Reason, expires, u.Email)
		if err == nil {
			s.redirectWithFlash(c, "/operate/pools/"+p.ID, "ok", fmt.Sprintf("%s: psi overridden to %.1f%% until %s.", p.ID, psi, fmtTime(expires)))
			return
		}
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			s.fail(c, err)
			return
		}
		form.Errors = formErrors(err, "psi")
	}
	s.renderPoolWithErrors(c, p, form)
}

// clearPsiOverride removes a pool's override.
func (s *Server) clearPsiOverride(c *gin.Context) {
	p, ok := s.utilizationPool(c)
	if !ok {
		return
	}
	if err := s.svc.Utilization.ClearOverride(c.Request.Context(), p.ID); err != nil {
		s.fail(c, err)
		return
	}
	s.redirectWithFlash(c, "/operate/pools/"+p.ID, "ok", p.ID+": override cleared; psi is measured again.")
}

// tradeBoxPlot is the distribution of settled trades' pool utilization per
// resource kind, bids against offers, over the last 30 settled auctions.
func (s *Server) tradeBoxPlot(c *gin.Context) (templates.BoxPlot, error) {
	ts, err := s.svc.Market.TradeUtilizations(c.Request.Context(), 30)
	if err != nil {
		return templates.BoxPlot{}, err
	}
	byKind := map[string]map[string][]float64{}
	var kinds []string
	for _, t := range ts {
		if byKind[t.Resource] == nil {
			byKind[t.Resource] = map[string][]float64{}
			kinds = append(kinds, t.Resource)
		}
		byKind[t.Resource][t.Side] = append(byKind[t.Resource][t.Side], t.Utilization)
	}
	slices.Sort(kinds)
	box := templates.BoxPlot{ID: "trade-utilization-box"}
	for _, k := range kinds {
		box.Groups = append(box.Groups, templates.BoxGroup{Resource: k, Bids: boxStats(byKind[k]["bid"]), Offer: boxStats(byKind[k]["offer"])})
	}
	return box, nil
}

// boxStats are the five numbers of xs: extremes and nearest-rank quartiles.
func boxStats(xs []float64) templates.BoxStats {
	if len(xs) == 0 {
		return templates.BoxStats{}
	}
	q := func(p int) float64 { return fleet.Percentile(xs, p) } // sorts xs
	st := templates.BoxStats{N: len(xs), Q1: q(25), Median: q(50), Q3: q(75)}
	st.Min, st.Max = xs[0], xs[len(xs)-1]
	return st
}
