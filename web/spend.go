package web

import (
	"encoding/csv"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/templates"
)

// maxSpendMonths bounds the months one spend page or CSV covers.
const maxSpendMonths = 120

// spendTeam is whose spend the viewer may see: finance and operators any team (""
// for all, or ?team=), a team's members and owners their own team only
// (EFORBIDDEN for another).
func spendTeam(c *gin.Context) (string, error) {
	u, asked := userOf(c), c.Query("team")
	switch u.Role {
	case identity.RoleFinance, identity.RoleOperator:
		return asked, nil
	case identity.RoleMember, identity.RoleOwner:
		if asked != "" && asked != u.TeamID {
			return "", clearhouse.Errorf(clearhouse.EFORBIDDEN, "You may see your own team's spend only.")
		}
		return u.TeamID, nil
	}
	return "", clearhouse.Errorf(clearhouse.EFORBIDDEN, "You may not see teams' spend.")
}

// spendPeriod reads ?from=YYYY-MM&to=YYYY-MM (both months shown), defaulting to the
// last 12 months; a period it cannot show gives a message and the default.
func (s *Server) spendPeriod(q url.Values) (from, to time.Time, msg string) {
	now := s.now().UTC()
	defTo := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	defFrom := defTo.AddDate(0, -11, 0)
	from, to = defFrom, defTo
	var err error
	if v := q.Get("from"); v != "" {
		if from, err = exchange.ParseMonth(v); err != nil {
			return defFrom, defTo, "From month: give a month as YYYY-MM, e.g. 2026-01. Showing the last 12 months."
		}
	}
	if v := q.Get("to"); v != "" {
		if to, err = exchange.ParseMonth(v); err != nil {
			return defFrom, defTo, "To month: give a month as YYYY-MM, e.g. 2026-12. Showing the last 12 months."
		}
	}
	switch n := monthIndex(to) - monthIndex(from) + 1; {
	case n < 1:
		return defFrom, defTo, "To month: the period ends before it starts. Showing the last 12 months."
	case n > maxSpendMonths:
		return defFrom, defTo, "To month: show at most 120 months at a time. Showing the last 12 months."
	}
	return from, to, ""
}

// monthIndex counts months from year 0, for the chart's x axis.
func monthIndex(t time.Time) int { return t.Year()*12 + int(t.Month()) - 1 }

func monthOf(i int) time.Time { return time.Date(i/12, time.Month(i%12+1), 1, 0, 0, 0, 0, time.UTC) }

// spend reads the spend of the viewer's scope over the requested period.
func (s *Server) spend(c *gin.Context) (rows []ledger.MonthSpend, from, to time.Time, msg string, err error) {
	team, err := spendTeam(c)
	if err != nil {
		return nil, from, to, "", err
	}
	from, to, msg = s.spendPeriod(c.Request.URL.Query())
	rows, err = s.svc.Market.Ledger().SpendByMonth(c.Request.Context(), team, from, to.AddDate(0, 1, 0))
	return rows, from, to, msg, err
}

func (s *Server) spendPage(c *gin.Context) {
	rows, from, to, msg, err := s.spend(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	teams, err := s.svc.Market.Teams(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	names := map[string]string{}
	for _, t := range teams {
		names[t.ID] = t.Name
	}
	v := templates.SpendView{From: from.Format("2006-01"), To: to.Format("2006-01"), Error: msg,
		CSV: "/spend.csv?" + url.Values{"from": {from.Format("2006-01")}, "to": {to.Format("2006-01")}, "team": {c.Query("team")}}.Encode()}
	byTeam, totals := map[string]int{}, map[string][]ledger.MonthSpend{}
	for _, r := range rows {
		i, ok := byTeam[r.Team]
		if !ok {
			i = len(v.Teams)
			byTeam[r.Team] = i
			v.Teams = append(v.Teams, templates.TeamSpend{Team: r.Team, Name: teamName(names, r.Team)})
		}
		v.Teams[i].Rows = append(v.Teams[i].Rows, spendRow(monthOfLabel(r.Month), r))
		totals[r.Team] = append(totals[r.Team], r)
	}
	for i, t := range v.Teams {
		var tot ledger.MonthSpend
		for _, r := range totals[t.Team] {
			tot.Add(r)
		}
		v.Teams[i].Total = spendRow("Total", tot)
	}
	v.Chart = spendChart(v.Teams, rows, from, to)
	s.render(c, http.StatusOK, templates.SpendPage(s.page(c, "Spend by month", "finance"), v))
}

func monthOfLabel(m string) string {
	t, err := time.Parse("2006-01", m)
	if err != nil {
		return m
	}
	return t.Format("January 2006")
}

func spendRow(label string, m ledger.MonthSpend) templates.SpendRow {
	return templates.SpendRow{Month: label, Bought: mon(m.Bought), Sold: mon(m.Sold), Reservations: mon(m.Reservations),
		BestEffort: mon(m.BestEffort), Holding: mon(m.Holding), Net: mon(m.Net())}
}

// spendChart draws each team's net spend per month, a month without spend at zero.
func spendChart(teams []templates.TeamSpend, rows []ledger.MonthSpend, from, to time.Time) templates.LineChart {
	net := map[[2]string]float64{}
	for _, r := range rows {
		net[[2]string{r.Team, r.Month}] = r.Net().Dollars()
	}
	ch := templates.LineChart{ID: "spend-chart", Title: "Net spend per month", YLabel: "dollars", YFromZero: true, Legend: true,
		EmptyText: "No spend in these months.",
		FormatX: func(x float64) string {
			if x != math.Trunc(x) {
				return ""
			}
			return monthOf(int(x)).Format("Jan 2006")
		}}
	for _, t := range teams {
		sr := templates.Series{Name: t.Name}
		for i := monthIndex(from); i <= monthIndex(to); i++ {
			sr.Points = append(sr.Points, templates.Point{X: float64(i), Y: net[[2]string{t.Team, monthOf(i).Format("2006-01")}]})
		}
		ch.Series = append(ch.Series, sr)
	}
	return ch
}

// SpendCSVHeader is the stable header of the spend CSV: one line per team and
// month with spend, amounts in dollars with six decimals.
var SpendCSVHeader = []string{"team", "month", "bought", "sold", "reservations", "best_effort", "holding", "net_spend"}

func (s *Server) spendCSV(c *gin.Context) {
	rows, _, _, msg, err := s.spend(c)
	if err == nil && msg != "" {
		err = clearhouse.Errorf(clearhouse.EINVALID, "%s", strings.TrimSuffix(msg, " Showing the last 12 months."))
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="spend.csv"`)
	w := csv.NewWriter(c.Writer)
	_ = w.Write(SpendCSVHeader)
	for _, r := range rows {
		_ = w.Write([]string{clearhouse.CSVText(r.Team), r.Month, r.Bought.CSV(), r.Sold.CSV(), r.Reservations.CSV(),
			r.BestEffort.CSV(), r.Holding.CSV(), r.Net().CSV()})
	}
	w.Flush()
}
