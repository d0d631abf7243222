package web

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
)

// What the team page lists at most; the CSV download has everything.
const (
	maxStatementLines = 200
	maxHolds          = 100
)

func statementView(st ledger.Statement, csvPath string, forFinance bool) templates.StatementView {
	v := templates.StatementView{From: st.From.Format(time.DateOnly), To: st.To.AddDate(0, 0, -1).Format(time.DateOnly),
		Opening: mon(st.Opening), Closing: mon(st.Closing),
		CSV: fmt.Sprintf("%s?from=%s&to=%s", csvPath, st.From.Format(time.DateOnly), st.To.AddDate(0, 0, -1).Format(time.DateOnly))}
	lines := st.Lines
	if len(lines) > maxStatementLines { // the latest lines; the CSV has every one
		v.Earlier = len(lines) - maxStatementLines
		lines = lines[v.Earlier:]
	}
	for _, l := range lines {
		ref, url, memo := describeEntry(l.Ref, l.Memo, forFinance)
		v.Lines = append(v.Lines, templates.StatementLine{At: fmtTime(l.At), Reason: reasonWords(l.Reason, l.Ref), Ref: ref, RefURL: url, Memo: memo,
			Amount: mon(l.Amount), Running: mon(l.Running)})
	}
	return v
}

// teamView builds a team's budget page.
func (s *Server) teamView(c *gin.Context, team string, csvPath string) (templates.TeamView, bool) {
	ctx := c.Request.Context()
	t, err := s.svc.Market.Team(ctx, team)
	if err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	entered := c.Request.URL.Query()
	from, to, err := s.period(c, statementDays)
	var periodErrors templates.FieldErrors
	if clearhouse.ErrorCode(err) == clearhouse.EINVALID {
		// A period typed wrongly is the form's error: the page shows the default
		// period, with the dates as entered and the one at fault marked.
		periodErrors = formErrors(err, "to")
		from, to, err = s.periodOf(nil, statementDays)
	}
	if err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	l := s.svc.Market.Ledger()
	acct := ledger.TeamAccount(team)
	b, err := l.Balance(ctx, acct)
	if err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	st, err := l.Statement(ctx, acct, from, to)
	if err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	holds, err := l.Holds(ctx, acct, true)
	if err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	hs, err := s.svc.Market.Holdings(ctx, team)
	if err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	offered, err := s.svc.Market.OfferedQuota(ctx, team)
	if err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	pools, err := s.svc.Market.Pools(ctx)
	if err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	unit := map[string]string{}
	for _, p := range pools {
		unit[p.ID] = p.Unit
	}
	v := templates.TeamView{ID: t.ID, Name: t.Name, Posted: mon(b.Posted), Held: mon(b.Held), Available: mon(b.Available),
		ApprovalThreshold: ledger.Money(t.ApprovalThreshold).Plain(), Threshold: mon(ledger.Money(t.ApprovalThreshold)),
		Statement: statementView(st, csvPath, strings.HasPrefix(csvPath, "/finance/"))}
	if periodErrors != nil {
		v.Statement.Errors, v.Statement.From, v.Statement.To = periodErrors, entered.Get("from"), entered.Get("to")
	}
	for _, h := range hs {
		v.Holdings = append(v.Holdings, templates.HoldingRow{Pool: h.PoolID, Unit: unit[h.PoolID], Quantity: h.Quantity, Offered: offered[h.PoolID]})
	}
	if len(holds) > maxHolds { // Holds lists the newest first
		v.MoreHolds = len(holds) - maxHolds
		holds = holds[:maxHolds]
	}
	for _, h := range holds {
		v.Holds = append(v.Holds, templates.HoldRow{Ref: holdRef(h.Ref), Amount: mon(h.Amount), Since: fmtTime(h.CreatedAt)})
	}
	if v.Idle, err = s.idleAccounts(ctx, team); err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	if v.IdleCharts, err = s.idleCharts(ctx, team); err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	if v.Fits, err = s.fitRows(ctx, team); err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	if v.Limits, err = s.teamLimitRows(ctx, team, unit); err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	if v.OverLimit, v.Reclaimed, err = s.overLimitRows(ctx, team, unit); err != nil {
		s.fail(c, err)
		return templates.TeamView{}, false
	}
	return v, true
}

func (s *Server) teamPage(c *gin.Context) {
	u := userOf(c)
	v, ok := s.teamView(c, u.TeamID, "/team/statement.csv")
	if !ok {
		return
	}
	v.CanSetThreshold = u.Role == identity.RoleOwner
	s.render(c, http.StatusOK, templates.TeamPage(s.page(c, "Team "+v.Name, "team"), v))
}

// statementCSV writes an account's statement for the period as CSV.
func (s *Server) statementCSV(c *gin.Context, team string) {
	from, to, err := s.period(c, statementDays)
	if err != nil {
		s.fail(c, err)
		return
	}
	if _, err := s.svc.Market.Team(c.Request.Context(), team); err != nil {
		s.fail(c, err)
		return
	}
	st, err := s.svc.Market.Ledger().Statement(c.Request.Context(), ledger.TeamAccount(team), from, to)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", fmt.Sprintf(`attachment; filename="statement-%s-%s.csv"`, team, from.Format("20060102")))
	for i, l := range st.Lines { // the memos the page shows
		st.Lines[i].Memo = memoWords(l.Ref, l.Memo)
	}
	if err := ledger.WriteStatementCSV(c.Writer, st); err != nil {
		s.log.Error("writing statement", "request_id", requestID(c), "err", clip(err.Error(), maxLoggedError))
	}
}

func (s *Server) teamStatementCSV(c *gin.Context) { s.statementCSV(c, userOf(c).TeamID) }

func (s *Server) setThreshold(c *gin.Context) {
	u := userOf(c)
	m, err := ledger.ParseMoney(c.PostForm("threshold"))
	if err != nil {
		s.redirectWithFlash(c, "/team", "error", "Threshold: "+clearhouse.ErrorMessage(err))
		return
	}
	if err := s.svc.Market.SetApprovalThreshold(c.Request.Context(), u.TeamID, int64(m)); err != nil {
		s.redirectWithFlash(c, "/team", "error", clearhouse.ErrorMessage(err))
		return
	}
	msg := "Approval threshold set to " + moneyfmt.Cents(int64(m)) + "."
	if m == 0 {
		msg = "Approval is off: members' orders no longer wait for an owner."
	}
	s.redirectWithFlash(c, "/team", "ok", msg)
}
