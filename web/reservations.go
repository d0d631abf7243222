package web

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// formTime is how date-and-time fields show times: the pages' one format (UTC, 24 h),
// without the zone the label names; parseFormTime reads it back.
const formTime = "2006-01-02 15:04"

// reservationForm is an empty form with the clusters and resources to choose from
// and a window from the next slot boundary.
func (s *Server) reservationForm(c *gin.Context) (templates.ReservationForm, []exchange.Pool, error) {
	pools, err := s.svc.Market.Pools(c.Request.Context())
	if err != nil {
		return templates.ReservationForm{}, nil, err
	}
	f := templates.ReservationForm{Errors: templates.FieldErrors{}, Count: "1", Duration: "1h"}
	seenCluster, seenRes := map[string]bool{}, map[string]bool{}
	for _, p := range pools {
		if !seenCluster[p.ClusterID] {
			seenCluster[p.ClusterID] = true
			f.Clusters = append(f.Clusters, templates.Option{Value: p.ClusterID, Label: p.ClusterID})
		}
		if !seenRes[p.Resource] {
			seenRes[p.Resource] = true
			f.Resources = append(f.Resources, templates.ResourceInput{Name: p.Resource, Unit: p.Unit})
			f.Overheads = append(f.Overheads, templates.ResourceInput{Name: p.Resource, Unit: p.Unit})
		}
	}
	if hs, err := s.svc.Market.Holdings(c.Request.Context(), userOf(c).TeamID); err == nil && len(hs) > 0 {
		f.Cluster, _, _ = strings.Cut(hs[0].PoolID, "/") // where the team holds quota
	}
	slot := s.svc.Reservations.Config().Slot
	start := s.now().UTC().Truncate(slot).Add(slot)
	f.Arrival, f.Deadline = start.Format(formTime), start.Add(4*time.Hour).Format(formTime)
	return f, pools, nil
}

// maxReservationTasks is the most tasks the form takes in one stage: far more than
// any cluster runs at once, and a number people read (the scheduler's own bound is
// an implementation limit, never shown).
const maxReservationTasks = 1_000_000

// taskUnits reads the units of pool p one task needs: a whole number from lo up to
// the pool's whole capacity, which the message names when it is exceeded (no task
// can use more than the pool has).
func taskUnits(raw string, lo int64, p exchange.Pool) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("enter a whole number")
	case err == nil && n < lo:
		return 0, fmt.Errorf("must be at least %s", groupDigits(lo))
	case err != nil || (p.Capacity > 0 && n > p.Capacity):
		return 0, fmt.Errorf("pool %s has %s in all: one task can use at most that", p.ID, countOf(p.Capacity, p.Unit))
	}
	return n, nil
}

