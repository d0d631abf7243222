package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/templates"
)

// auditPageSize is how many rows of the trail one page shows.
const auditPageSize = 100

// auditFilter reads the trail's filters from the query: actor, action, object, and
// from/to as UTC days (periodOf, the one reading of a period) when either is given;
// with neither, no time bound. before pages backwards.
func (s *Server) auditFilter(q url.Values) (audit.Filter, error) {
	f := audit.Filter{Actor: q.Get("actor"), Action: q.Get("action"), Object: q.Get("object"), Limit: auditPageSize}
	if q.Get("from") != "" || q.Get("to") != "" {
		from, to, err := s.periodOf(q, statementDays)
		if err != nil {
			return f, err
		}
		f.From, f.To = from, to
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return f, clearhouse.Errorf(clearhouse.EINVALID, "before: a row number")
		}
		f.Before = n
	}
	return f, nil
}

// auditQuery is the query of the filters alone (no page), for the export links and
// the pager.
func auditQuery(q url.Values) url.Values {
	out := url.Values{}
	for _, k := range []string{"actor", "action", "object", "from", "to"} {
		if v := q.Get(k); v != "" {
			out.Set(k, v)
		}
	}
	return out
}

// auditPage lists the audit trail for finance and operators, newest first.
func (s *Server) auditPage(c *gin.Context) {
	q := c.Request.URL.Query()
	keep := auditQuery(q)
	v := templates.AuditView{Actor: q.Get("actor"), Action: q.Get("action"), Object: q.Get("object"), From: q.Get("from"), To: q.Get("to"),
		Actions: audit.Actions, CSV: "/audit.csv?" + keep.Encode(), JSONLines: "/audit.jsonl?" + keep.Encode()}
	status := http.StatusOK
	f, err := s.auditFilter(q)
	if err != nil {
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			s.fail(c, err)
			return
		}
		v.Error, status = clearhouse.ErrorMessage(err), http.StatusUnprocessableEntity
	} else {
		rows, err := s.svc.Market.Trail().List(c.Request.Context(), f)
		if err != nil {
			s.fail(c, err)
			return
		}
		for _, r := range rows {
			v.Rows = append(v.Rows, templates.AuditRow{Seq: r.Seq, At: r.At.UTC().Format("2006-01-02 15:04:05"), Actor: r.Actor,
				Address: r.Address, Action: r.Action, Object: r.Object, Before: r.BeforeJSON, After: r.AfterJSON})
		}
		v.Pager.Shown = fmt.Sprintf("%d changes", len(rows))
		if len(rows) == auditPageSize {
			next := auditQuery(q)
			next.Set("before", strconv.FormatInt(rows[len(rows)-1].Seq, 10))
			v.Pager.Next = "/audit?" + next.Encode()
		}
		if f.Before > 0 {
			v.Pager.First = "/audit?" + keep.Encode()
		}
	}
	s.render(c, status, templates.AuditPage(s.page(c, "Audit trail", "audit"), v))
}

// auditCSV and auditJSONLines export every row the filters select, oldest first.
func (s *Server) auditCSV(c *gin.Context)       { s.auditExport(c, "csv") }
func (s *Server) auditJSONLines(c *gin.Context) { s.auditExport(c, "jsonl") }

func (s *Server) auditExport(c *gin.Context, format string) {
	f, err := s.auditFilter(c.Request.URL.Query())
	if err != nil {
		s.fail(c, err)
		return
	}
	f.Before = 0
	name := "audit-" + s.now().UTC().Format("20060102T150405Z")
	tr := s.svc.Market.Trail()
	if format == "csv" {
		c.Header("Content-Type", "text/csv; charset=utf-8")
		c.Header("Content-Disposition", `attachment; filename="`+name+`.csv"`)
		err = tr.WriteCSV(c.Request.Context(), c.Writer, f)
	} else {
		c.Header("Content-Type", "application/x-ndjson; charset=utf-8")
		c.Header("Content-Disposition", `attachment; filename="`+name+`.jsonl"`)
		err = tr.WriteJSONLines(c.Request.Context(), c.Writer, f)
	}
	if err != nil { // the status is sent: log it, as the journal's export does
		s.log.Error("writing the audit trail", "request_id", requestID(c), "err", clip(err.Error(), maxLoggedError))
	}
}
