package web

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

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
