package web

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/costs"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
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

// spendLines reads the charges of the viewer's scope over the requested period,
// attributed to pools (package costs), and the teams the page lists: every team
// for finance and operators (or the one asked for), the viewer's own otherwise.
func (s *Server) spendLines(c *gin.Context) (lines []costs.Line, teams []exchange.Team, from, to time.Time, msg string, err error) {
	team, err := spendTeam(c)
	if err != nil {
		return nil, nil, from, to, "", err
	}
	from, to, msg = s.spendPeriod(c.Request.URL.Query())
	ctx := c.Request.Context()
	all, err := s.svc.Market.Teams(ctx)
	if err != nil {
		return nil, nil, from, to, msg, err
	}
	for _, t := range all {
		if team == "" || t.ID == team {
			teams = append(teams, t)
		}
	}
	if team != "" && len(teams) == 0 {
		return nil, nil, from, to, msg, clearhouse.Errorf(clearhouse.ENOTFOUND, "team: no team %q", team)
	}
	var rs costs.Reservations
	if s.svc.Reservations != nil {
		rs = s.svc.Reservations
	}
	var js costs.Jobs
	if s.svc.BestEffort != nil {
		js = s.svc.BestEffort
	}
	lines, err = costs.NewReader(s.svc.Market, rs, js).Lines(ctx, team, from, to.AddDate(0, 1, 0))
	return lines, teams, from, to, msg, err
}

// spendFigures is the period's spend added up every way the page and the CSV show
// it: by month (every month of the period), by team (every listed team), by
// cluster and by pool (every one, and "" for charges that name no pool).
type spendFigures struct {
	months, teams, clusters, pools     []string
	byMonth, byTeam, byCluster, byPool map[string]*ledger.MonthSpend
	total                              ledger.MonthSpend
}

func addLine(m *ledger.MonthSpend, l costs.Line) {
	m.AddCharge(ledger.TeamCharge{Kind: l.Kind, Amount: l.Amount})
}

func (s *Server) spendFiguresOf(c *gin.Context, lines []costs.Line, teams []exchange.Team, from, to time.Time) (spendFigures, error) {
	f := spendFigures{byMonth: map[string]*ledger.MonthSpend{}, byTeam: map[string]*ledger.MonthSpend{},
		byCluster: map[string]*ledger.MonthSpend{}, byPool: map[string]*ledger.MonthSpend{}}
	for i := monthIndex(from); i <= monthIndex(to); i++ {
		m := monthOf(i).Format("2006-01")
		f.months = append(f.months, m)
		f.byMonth[m] = &ledger.MonthSpend{Month: m}
	}
	for _, t := range teams {
		f.teams = append(f.teams, t.ID)
		f.byTeam[t.ID] = &ledger.MonthSpend{Team: t.ID}
	}
	ctx := c.Request.Context()
	clusters, err := s.svc.Market.Clusters(ctx)
	if err != nil {
		return f, err
	}
	for _, cl := range clusters {
		f.clusters = append(f.clusters, cl.ID)
		f.byCluster[cl.ID] = &ledger.MonthSpend{}
	}
	pools, err := s.svc.Market.Pools(ctx)
	if err != nil {
		return f, err
	}
	for _, p := range pools {
		f.pools = append(f.pools, p.ID)
		f.byPool[p.ID] = &ledger.MonthSpend{}
	}
	for _, l := range lines {
		for _, by := range []struct {
			m    map[string]*ledger.MonthSpend
			key  string
			list *[]string
		}{{f.byMonth, l.PostedAt.Format("2006-01"), &f.months}, {f.byTeam, l.Team, &f.teams},
			{f.byCluster, l.ClusterID, &f.clusters}, {f.byPool, l.PoolID, &f.pools}} {
			if by.m[by.key] == nil {
				by.m[by.key] = &ledger.MonthSpend{}
				*by.list = append(*by.list, by.key) // a removed pool, or none: listed last
			}
			addLine(by.m[by.key], l)
		}
		addLine(&f.total, l)
	}
	return f, nil
}

