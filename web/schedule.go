package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// schedulePage shows operators each pool's plan and policy and the reservations
// that could not be honoured.
func (s *Server) schedulePage(c *gin.Context) {
	s.renderSchedule(c, http.StatusOK, "", nil)
}

func (s *Server) renderSchedule(c *gin.Context, status int, failedPool string, errs templates.FieldErrors) {
	ctx := c.Request.Context()
	pools, err := s.svc.Market.Pools(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	pols, err := s.svc.Reservations.Policies(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	now := s.now().UTC()
	v := templates.ScheduleView{SlotNote: s.slotNote()}
	for _, a := range fleet.PricingAlgorithms {
		v.Algorithms = append(v.Algorithms, templates.Option{Value: a, Label: a})
	}
	for _, p := range fleet.Predictors {
		v.Predictors = append(v.Predictors, templates.Option{Value: p, Label: p})
	}
	selected := c.Query("pool")
	if failedPool != "" {
		selected = failedPool
	}
	setAside, err := s.svc.Market.SetAsideForSale(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	for _, p := range pools {
		now1, err := s.svc.Reservations.PoolLoad(ctx, p.ID, now, now.Add(time.Minute), time.Minute)
		if err != nil {
			s.fail(c, err)
			return
		}
		pol := pols[p.ID]
		ps := templates.PoolSchedule{ID: p.ID, Unit: p.Unit, Algorithm: pol.Algorithm, Predictor: pol.Predictor, UnitPrice: pol.UnitPrice.Plain(), UnitPriceDollars: pol.UnitPrice.Dollars(), SetAside: setAside[p.ID]}
		if len(now1) > 0 {
			ps.Capacity, ps.Quota, ps.ReservedNow = now1[0].Capacity, now1[0].Quota, now1[0].Reserved
		}
		if selected == "" && ps.ReservedNow > 0 {
			selected = p.ID // the first busy pool, by default
		}
		v.Pools = append(v.Pools, ps)
	}
	for i := range v.Pools {
		if ps := &v.Pools[i]; ps.ID == selected || (selected == "" && i == 0) {
			load, err := s.svc.Reservations.PoolLoad(ctx, ps.ID, now, now.Add(48*time.Hour), 30*time.Minute)
			if err != nil {
				s.fail(c, err)
				return
			}
			sel := *ps
			sel.Chart = loadChart(pools[i], load, now)
			if ps.ID == failedPool {
				sel.Errors = errs
				sel.Algorithm, sel.Predictor, sel.UnitPrice = c.PostForm("algorithm"), c.PostForm("predictor"), c.PostForm("unit_price")
			}
			v.Selected = &sel
		}
	}
	failed, err := s.svc.Reservations.Reservations(ctx, fleet.ReservationFilter{From: now.Add(-24 * time.Hour),
		Statuses: []fleet.ReservationStatus{fleet.ReservationFailed}, Limit: 200})
	if err != nil {
		s.fail(c, err)
		return
	}
	units, err := s.poolUnits(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	for i := len(failed) - 1; i >= 0; i-- {
		v.AtRisk = append(v.AtRisk, reservationRow(failed[i], units))
	}
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	lost, err := s.svc.Reservations.LostByDay(ctx, today.AddDate(0, 0, -13), today.AddDate(0, 0, 1))
	if err != nil {
		s.fail(c, err)
		return
	}
	v.Lost = lostRows(lost)
	s.render(c, status, templates.SchedulePage(s.page(c, "Scheduler", "schedule"), v))
}

// loadChart plots a pool's capacity, quotas and reservations over the next two days.
func loadChart(p exchange.Pool, load []fleet.LoadPoint, now time.Time) templates.LineChart {
	series := []templates.Series{{Name: "capacity", Step: true}, {Name: "quota usable", Step: true},
		{Name: "reserved", Step: true}, {Name: "reserved inside quotas", Step: true}}
	for _, pt := range load {
		x := pt.At.Sub(now).Hours()
		for i, y := range []int64{pt.Capacity, pt.Quota, pt.Reserved, pt.FromQuota} {
			series[i].Points = append(series[i].Points, templates.Point{X: x, Y: float64(y)})
		}
	}
	return templates.LineChart{ID: "load-" + p.ID, Title: p.ID + ": the next 48 hours", XLabel: "hours from now",
		YLabel: p.Unit, Series: series, YFromZero: true, Height: 220,
		FormatX: func(h float64) string { return fmt.Sprintf("+%.0fh", h) }}
}

// savePolicy sets a pool's pricing algorithm, predictor and unit price.
func (s *Server) savePolicy(c *gin.Context) {
	pool := c.Param("cluster") + "/" + c.Param("resource")
	errs := templates.FieldErrors{}
	price := parseMoneyField(c, "unit_price", errs)
	if len(errs) == 0 {
		_, err := s.svc.Reservations.SetPolicy(c.Request.Context(), fleet.PricingPolicy{PoolID: pool,
			Algorithm: c.PostForm("algorithm"), Predictor: c.PostForm("predictor"), UnitPrice: price})
		if err == nil {
			s.redirectWithFlash(c, "/operate/schedule?pool="+pool+"#plan", "ok", fmt.Sprintf("Pricing of %s saved: new reservations are priced by it.", pool))
			return
		}
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			s.fail(c, err)
			return
		}
		errs["unit_price"] = clearhouse.ErrorMessage(err) // the policy's one free-text field; the selects offer only valid choices
	}
	s.renderSchedule(c, http.StatusUnprocessableEntity, pool, errs)
}
