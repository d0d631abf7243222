package web

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// operateView builds the operator's overview; forms carry what was typed.
func (s *Server) operateView(c *gin.Context, v templates.OperateView) (templates.OperateView, error) {
	ctx := c.Request.Context()
	pools, err := s.svc.Market.Pools(ctx)
	if err != nil {
		return v, err
	}
	hs, err := s.svc.Market.Holdings(ctx, "")
	if err != nil {
		return v, err
	}
	held := map[string]int64{}
	for _, h := range hs {
		held[h.PoolID] += h.Quantity
	}
	reserve, err := s.svc.Market.ReservePrices(ctx)
	if err != nil {
		return v, err
	}
	curves, err := s.svc.Market.Curves(ctx)
	if err != nil {
		return v, err
	}
	v.Curves = nil
	for _, cv := range curves {
		v.Curves = append(v.Curves, templates.CurveRow{ID: cv.ID, Name: cv.Name, Summary: curveSummary(cv)})
	}
	psi, source, err := s.psiOf(ctx, pools)
	if err != nil {
		return v, err
	}
	caps, err := s.svc.Market.Capacities(ctx)
	if err != nil {
		return v, err
	}
	v.Oversold = oversoldRows(caps)
	capacity := capacityByPool(caps)
	v.Pools = nil
	for _, p := range pools {
		row := templates.PoolAdminRow{ID: p.ID, Unit: p.Unit, Curve: p.CurveID, UnitCost: unitCost(p),
			Utilization: fmt.Sprintf("%.1f%%", psi[p.ID]*100), PsiSource: source[p.ID], Capacity: capacity[p.ID].Effective,
			CapacitySource: capacity[p.ID].Source, Held: held[p.ID]}
		if r, ok := reserve[p.ID]; ok {
			row.Reserve = &templates.Price{Dollars: r, Unit: p.Unit}
		}
		v.Pools = append(v.Pools, row)
	}
	clusters, err := s.svc.Market.Clusters(ctx)
	if err != nil {
		return v, err
	}
	if v.Agents, err = s.agentRows(ctx, clusters); err != nil {
		return v, err
	}
	if v.OverLimit, err = s.overLimitView(ctx, pools, v.OverLimit.Policy); err != nil {
		return v, err
	}
	v.NewPool.Clusters = nil
	for _, cl := range clusters {
		v.NewPool.Clusters = append(v.NewPool.Clusters, cl.ID)
	}
	v.NewPool.Curves = v.Curves
	if v.NewPool.Curve == "" {
		v.NewPool.Curve = defaultCurve(pools, curves)
	}
	as, err := s.svc.Market.Auctions(ctx, 30)
	if err != nil {
		return v, err
	}
	counts, err := s.svc.Market.OrderCounts(ctx)
	if err != nil {
		return v, err
	}
	v.Auctions = nil
	for _, a := range as {
		v.Auctions = append(v.Auctions, templates.AuctionAdminRow{ID: a.ID, Status: string(a.Status), Opens: fmtTime(a.OpensAt), Closes: closesText(a),
			Failure: a.Failure, Orders: counts[a.ID].TakingPart, Waiting: counts[a.ID].Waiting, Left: counts[a.ID].Left, CanPreview: a.Status == exchange.AuctionOpen, CanClose: a.Status == exchange.AuctionOpen || a.Status == exchange.AuctionClosing,
			CanCancel: a.Status == exchange.AuctionScheduled || a.Halted(), Halted: a.Halted()})
	}
	if v.Limits.OpenOrders == "" {
		l, err := s.svc.Market.Limits(ctx)
		if err != nil {
			return v, err
		}
		v.Limits.OpenOrders, v.Limits.Bundles, v.Limits.Pools = strconv.Itoa(l.OpenOrdersPerTeam), strconv.Itoa(l.BundlesPerOrder), strconv.Itoa(l.PoolsPerBundle)
	}
	if v.NewAuction.Opens == "" {
		next := s.now().Truncate(time.Hour).Add(time.Hour)
		v.NewAuction.Opens, v.NewAuction.Closes = next.Format(formTime), next.Add(time.Hour).Format(formTime)
		v.NewAuction.Final = strconv.FormatFloat(auction.DefaultFinalSeconds, 'g', -1, 64)
	}
	return v, nil
}