// definitionFromForm reads the form's values (get is c.PostForm, or c.Query for a
// form shown again after a reservation) into f, to show again, and a definition,
// recording what is malformed in f.Errors.
func definitionFromForm(get func(string) string, f *templates.ReservationForm, pools []exchange.Pool) fleet.Definition {
	f.Cluster, f.Count, f.Duration = get("cluster"), get("count"), strings.TrimSpace(get("duration"))
	f.Arrival, f.Deadline, f.Value = get("arrival"), get("deadline"), get("value")
	have := map[string]bool{}
	byID := map[string]exchange.Pool{}
	for _, p := range pools {
		have[p.ID], byID[p.ID] = true, p
	}
	rs := fleet.RequestSpec{Configuration: map[string]int64{}}
	for i, r := range f.Resources {
		raw := strings.TrimSpace(get("u." + r.Name))
		f.Resources[i].Value = raw
		if raw == "" || raw == "0" {
			continue
		}
		n, err := taskUnits(raw, 1, byID[f.Cluster+"/"+r.Name])
		switch {
		case !have[f.Cluster+"/"+r.Name]:
			f.Errors["u."+r.Name] = fmt.Sprintf("Cluster %s has no %s pool.", f.Cluster, r.Name)
		case err != nil:
			f.Errors["u."+r.Name] = err.Error()
		default:
			rs.Configuration[f.Cluster+"/"+r.Name] = n
		}
	}
	if len(rs.Configuration) == 0 && len(f.Errors) == 0 {
		f.Errors["cluster"] = "Give the units of at least one resource a task needs."
	}
	var err error
	if rs.Count, err = parseWhole(f.Count, 1, maxReservationTasks); err != nil {
		f.Errors["count"] = err.Error()
	}
	if rs.Duration, err = time.ParseDuration(f.Duration); err != nil || rs.Duration <= 0 {
		f.Errors["duration"] = "Give a duration such as 45m, 2h or 1h30m."
	}
	if rs.Arrival, err = parseFormTime(f.Arrival); err != nil {
		f.Errors["arrival"] = "Give a date and time (UTC)."
	}
	if rs.Deadline, err = parseFormTime(f.Deadline); err != nil {
		f.Errors["deadline"] = "Give a date and time (UTC)."
	}
	for i, r := range f.Overheads {
		raw := strings.TrimSpace(get("o." + r.Name))
		f.Overheads[i].Value = raw
		if raw == "" || raw == "0" {
			continue
		}
		n, err := taskUnits(raw, 1, byID[f.Cluster+"/"+r.Name])
		switch {
		case !have[f.Cluster+"/"+r.Name]:
			f.Errors["o."+r.Name] = fmt.Sprintf("Cluster %s has no %s pool.", f.Cluster, r.Name)
		case err != nil:
			f.Errors["o."+r.Name] = err.Error()
		default:
			if rs.Overhead == nil {
				rs.Overhead = map[string]int64{}
			}
			rs.Overhead[f.Cluster+"/"+r.Name] = n
		}
	}
	d := fleet.Definition{Requests: []fleet.RequestSpec{rs}}
	f.Language, f.ReduceCount, f.ReduceDuration = get("language"), strings.TrimSpace(get("reduce_count")), strings.TrimSpace(get("reduce_duration"))
	switch f.Language {
	case "", "ALL":
	case "ORDER":
		reduce := rs
		if reduce.Count, err = parseWhole(f.ReduceCount, 1, maxReservationTasks); err != nil {
			f.Errors["reduce_count"] = err.Error()
		}
		if reduce.Duration, err = time.ParseDuration(f.ReduceDuration); err != nil || reduce.Duration <= 0 {
			f.Errors["reduce_duration"] = "Give the reduce stage a duration such as 30m."
		}
		d.Language, d.Requests = "ORDER", append(d.Requests, reduce)
	default:
		f.Errors["language"] = "Choose one stage, or map then reduce."
	}
	if strings.TrimSpace(f.Value) != "" {
		if d.Value, err = ledger.ParseMoney(f.Value); err != nil {
			f.Errors["value"] = "Give a positive amount in dollars."
		}
	}
	return d
}

// reservationFieldErrors puts a domain error about a definition beside the form
// field it names (requests[0].deadline is the deadline field).
func reservationFieldErrors(err error, f *templates.ReservationForm) {
	field, msg := fieldOf(err)
	reduce := strings.HasPrefix(field, "requests[1].") // the second stage of map, then reduce
	if _, rest, ok := strings.Cut(field, "]."); ok {
		field = rest
	}
	switch field {
	case "configuration", "overhead":
		field = "cluster"
	case "count", "duration":
		if reduce {
			field = "reduce_" + field
		}
	case "value": // the domain refuses a value that is not positive (fleet.Definition.Validate)
		msg = "Give the most it is worth to you, in dollars."
	case "arrival", "deadline", "language":
	default:
		field, msg = "value", clearhouse.ErrorMessage(err)
	}
	f.Errors[field] = msg
}

func (s *Server) reservationsPage(c *gin.Context) {
	f, pools, err := s.reservationForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if c.Query("again") != "" { // after a reservation: the form as it was sent
		definitionFromForm(c.Query, &f, pools)
		f.Errors = templates.FieldErrors{}
	}
	s.renderReservations(c, http.StatusOK, f, nil)
}