func (s *Server) spendPage(c *gin.Context) {
	lines, teams, from, to, msg, err := s.spendLines(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	f, err := s.spendFiguresOf(c, lines, teams, from, to)
	if err != nil {
		s.fail(c, err)
		return
	}
	names := map[string]string{}
	for _, t := range teams {
		names[t.ID] = t.Name
	}
	q := url.Values{"from": {from.Format("2006-01")}, "to": {to.Format("2006-01")}, "team": {c.Query("team")}}.Encode()
	v := templates.SpendView{From: from.Format("2006-01"), To: to.Format("2006-01"), Error: msg, Total: spendRow("Total", f.total),
		CSV: "/spend.csv?" + q, FOCUS: "/spend/focus.csv?" + q}
	v.Months = spendTable("spend-months", f.months, f.byMonth, f.total, monthOfLabel)
	v.Teams = spendTable("spend-teams", f.teams, f.byTeam, f.total, func(id string) string { return teamName(names, id) })
	v.Clusters = spendTable("spend-clusters", f.clusters, f.byCluster, f.total, noPool)
	v.Pools = spendTable("spend-pools", f.pools, f.byPool, f.total, noPool)
	v.Chart = spendChart(f)
	s.render(c, http.StatusOK, templates.SpendPage(s.page(c, "Spend", "finance"), v))
}

func noPool(id string) string {
	if id == "" {
		return "Not for a pool"
	}
	return id
}

func monthOfLabel(m string) string {
	t, err := time.Parse("2006-01", m)
	if err != nil {
		return m
	}
	return t.Format("January 2006")
}

func spendRow(label string, m ledger.MonthSpend) templates.SpendRow {
	return templates.SpendRow{Label: label, Bought: mon(m.Bought), Sold: mon(m.Sold), Reservations: mon(m.Reservations),
		BestEffort: mon(m.BestEffort), Holding: mon(m.Holding), Net: mon(m.Net())}
}

// spendTable lists one row per key and the total; where the rows, each rounded
// to the cent as shown, do not add to the total rounded the same way, a rounding
// row says by how much, so what is shown adds up.
func spendTable(id string, keys []string, by map[string]*ledger.MonthSpend, total ledger.MonthSpend, label func(string) string) templates.SpendTable {
	t := templates.SpendTable{ID: id, Total: spendRow("Total", total)}
	var shown [6]int64
	for _, k := range keys {
		r := spendRow(label(k), *by[k])
		t.Rows = append(t.Rows, r)
		for i, m := range r.Columns() {
			shown[i] += moneyfmt.RoundCents(int64(m))
		}
	}
	var diff [6]templates.Money
	off := false
	for i, m := range t.Total.Columns() {
		diff[i] = templates.Money(moneyfmt.RoundCents(int64(m)) - shown[i])
		off = off || diff[i] != 0
	}
	if off {
		t.Rounding = &templates.SpendRow{Label: "Rounding to cents", Bought: diff[0], Sold: diff[1], Reservations: diff[2],
			BestEffort: diff[3], Holding: diff[4], Net: diff[5]}
	}
	return t
}

// spendChart draws net spend per month across the teams shown, a bar per month.
func spendChart(f spendFigures) templates.BarChart {
	ch := templates.BarChart{ID: "spend-chart", Title: "Net spend per month", YLabel: "dollars", FormatY: moneyfmt.Dollars, EmptyText: "No spend in these months."}
	net := templates.BarSeries{Name: "Net spend"}
	held := templates.BarSeries{Name: "Holding charges"}
	for _, m := range f.months {
		t, _ := time.Parse("2006-01", m)
		ch.Groups = append(ch.Groups, t.Format("Jan 2006"))
		net.Values = append(net.Values, f.byMonth[m].Net().Dollars())
		net.Titles = append(net.Titles, "Net spend, "+t.Format("January 2006")+": "+moneyfmt.Cents(int64(f.byMonth[m].Net())))
		held.Values = append(held.Values, f.byMonth[m].Holding.Dollars())
		held.Titles = append(held.Titles, "Holding charges, "+t.Format("January 2006")+": "+moneyfmt.Cents(int64(f.byMonth[m].Holding)))
	}
	ch.Series = []templates.BarSeries{net, held}
	return ch
}

// SpendCSVHeader is the stable header of the spend CSV: the figures the page
// shows, one line per month, team, cluster and pool of the period (each
// breakdown adds up to the total line), amounts in dollars with six decimals.
var SpendCSVHeader = []string{"breakdown", "month", "team", "cluster", "pool", "bought", "sold", "reservations", "best_effort", "holding", "net_spend"}

func (s *Server) spendCSV(c *gin.Context) {
	lines, teams, from, to, msg, err := s.spendLines(c)
	if err == nil && msg != "" {
		err = clearhouse.Errorf(clearhouse.EINVALID, "%s", strings.TrimSuffix(msg, " Showing the last 12 months."))
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	f, err := s.spendFiguresOf(c, lines, teams, from, to)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="spend.csv"`)
	w := csv.NewWriter(c.Writer)
	_ = w.Write(SpendCSVHeader)
	line := func(kind string, cells [4]string, m ledger.MonthSpend) {
		row := []string{kind}
		for _, cell := range cells {
			row = append(row, clearhouse.CSVText(cell))
		}
		_ = w.Write(append(row, m.Bought.CSV(), m.Sold.CSV(), m.Reservations.CSV(), m.BestEffort.CSV(), m.Holding.CSV(), m.Net().CSV()))
	}
	for _, m := range f.months {
		line("month", [4]string{m}, *f.byMonth[m])
	}
	for _, t := range f.teams {
		line("team", [4]string{"", t}, *f.byTeam[t])
	}
	for _, cl := range f.clusters {
		line("cluster", [4]string{"", "", cl}, *f.byCluster[cl])
	}
	for _, p := range f.pools {
		cl, _, _ := strings.Cut(p, "/")
		line("pool", [4]string{"", "", cl, p}, *f.byPool[p])
	}
	line("total", [4]string{}, f.total)
	w.Flush()
}

// spendFOCUS writes the charges of the viewer's scope over the period as FOCUS 1.0
// rows (costs.WriteFOCUS), the file `clearhouse export focus` writes: finance and
// operators every team's, a team's members and owners their own.
func (s *Server) spendFOCUS(c *gin.Context) {
	lines, teams, _, _, msg, err := s.spendLines(c)
	if err == nil && msg != "" {
		err = clearhouse.Errorf(clearhouse.EINVALID, "%s", strings.TrimSuffix(msg, " Showing the last 12 months."))
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	acct := costs.FOCUSAccount{Teams: map[string]string{}, Clusters: map[string]string{}}
	for _, t := range teams {
		acct.Teams[t.ID] = t.Name
	}
	clusters, err := s.svc.Market.Clusters(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	for _, cl := range clusters {
		acct.Clusters[cl.ID] = cl.Name
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="focus.csv"`)
	if err := costs.WriteFOCUS(c.Writer, lines, acct); err != nil {
		s.log.Error("FOCUS export", "err", err)
	}
}