// defaultCurve is the curve a new pool starts with: the one most pools use (the
// market's usual curve, not a special one such as scarce accelerators'), "standard"
// on a tie or when no pool has one yet.
func defaultCurve(pools []exchange.Pool, curves []exchange.ReserveCurve) string {
	uses := map[string]int{}
	for _, p := range pools {
		uses[p.CurveID]++
	}
	best := ""
	for _, cv := range curves {
		if best == "" || uses[cv.ID] > uses[best] || (uses[cv.ID] == uses[best] && cv.ID == "standard") {
			best = cv.ID
		}
	}
	return best
}

func curveSummary(c exchange.ReserveCurve) string {
	spec, err := c.CurveSpec()
	if err != nil {
		return ""
	}
	built, err := spec.Build()
	if err != nil {
		return "invalid"
	}
	return fmt.Sprintf("%s · phi = 1 at %.0f%% · phi(1) = %.3g phi(0)", spec.Kind, built.Threshold()*100, built.K())
}

func (s *Server) renderOperate(c *gin.Context, status int, v templates.OperateView) {
	v, err := s.operateView(c, v)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, status, templates.OperatePage(s.page(c, "Operate", "operate"), v))
}

func (s *Server) operatePage(c *gin.Context) {
	s.renderOperate(c, http.StatusOK, templates.OperateView{})
}

func (s *Server) addCluster(c *gin.Context) {
	f := templates.ClusterForm{ID: c.PostForm("id"), Name: c.PostForm("name"), Region: c.PostForm("region")}
	_, err := s.svc.Market.AddCluster(c.Request.Context(), exchange.Cluster{ID: f.ID, Name: f.Name, Region: f.Region})
	if err == nil {
		s.redirectWithFlash(c, "/operate", "ok", "Cluster "+strings.TrimSpace(f.ID)+" added.")
		return
	}
	if clearhouse.ErrorCode(err) == clearhouse.EINTERNAL {
		s.fail(c, err)
		return
	}
	f.Errors = formErrors(err, "id")
	s.renderOperate(c, http.StatusUnprocessableEntity, templates.OperateView{NewCluster: f})
}

// readPoolForm reads the pool fields; errors name the form's fields.
func readPoolForm(c *gin.Context) (templates.PoolForm, exchange.PoolSpec) {
	f := templates.PoolForm{Cluster: c.PostForm("cluster"), Resource: c.PostForm("resource"), Unit: c.PostForm("unit"),
		Capacity: c.PostForm("capacity"), UnitCost: c.PostForm("unit_cost"), Utilization: c.PostForm("utilization"),
		Curve: c.PostForm("curve"), Errors: templates.FieldErrors{}}
	spec := exchange.PoolSpec{ClusterID: f.Cluster, Resource: f.Resource, Unit: f.Unit, CurveID: f.Curve}
	if n, err := parseWhole(f.Capacity, 0, 1e12); err != nil {
		f.Errors["capacity"] = err.Error()
	} else {
		spec.Capacity = n
	}
	spec.UnitCost = parseMoneyField(c, "unit_cost", f.Errors)
	// The typed utilization is optional: the server measures psi (fleet.Utilization);
	// the stored value serves only markets without measurement.
	if strings.TrimSpace(f.Utilization) == "" {
		return f, spec
	}
	if u, err := strconv.ParseFloat(strings.TrimSpace(f.Utilization), 64); err != nil || u < 0 || u > 100 {
		f.Errors["utilization"] = "Give a percentage from 0 to 100."
	} else {
		spec.Utilization = u / 100
	}
	return f, spec
}

// poolFieldErrors maps a domain error on a pool to the form's field names.
func poolFieldErrors(err error) templates.FieldErrors {
	errs := formErrors(err, "resource")
	if m, ok := errs["unit cost"]; ok {
		delete(errs, "unit cost")
		errs["unit_cost"] = m
	}
	return errs
}

func (s *Server) addPool(c *gin.Context) {
	f, spec := readPoolForm(c)
	if len(f.Errors) == 0 && !s.zeroCostConfirmed(c, f, spec, "/operate") {
		return
	}
	if len(f.Errors) == 0 {
		p, err := s.svc.Market.AddPool(c.Request.Context(), spec)
		if err == nil {
			s.redirectWithFlash(c, "/operate", "ok", "Pool "+p.ID+" added.")
			return
		}
		if clearhouse.ErrorCode(err) == clearhouse.EINTERNAL {
			s.fail(c, err)
			return
		}
		f.Errors = poolFieldErrors(err)
	}
	s.renderOperate(c, http.StatusUnprocessableEntity, templates.OperateView{NewPool: f})
}

