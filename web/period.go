package web

import (
	"net/url"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/gin-gonic/gin"
)

// How many days a period covers when the request names no dates: statements and
// the journal the last 30, lost value the last 14.
const (
	statementDays = 30
	lostDays      = 14
)

// period reads ?from=YYYY-MM-DD&to=YYYY-MM-DD (periodOf).
func (s *Server) period(c *gin.Context, days int) (from, to time.Time, err error) {
	return s.periodOf(c.Request.URL.Query(), days)
}

// periodOf is the period that from and to name, as UTC days with to inclusive:
// [from, the day after to). Either defaults to a period of days days ending
// today (UTC). A date that does not parse, or an end before the start, is EINVALID
// naming the date at fault. This is every page's and export's one reading of a
// period; the stores bound the far end themselves (ledger.Latest), so the last
// date a form accepts, 9999-12-31, finds the same rows on SQLite and PostgreSQL.
func (s *Server) periodOf(q url.Values, days int) (from, to time.Time, err error) {
	now := s.now().UTC()
	to = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1)
	from = to.AddDate(0, 0, -days)
	if v := q.Get("from"); v != "" {
		if from, err = time.Parse(time.DateOnly, v); err != nil {
			return from, to, clearhouse.Errorf(clearhouse.EINVALID, "from: give a date as YYYY-MM-DD")
		}
	}
	if v := q.Get("to"); v != "" {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			return from, to, clearhouse.Errorf(clearhouse.EINVALID, "to: give a date as YYYY-MM-DD")
		}
		to = t.AddDate(0, 0, 1)
	}
	if !to.After(from) {
		return from, to, clearhouse.Errorf(clearhouse.EINVALID, "to: the period ends on or after the day it starts; this end date is before the start date")
	}
	return from, to, nil
}
