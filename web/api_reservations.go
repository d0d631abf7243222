package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// The reservation API follows the YARN ReservationSystem's REST conventions: ask
// for an id, submit a definition under it (idempotently), update, delete, list,
// and quote without committing.

// definitionOf converts the body to the domain's definition, naming the field of a
// malformed value, duration or time.
func definitionOf(b apiv1.Definition, needValue bool) (fleet.Definition, error) {
	d := fleet.Definition{Team: b.Team, Language: b.Language}
	if len(b.Value) > 0 || needValue {
		raw := string(bytes.TrimSpace(b.Value))
		var str string
		if json.Unmarshal(b.Value, &str) == nil {
			raw = str
		}
		v, err := ledger.ParseMoney(raw)
		if err != nil { // a value not positive is the domain's to refuse (fleet.Definition.Validate)
			return d, clearhouse.Errorf(clearhouse.EINVALID, "value: must be a positive amount of dollars, e.g. \"12.50\"")
		}
		d.Value = v
	}
	for i, r := range b.Requests {
		rs := fleet.RequestSpec{Configuration: r.Configuration, Count: r.Count, Overhead: r.Overhead}
		var err error
		if rs.Duration, err = time.ParseDuration(r.Duration); err != nil {
			return d, clearhouse.Errorf(clearhouse.EINVALID, "requests[%d].duration: %q is not a duration such as \"30m\" or \"5h\"", i, r.Duration)
		}
		if rs.Arrival, err = time.Parse(time.RFC3339, r.Arrival); err != nil {
			return d, clearhouse.Errorf(clearhouse.EINVALID, "requests[%d].arrival: %q is not an RFC 3339 time", i, r.Arrival)
		}
		if rs.Deadline, err = time.Parse(time.RFC3339, r.Deadline); err != nil {
			return d, clearhouse.Errorf(clearhouse.EINVALID, "requests[%d].deadline: %q is not an RFC 3339 time", i, r.Deadline)
		}
		d.Requests = append(d.Requests, rs)
	}
	return d, nil
}

func toAPIReservation(v fleet.ReservationView) apiv1.Reservation {
	out := apiv1.Reservation{ID: v.ID, Team: v.TeamID, Status: string(v.Status), Phase: v.Phase, Price: v.Price.Plain(),
		Charged: v.Captured.Plain(), Released: v.Released.Plain(), Note: v.Note, Language: v.Language, Requests: []apiv1.RequestOutput{}, CreatedAt: v.CreatedAt}
	if v.ClusterID != nil {
		out.Cluster = *v.ClusterID
	}
	if v.Value != nil {
		out.Value = v.Value.Plain()
	}
	for _, q := range v.Requests {
		r := apiv1.RequestOutput{Configuration: q.Config(), Count: q.Count, Duration: (time.Duration(q.Duration) * time.Second).String(),
			Arrival: q.Arrival, Deadline: q.Deadline, Start: q.StartAt, Ended: q.EndedAt, Charge: q.Charge.Plain(),
			Usage: q.UsageByPool(), WaitingTasks: q.WaitingTasks, Overhead: q.OverheadByPool()}
		if q.StartAt != nil {
			end := q.End()
			r.End = &end
		}
		out.Requests = append(out.Requests, r)
	}
	return out
}

func reservationID(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, clearhouse.Errorf(clearhouse.ENOTFOUND, "No such reservation.")
	}
	return id, nil
}