func (s *Server) poolForm(c *gin.Context, f templates.PoolForm) (templates.PoolForm, error) {
	curves, err := s.svc.Market.Curves(c.Request.Context())
	if err != nil {
		return f, err
	}
	for _, cv := range curves {
		f.Curves = append(f.Curves, templates.CurveRow{ID: cv.ID, Name: cv.Name})
	}
	return f, nil
}

func (s *Server) editPoolPage(c *gin.Context) {
	id := c.Param("cluster") + "/" + c.Param("resource")
	p, err := s.svc.Market.Pool(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	f, err := s.poolEditForm(c, p)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, http.StatusOK, templates.PoolEditPage(s.page(c, "Pool "+p.ID, "operate"), f))
}

// poolEditForm is the pool edit page's form with the pool's stored values.
func (s *Server) poolEditForm(c *gin.Context, p exchange.Pool) (templates.PoolForm, error) {
	f, err := s.poolForm(c, templates.PoolForm{ID: p.ID, Unit: p.Unit, Capacity: strconv.FormatInt(p.Capacity, 10),
		UnitCost: p.UnitCost.Plain(), Utilization: strconv.FormatFloat(p.Utilization*100, 'f', -1, 64), Curve: p.CurveID})
	if err != nil {
		return f, err
	}
	if f.Util, err = s.poolUtilization(c, p, nil); err != nil {
		return f, err
	}
	if f.CapacityView, err = s.poolCapacityView(c, p, nil); err != nil {
		return f, err
	}
	refs, err := s.svc.Market.ReferencePrices(c.Request.Context())
	if err != nil {
		return f, err
	}
	if r := refs[p.ID]; r > 0 {
		f.Reference = ledger.Money(r).Plain()
	}
	return f, s.holdingChargeForm(c.Request.Context(), p, &f)
}

func (s *Server) updatePool(c *gin.Context) {
	id := c.Param("cluster") + "/" + c.Param("resource")
	f, spec := readPoolForm(c)
	f.ID = id
	if strings.TrimSpace(f.Utilization) == "" { // not on the form: keep the stored value
		if p, err := s.svc.Market.Pool(c.Request.Context(), id); err == nil {
			spec.Utilization = p.Utilization
		}
	}
	if len(f.Errors) == 0 && !s.zeroCostConfirmed(c, f, spec, "/operate/pools/"+id) {
		return
	}
	if len(f.Errors) == 0 {
		_, err := s.svc.Market.UpdatePool(c.Request.Context(), id, spec)
		if err == nil {
			s.redirectWithFlash(c, "/operate", "ok", "Pool "+id+" saved.")
			return
		}
		if code := clearhouse.ErrorCode(err); code == clearhouse.EINTERNAL || code == clearhouse.ENOTFOUND && strings.HasPrefix(clearhouse.ErrorMessage(err), "pool:") {
			s.fail(c, err)
			return
		}
		f.Errors = poolFieldErrors(err)
	}
	f, err := s.poolForm(c, f)
	if err != nil {
		s.fail(c, err)
		return
	}
	if p, err := s.svc.Market.Pool(c.Request.Context(), id); err == nil {
		if f.Util, err = s.poolUtilization(c, p, nil); err != nil {
			s.fail(c, err)
			return
		}
		if f.CapacityView, err = s.poolCapacityView(c, p, nil); err != nil {
			s.fail(c, err)
			return
		}
	}
	s.render(c, http.StatusUnprocessableEntity, templates.PoolEditPage(s.page(c, "Pool "+id, "operate"), f))
}

// curveFromValues reads a curve spec from form or query values.
func curveFromValues(get func(string) string) (auction.CurveSpec, templates.FieldErrors) {
	errs := templates.FieldErrors{}
	spec := auction.CurveSpec{Kind: get("kind")}
	num := func(name string) float64 {
		v, err := strconv.ParseFloat(strings.TrimSpace(get(name)), 64)
		if err != nil {
			errs[name] = "Give a number."
		}
		return v
	}
	switch spec.Kind {
	case "points":
		for i, line := range strings.Split(strings.TrimSpace(get("points")), "\n") {
			f := strings.Fields(strings.ReplaceAll(line, ",", " "))
			if len(f) == 0 {
				continue
			}
			if len(f) != 2 {
				errs["points"] = fmt.Sprintf("Line %d: give two numbers, utilization and phi.", i+1)
				break
			}
			psi, e1 := strconv.ParseFloat(f[0], 64)
			phi, e2 := strconv.ParseFloat(f[1], 64)
			if e1 != nil || e2 != nil {
				errs["points"] = fmt.Sprintf("Line %d: %q is not two numbers.", i+1, line)
				break
			}
			spec.Points = append(spec.Points, auction.CurvePoint{Psi: psi, Phi: phi})
		}
	default:
		spec.Kind = "parametric"
		spec.K, spec.Threshold, spec.Gamma = num("k"), num("threshold"), num("gamma")
	}
	return spec, errs
}