// reserve quotes or makes a reservation from the form (action=quote only quotes).
func (s *Server) reserve(c *gin.Context) {
	u := userOf(c)
	f, pools, err := s.reservationForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	d := definitionFromForm(c.PostForm, &f, pools)
	f.Quoting = c.PostForm("action") == "quote"
	if len(f.Errors) > 0 {
		s.renderReservations(c, http.StatusUnprocessableEntity, f, nil)
		return
	}
	ctx := c.Request.Context()
	if c.PostForm("action") == "quote" {
		s.quoteReservation(c, d, f, http.StatusOK)
		return
	}
	if why := s.quoteProblem(c, d, c.PostForm("quote")); why != "" {
		// Nothing is saved: quote the values now in the form, for the team to check
		// before it presses Reserve again.
		c.Set(ctxPageFlash, &templates.Flash{Kind: "error", Message: "Nothing was saved: " + why})
		s.quoteReservation(c, d, f, http.StatusUnprocessableEntity)
		return
	}
	v, err := s.svc.Reservations.Reserve(ctx, u, d)
	if err != nil {
		s.formFailure(c, err, f)
		return
	}
	if v.Status == fleet.ReservationRejected {
		// The scheduler keeps a refused request (the API lists it as rejected): say so
		// rather than "nothing was saved", and keep the form as it was typed.
		c.Set(ctxPageFlash, &templates.Flash{Kind: "error", Message: fmt.Sprintf(
			"Reservation #%d was refused: %s. It is listed below as rejected; nothing is held or charged. Change the request and quote it again.", v.ID, v.Note)})
		s.renderReservations(c, http.StatusUnprocessableEntity, f, nil)
		return
	}
	what := "free, inside your team's quota"
	if v.Price > 0 {
		what = moneyfmt.Cents(int64(v.Price)) + " held on your budget, charged as its slots pass"
	}
	again := url.Values{"again": {"1"}}
	for k, vs := range c.Request.PostForm {
		if k != "csrf_token" && k != "action" && k != "quote" {
			again[k] = vs
		}
	}
	s.redirectWithFlash(c, "/reservations?"+again.Encode(), "ok", fmt.Sprintf("Reservation #%d accepted: %s. The form keeps its values for a similar one.", v.ID, what))
}

// quoteReservation renders the form with what the scheduler would charge now for
// d, and (when it fits) the quote token Reserve must carry.
func (s *Server) quoteReservation(c *gin.Context, d fleet.Definition, f templates.ReservationForm, status int) {
	q, err := s.svc.Reservations.Quote(c.Request.Context(), userOf(c), d)
	if err != nil {
		s.formFailure(c, err, f)
		return
	}
	qv := &templates.QuoteView{Feasible: q.Feasible, Price: mon(q.Price), Free: q.Feasible && q.Price == 0}
	for i := range q.Starts {
		qv.Runs = append(qv.Runs, fmt.Sprintf("from %s to %s", fmtTime(q.Starts[i]), q.Ends[i].UTC().Format("15:04")))
	}
	if q.Feasible {
		qv.Token = s.quoteToken(c, d, s.now())
		if d.Value > 0 && d.Value < q.Price {
			qv.ValueShort = true
		}
	}
	s.renderReservations(c, status, f, qv)
}

// formFailure shows a domain error on the form, or fails the request when it is
// not about the form.
func (s *Server) formFailure(c *gin.Context, err error, f templates.ReservationForm) {
	switch clearhouse.ErrorCode(err) {
	case clearhouse.EINVALID, clearhouse.EUNPROCESSABLE, clearhouse.ECONFLICT:
		reservationFieldErrors(s.withAvailable(c.Request.Context(), userOf(c).TeamID, err), &f)
		s.renderReservations(c, http.StatusUnprocessableEntity, f, nil)
	default:
		s.fail(c, err)
	}
}