func (s *Server) apiNewReservation(c *gin.Context) {
	id, err := s.svc.Reservations.NewReservation(c.Request.Context(), userOf(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, apiv1.NewReservationID{ID: id})
}

// answerSubmitted answers a submission: 201 with the reservation when accepted,
// 422 saying why when it was rejected.
func (s *Server) answerSubmitted(c *gin.Context, v fleet.ReservationView, status int) {
	if v.Status == fleet.ReservationRejected {
		s.fail(c, clearhouse.Errorf(clearhouse.EUNPROCESSABLE, "Reservation %d was rejected: %s.", v.ID, v.Note))
		return
	}
	c.Header("Location", fmt.Sprintf("/api/v1/reservations/%d", v.ID))
	c.JSON(status, toAPIReservation(v))
}

func (s *Server) apiSubmitReservation(c *gin.Context) {
	var body apiv1.Definition
	if err := decodeJSON(c, &body); err != nil {
		s.fail(c, err)
		return
	}
	if body.ID <= 0 {
		s.fail(c, clearhouse.Errorf(clearhouse.EINVALID, "id: required; ask POST /api/v1/reservations/new for one"))
		return
	}
	d, err := definitionOf(body, true)
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.svc.Reservations.Submit(c.Request.Context(), userOf(c), body.ID, d)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.answerSubmitted(c, v, http.StatusCreated)
}

func (s *Server) apiUpdateReservation(c *gin.Context) {
	id, err := reservationID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var body apiv1.Definition
	if err := decodeJSON(c, &body); err != nil {
		s.fail(c, err)
		return
	}
	if body.ID != 0 && body.ID != id {
		s.fail(c, clearhouse.Errorf(clearhouse.EINVALID, "id: %d does not match the reservation in the path (%d)", body.ID, id))
		return
	}
	d, err := definitionOf(body, true)
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.svc.Reservations.Update(c.Request.Context(), userOf(c), id, d)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.answerSubmitted(c, v, http.StatusOK)
}

func (s *Server) apiDeleteReservation(c *gin.Context) {
	id, err := reservationID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.svc.Reservations.Cancel(c.Request.Context(), userOf(c), id); err != nil {
		s.fail(c, err)
		return
	}
	s.apiReservation(c)
}

// visibleTeam is the team whose reservations u may read: their own for team
// members (asking for another is EFORBIDDEN), any for finance and operators.
func visibleTeam(u identity.User, asked string) (string, error) {
	if !u.Role.OnTeam() {
		return asked, nil
	}
	if asked != "" && asked != u.TeamID {
		return "", clearhouse.Errorf(clearhouse.EFORBIDDEN, "team: you can see only team %s's reservations", u.TeamID)
	}
	return u.TeamID, nil
}

func (s *Server) apiReservations(c *gin.Context) {
	team, err := visibleTeam(userOf(c), c.Query("team"))
	if err != nil {
		s.fail(c, err)
		return
	}
	f := fleet.ReservationFilter{Team: team}
	for name, dst := range map[string]*time.Time{"from": &f.From, "to": &f.To} {
		if raw := c.Query(name); raw != "" {
			t, err := time.Parse(time.RFC3339, raw)
			if err != nil {
				s.fail(c, clearhouse.Errorf(clearhouse.EINVALID, "%s: %q is not an RFC 3339 time", name, raw))
				return
			}
			*dst = t
		}
	}
	pg, err := parsePage(c, 100, 1000)
	if err != nil {
		s.fail(c, err)
		return
	}
	f.Limit, f.Before = pg.Limit, pg.Before
	want := f.Limit
	f.Limit++ // one more tells whether there is a next page
	vs, err := s.svc.Reservations.Reservations(c.Request.Context(), f)
	if err != nil {
		s.fail(c, err)
		return
	}
	var body apiv1.ReservationList
	if len(vs) > want { // the oldest is the extra one
		vs = vs[1:]
		q := c.Request.URL.Query()
		q.Set("before", strconv.FormatInt(vs[0].ID, 10))
		body.Next = c.Request.URL.Path + "?" + q.Encode()
	}
	out := []apiv1.Reservation{}
	for _, v := range vs {
		out = append(out, toAPIReservation(v))
	}
	body.Reservations = out
	c.JSON(http.StatusOK, body)
}

func (s *Server) apiReservation(c *gin.Context) {
	id, err := reservationID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.svc.Reservations.Reservation(c.Request.Context(), id)
	if err == nil {
		if _, err = visibleTeam(userOf(c), v.TeamID); err != nil {
			err = clearhouse.Errorf(clearhouse.ENOTFOUND, "No such reservation.")
		}
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toAPIReservation(v))
}

func (s *Server) apiQuoteReservation(c *gin.Context) {
	var body apiv1.Definition
	if err := decodeJSON(c, &body); err != nil {
		s.fail(c, err)
		return
	}
	d, err := definitionOf(body, false)
	if err != nil {
		s.fail(c, err)
		return
	}
	q, err := s.svc.Reservations.Quote(c.Request.Context(), userOf(c), d)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := apiv1.Quote{Feasible: q.Feasible, Requests: []apiv1.QuotedSlot{}}
	if q.Feasible && d.Language == "ANY" {
		out.Chosen = &q.Chosen
	}
	if q.Feasible {
		out.Price = q.Price.Plain()
		for i := range q.Starts {
			out.Requests = append(out.Requests, apiv1.QuotedSlot{Start: q.Starts[i], End: q.Ends[i]})
		}
	}
	c.JSON(http.StatusOK, out)
}