func (s *Server) curveForm(c *gin.Context, id string, spec auction.CurveSpec, f templates.CurveForm) (templates.CurveForm, error) {
	f.ID, f.Kind = id, spec.Kind
	if spec.Kind == "parametric" {
		f.K, f.Threshold, f.Gamma = fmtNum(spec.K), fmtNum(spec.Threshold), fmtNum(spec.Gamma)
	}
	var lines []string
	for _, p := range spec.Points {
		lines = append(lines, fmtNum(p.Psi)+" "+fmtNum(p.Phi))
	}
	f.Points = strings.Join(lines, "\n")
	f.Plot = templates.LineChart{ID: "curve-chart", Title: "Weight phi by utilization", XLabel: "utilization", YLabel: "phi", Width: 420, Height: 300,
		FormatX: func(x float64) string { return fmt.Sprintf("%.0f%%", x*100) }, YFromZero: true}
	built, err := spec.Build()
	if err != nil {
		if len(f.Errors) == 0 {
			field, msg := fieldOf(err)
			if field == "curve" {
				field = "points"
				if spec.Kind == "parametric" {
					field = "k"
					for _, name := range []string{"threshold", "gamma"} {
						if strings.HasPrefix(msg, name) {
							field = name
						}
					}
				}
			}
			f.Errors = templates.FieldErrors{field: msg}
		}
		f.Plot.EmptyText = "The curve cannot be drawn: " + curveErrorText(f.Errors)
		return f, nil
	}
	series := templates.Series{Name: "phi"}
	for _, p := range built.Sample(100) {
		series.Points = append(series.Points, templates.Point{X: p.Psi, Y: p.Phi})
	}
	f.Plot.Series = []templates.Series{series}
	f.Plot.Markers = []float64{built.Threshold()}
	ctx := c.Request.Context()
	pools, err := s.svc.Market.Pools(ctx)
	if err != nil {
		return f, err
	}
	psi, _, err := s.psiOf(ctx, pools) // each pool's own utilization, as the market uses it
	if err != nil {
		return f, err
	}
	var saved *auction.Curve // the curve as stored, for the reserves now
	if cv, err := s.svc.Market.Curve(ctx, id); err == nil {
		if spec, err := cv.CurveSpec(); err == nil {
			if b, err := spec.Build(); err == nil {
				saved = &b
			}
		}
	} else if clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
		return f, err
	}
	for _, p := range pools {
		if p.CurveID != id {
			continue
		}
		u, ok := psi[p.ID]
		if !ok {
			u = p.Utilization
		}
		r, _ := p.ReservePrice(built, u)
		row := templates.ImpliedReserve{Pool: p.ID, Utilization: fmt.Sprintf("%.1f%%", u*100),
			UnitCost: unitCost(p), Phi: fmt.Sprintf("%.4f", built.Phi(u)), Reserve: templates.Price{Dollars: r, Unit: p.Unit}}
		if saved != nil {
			b, _ := p.ReservePrice(*saved, u)
			row.Before = &templates.Price{Dollars: b, Unit: p.Unit}
		}
		f.Implied = append(f.Implied, row)
	}
	sort.Slice(f.Implied, func(i, j int) bool { return f.Implied[i].Pool < f.Implied[j].Pool })
	return f, nil
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// curvePage shows a curve (previews are POSTs: saveCurve with action=preview).
func (s *Server) curvePage(c *gin.Context) {
	id := c.Param("id")
	f := templates.CurveForm{Name: c.Query("name")}
	var spec auction.CurveSpec
	if cv, err := s.svc.Market.Curve(c.Request.Context(), id); err == nil {
		f.Name = cv.Name
		if spec, err = cv.CurveSpec(); err != nil {
			s.fail(c, err)
			return
		}
	} else if clearhouse.ErrorCode(err) == clearhouse.ENOTFOUND {
		spec, f.IsNew = auction.DefaultCurve, true
	} else {
		s.fail(c, err)
		return
	}
	f, err := s.curveForm(c, id, spec, f)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, http.StatusOK, templates.CurvePage(s.page(c, "Reserve curve "+id, "operate"), f))
}