func (s *Server) cancelReservation(c *gin.Context) {
	id, err := reservationID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	// Only a reservation of the viewer's team gets a confirmation page: any other id
	// is not found, as the cancellation itself would answer.
	v, err := s.svc.Reservations.Reservation(c.Request.Context(), id)
	if err == nil && fleet.ActFor(userOf(c), v.TeamID) != nil {
		err = clearhouse.Errorf(clearhouse.ENOTFOUND, "reservation: no reservation %d for your team", id)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	if !s.confirmed(c, "reservations", templates.Confirm{
		Question: fmt.Sprintf("Cancel reservation #%d?", id),
		Lines: []string{"Slots it has already used are charged; the rest of its hold on the team's budget is released.",
			"Its capacity goes back to the pool, and cannot be had back at the same price."},
		Button: fmt.Sprintf("Cancel reservation #%d", id), Back: "/reservations", Keep: "Keep the reservation",
	}) {
		return
	}
	if err := s.svc.Reservations.Cancel(c.Request.Context(), userOf(c), id); err != nil {
		if clearhouse.ErrorCode(err) == clearhouse.ECONFLICT {
			s.redirectWithFlash(c, "/reservations", "error", clearhouse.ErrorMessage(err))
			return
		}
		s.fail(c, err)
		return
	}
	s.redirectWithFlash(c, "/reservations", "ok", fmt.Sprintf("Reservation #%d cancelled: slots it used are charged, the rest of its hold is released.", id))
}

func (s *Server) renderReservations(c *gin.Context, status int, f templates.ReservationForm, q *templates.QuoteView) {
	ctx := c.Request.Context()
	u := userOf(c)
	now := s.now().UTC()
	vs, err := s.svc.Reservations.Reservations(ctx, fleet.ReservationFilter{Team: u.TeamID, From: now.Add(-7 * 24 * time.Hour), Limit: 200})
	if err != nil {
		s.fail(c, err)
		return
	}
	units, err := s.poolUnits(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	v := templates.ReservationsView{Team: u.TeamID, Form: f, Quote: q, SlotNote: s.slotNote()}
	if v.Quotas, err = s.quotaRows(c, u.TeamID, vs, now); err != nil {
		s.fail(c, err)
		return
	}
	for i := len(vs) - 1; i >= 0; i-- {
		v.Rows = append(v.Rows, reservationRow(vs[i], units))
	}
	v.Timelines = timelines(vs, now, units)
	p := s.page(c, "Reservations", "reservations")
	if fl, ok := c.Get(ctxPageFlash); ok {
		p.Flash = fl.(*templates.Flash)
	}
	s.render(c, status, templates.ReservationsPage(p, v))
}

func (s *Server) slotNote() string {
	cfg := s.svc.Reservations.Config()
	return fmt.Sprintf("%s slots, windows ending up to %d days ahead", fmtDuration(cfg.Slot), int(cfg.Horizon.Hours()/24))
}

// quotaRows is the team's quota per pool with what its reservations take now.
func (s *Server) quotaRows(c *gin.Context, team string, vs []fleet.ReservationView, now time.Time) ([]templates.QuotaRow, error) {
	ctx := c.Request.Context()
	hs, err := s.svc.Market.Holdings(ctx, team)
	if err != nil {
		return nil, err
	}
	offered, err := s.svc.Market.OfferedQuota(ctx, team)
	if err != nil {
		return nil, err
	}
	pools, err := s.svc.Market.Pools(ctx)
	if err != nil {
		return nil, err
	}
	unit := map[string]string{}
	for _, p := range pools {
		unit[p.ID] = p.Unit
	}
	running := map[string]int64{}
	for _, v := range vs {
		if v.Status != fleet.ReservationAccepted {
			continue
		}
		for _, q := range v.Requests {
			if q.StartAt != nil && !now.Before(*q.StartAt) && now.Before(q.End()) {
				for p, n := range q.Config() {
					running[p] += n * q.Count
				}
			}
		}
	}
	var out []templates.QuotaRow
	for _, h := range hs {
		out = append(out, templates.QuotaRow{Pool: h.PoolID, Unit: unit[h.PoolID], Held: h.Quantity, Offered: offered[h.PoolID],
			ReservedNow: min(running[h.PoolID], h.Quantity-offered[h.PoolID])})
	}
	return out, nil
}

// configText is "40 × 1 core cpu + 4 GiB ram in us-east": every quantity with its
// pool's unit (units maps pool ids to units; a pool missing from it shows none).
func configText(cfg map[string]int64, count int64, units map[string]string) string {
	var parts []string
	cluster := ""
	for _, p := range slices.Sorted(maps.Keys(cfg)) {
		c, res, _ := strings.Cut(p, "/")
		cluster = c
		parts = append(parts, amountOf(cfg[p], units[p], res))
	}
	return fmt.Sprintf("%s × %s in %s", moneyfmt.Count(count), strings.Join(parts, " + "), cluster)
}

// span is "2026-03-02 09:00 – 11:00 UTC" (the second date only when it differs),
// in the pages' one date format.
func span(from, to time.Time) string {
	from, to = from.UTC(), to.UTC()
	if from.YearDay() == to.YearDay() && from.Year() == to.Year() {
		return from.Format("2006-01-02 15:04") + " – " + to.Format("15:04") + " UTC"
	}
	return from.Format("2006-01-02 15:04") + " – " + to.Format("2006-01-02 15:04") + " UTC"
}

func reservationRow(v fleet.ReservationView, units map[string]string) templates.ReservationRow {
	r := templates.ReservationRow{ID: v.ID, Team: v.TeamID, Phase: v.Phase, Price: mon(v.Price), Charged: mon(v.Captured),
		Released: mon(v.Released), Note: v.Note,
		CanCancel: v.Status == fleet.ReservationAccepted && v.Phase != "done"}
	if v.Value != nil {
		m := mon(*v.Value)
		r.Value = &m
	}
	var cfg, win, planned []string
	for _, q := range v.Requests {
		text := configText(q.Config(), q.Count, units) + " for " + fmtDuration(time.Duration(q.Duration)*time.Second)
		if o := q.OverheadByPool(); len(o) > 0 {
			for _, p := range slices.Sorted(maps.Keys(o)) {
				_, res, _ := strings.Cut(p, "/")
				text += " + " + amountOf(o[p], units[p], res) + " overhead"
			}
		}
		cfg = append(cfg, text)
		win = append(win, span(q.Arrival, q.Deadline))
		if q.StartAt != nil {
			planned = append(planned, span(*q.StartAt, q.End()))
		}
	}
	sep := "; "
	switch v.Language {
	case "ORDER":
		sep = ", then "
	case "ORDER_NO_GAP":
		sep = ", then at once "
	}
	r.Configuration, r.Window, r.Planned = strings.Join(cfg, sep), strings.Join(win, "; "), strings.Join(planned, "; ")
	return r
}

// timelines draws the reservations per pool, from two hours ago to the last end
// (at least six hours ahead).
func timelines(vs []fleet.ReservationView, now time.Time, units map[string]string) []templates.Timeline {
	from, to := now.Add(-2*time.Hour), now.Add(6*time.Hour)
	byPool := map[string][]templates.TimelineRow{}
	for _, v := range vs {
		if v.Status == fleet.ReservationRejected || v.Status == fleet.ReservationNew {
			continue
		}
		for i, q := range v.Requests {
			if !q.Deadline.After(from) { // over before the timeline begins
				continue
			}
			row := templates.TimelineRow{Label: fmt.Sprintf("#%d", v.ID), Phase: v.Phase, Arrival: q.Arrival, Deadline: q.Deadline,
				Title: fmt.Sprintf("#%d request %d: %s, %s", v.ID, i, configText(q.Config(), q.Count, units), v.Phase)}
			if len(v.Requests) > 1 {
				row.Label = fmt.Sprintf("#%d.%d", v.ID, i)
			}
			if q.StartAt != nil {
				row.Start, row.End = *q.StartAt, q.End()
				row.Title += ", planned " + span(row.Start, row.End)
			}
			if q.Deadline.After(to) {
				to = q.Deadline
			}
			for p := range q.Config() {
				byPool[p] = append(byPool[p], row)
			}
		}
	}
	var out []templates.Timeline
	for _, p := range slices.Sorted(maps.Keys(byPool)) {
		out = append(out, templates.Timeline{ID: "timeline-" + p, Title: p, From: from, To: to, Now: now, Rows: byPool[p]})
	}
	return out
}

// ctxPageFlash carries a message for the page a handler renders without a redirect.
const ctxPageFlash = "page_flash"
