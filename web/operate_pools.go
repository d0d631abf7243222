package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

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