func (s *Server) saveCurve(c *gin.Context) {
	id := c.Param("id")
	spec, errs := curveFromValues(c.PostForm)
	f := templates.CurveForm{Name: c.PostForm("name"), Errors: errs}
	if c.PostForm("action") == "preview" { // re-draw without saving
		f, err := s.curveForm(c, id, spec, f)
		if err != nil {
			s.fail(c, err)
			return
		}
		s.render(c, http.StatusOK, templates.CurvePage(s.page(c, "Reserve curve "+id, "operate"), f))
		return
	}
	if len(errs) == 0 {
		if _, err := s.svc.Market.SaveCurve(c.Request.Context(), id, f.Name, spec); err == nil {
			s.redirectWithFlash(c, "/operate/curves/"+id, "ok", "Curve saved. Auctions that open from now on use it.")
			return
		} else if code := clearhouse.ErrorCode(err); code != clearhouse.EINVALID {
			s.fail(c, err)
			return
		} else if field, msg := fieldOf(err); field == "id" {
			f.Errors = templates.FieldErrors{"name": msg}
		}
	}
	f, err := s.curveForm(c, id, spec, f)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, http.StatusUnprocessableEntity, templates.CurvePage(s.page(c, "Reserve curve "+id, "operate"), f))
}

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

// tradesPage lists every live order of every team.
func (s *Server) tradesPage(c *gin.Context) {
	vs, pg, err := s.orderPage(c, exchange.OrderFilter{Statuses: []exchange.OrderStatus{exchange.OrderOpen, exchange.OrderAwaitingApproval}, Limit: 100}, "open trades")
	if err != nil {
		s.fail(c, err)
		return
	}
	units, err := s.poolUnits(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, http.StatusOK, templates.TradesPage(s.page(c, "Open trades", "operate"), orderRows(userOf(c), vs, false, units), pg))
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "—"
	}
	return fmt.Sprintf("%+.1f%%", f*100)
}

// statsPage shows the operator's per-auction statistics.
func (s *Server) statsPage(c *gin.Context) {
	stats, err := s.svc.Market.Stats(c.Request.Context(), 30)
	if err != nil {
		s.fail(c, err)
		return
	}
	refs, err := s.svc.Market.ReferencePrices(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	var rows []templates.StatsRow
	for _, st := range stats {
		r := templates.StatsRow{ID: st.Auction.ID, Closed: fmtTime(st.Auction.Closed()),
			Settled:       fmt.Sprintf("%d of %d (%.0f%%)", st.Won, st.Orders, 100*st.ShareSettled),
			PremiumMedian: pct(st.PremiumMedian), PremiumMean: pct(st.PremiumMean)}
		for _, pool := range sortedKeys(st.PriceChange) {
			if math.Abs(st.PriceChange[pool]) >= 0.0005 { // unchanged pools would drown the rest
				r.Changes = append(r.Changes, pool+" "+pct(st.PriceChange[pool]))
			}
		}
		if len(r.Changes) == 0 && len(st.PriceChange) > 0 {
			r.Changes = []string{"no traded price moved"}
		}
		if len(st.Indicative) > 0 {
			r.Indicative = "Nothing traded in " + strings.Join(sortedKeys(st.Indicative), ", ") + ": their prices are indicative only and left out."
		}
		for _, pool := range sortedKeys(st.Utilization) {
			r.Utilization = append(r.Utilization, fmt.Sprintf("%s %.0f%%", pool, 100*st.Utilization[pool]))
		}
		for _, pool := range sortedKeys(st.Prices) {
			if ref := refs[pool]; ref > 0 {
				r.Reference = append(r.Reference, fmt.Sprintf("%s %.2f×", pool, st.Prices[pool]/ledger.Money(ref).Dollars()))
			}
		}
		rows = append(rows, r)
	}
	box, err := s.tradeBoxPlot(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	v := templates.StatsView{Rows: rows, Charts: statsCharts(stats, refs), NoReferences: len(refs) == 0, Box: box}
	s.render(c, http.StatusOK, templates.StatsPage(s.page(c, "Auction statistics", "operate"), v))
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// curveErrorText is the reason a curve cannot be drawn, from its field errors.
func curveErrorText(errs templates.FieldErrors) string {
	for _, name := range []string{"k", "threshold", "gamma", "points"} {
		if msg, ok := errs[name]; ok {
			return name + ": " + msg
		}
	}
	for name, msg := range errs {
		return name + ": " + msg
	}
	return "its parameters are not valid."
}
