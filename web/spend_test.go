package web_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/web"
)

// The spend page shows finance the period's spend across every team: a total, a
// chart of the months, and tables by month, team (teams without spend too),
// cluster and pool whose shown rows add to the shown total (a rounding row where
// cents must differ), and a CSV with the same figures to the micro-dollar. A
// team's member sees its own team only, and a period entered backwards is a
// message, not an error page.
func TestSpendAcrossTeamsByMonthTeamClusterAndPool(t *testing.T) {
	f := newFixture(t)
	f.cpuPool()
	ctx := context.Background()
	for _, id := range []string{"ads", "quiet"} {
		if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: id, Budget: 500 * ledger.Dollar}); err != nil {
			t.Fatal(err)
		}
	}
	l := f.market.Ledger()
	charge := func(key, team, ref string, reason ledger.Reason, amount ledger.Money) {
		t.Helper()
		if _, err := l.Post(ctx, ledger.NewEntry{Key: key, Reason: reason, Ref: ref,
			Postings: []ledger.Posting{{Account: ledger.TeamAccount(team), Amount: -amount}, {Account: ledger.Treasury, Amount: amount}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Half cents: each row shows $0.01, their total $0.01, so a rounding row appears.
	charge("h-search-3", "search", "pool:us-east/cpu", ledger.ReasonHolding, 4*ledger.Dollar+5_000)
	charge("r-search-3", "search", "reservation:404", ledger.ReasonReservation, 6*ledger.Dollar)
	charge("h-ads-3", "ads", "pool:us-east/cpu", ledger.ReasonHolding, 2*ledger.Dollar+5_000)
	f.clock.Set(time.Date(2026, 4, 3, 0, 0, 0, 0, time.UTC))
	charge("h-search-4", "search", "pool:us-east/cpu", ledger.ReasonHolding, 4*ledger.Dollar)

	f.user("fin@x.io", identity.RoleFinance, "")
	f.user("ops@x.io", identity.RoleOperator, "")
	f.user("mia@x.io", identity.RoleMember, "search")
	fin := f.browser()
	fin.login("fin@x.io")
	res, doc := fin.get("/spend?from=2026-03&to=2026-04")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("finance: status %d", res.StatusCode)
	}
	if got := strings.Join(strings.Fields(doc.Find("[data-testid=spend-net-total]").Text()), " "); !strings.Contains(got, "$16.01") {
		t.Errorf("the net total says %q, want $16.01", got)
	}
	if n := doc.Find("[data-testid=spend-chart] rect.bar").Length(); n == 0 {
		t.Error("the chart draws no bars")
	}
	if !strings.Contains(doc.Find("[data-testid=spend-chart]").Text(), "Apr 2026") {
		t.Error("the chart does not name the months")
	}
	labels := func(table string) []string {
		var out []string
		doc.Find("[data-testid=" + table + "] [data-testid=spend-row] th").Each(func(_ int, s *goquery.Selection) {
			out = append(out, strings.TrimSpace(s.Text()))
		})
		return out
	}
	if got := strings.Join(labels("spend-teams"), ","); got != "ads,quiet,search" {
		t.Errorf("teams listed %q, want every team, the one without spend too", got)
	}
	if got := strings.Join(labels("spend-months"), ","); got != "March 2026,April 2026" {
		t.Errorf("months listed %q", got)
	}
	if got := strings.Join(labels("spend-pools"), ","); got != "us-east/cpu,Not for a pool" {
		t.Errorf("pools listed %q: the reservation with no reservation row names no pool", got)
	}
	cents := func(s *goquery.Selection, col string) int64 {
		t.Helper()
		txt := strings.TrimSpace(s.Find("[data-testid=" + col + "]").Text())
		neg := strings.HasPrefix(txt, "-")
		m, err := ledger.ParseMoney(strings.NewReplacer("-", "", "$", "", ",", "").Replace(txt))
		if err != nil {
			t.Fatalf("%s %q: %v", col, txt, err)
		}
		if neg {
			m = -m
		}
		return int64(m)
	}
	rounded := 0
	for _, table := range []string{"spend-months", "spend-teams", "spend-clusters", "spend-pools"} {
		tb := doc.Find("[data-testid=" + table + "]")
		for _, col := range []string{"bought", "sold", "reservations", "best-effort", "holding", "net"} {
			var sum int64
			tb.Find("[data-testid=spend-row], [data-testid=spend-rounding]").Each(func(_ int, r *goquery.Selection) { sum += cents(r, col) })
			if total := cents(tb.Find("[data-testid=spend-total]"), col); sum != total {
				t.Errorf("%s: the %s column's shown rows add to %d, its shown total is %d", table, col, sum, total)
			}
		}
		rounded += tb.Find("[data-testid=spend-rounding]").Length()
	}
	if rounded == 0 {
		t.Error("no table shows a rounding row, though its half cents round up in every row")
	}

	href, _ := doc.Find("[data-testid=spend-csv]").Attr("href")
	res, err := fin.c.Get(f.srv.URL + href)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(res.Body).ReadAll()
	res.Body.Close()
	if err != nil || strings.Join(recs[0], ",") != strings.Join(web.SpendCSVHeader, ",") {
		t.Fatalf("CSV %q, %v", recs, err)
	}
	sums := map[string][6]ledger.Money{}
	var total [6]ledger.Money
	for _, r := range recs[1:] {
		var row [6]ledger.Money
		for i := range row {
			if row[i], err = ledger.ParseMoney(r[5+i]); err != nil {
				t.Fatalf("CSV row %q: %v", r, err)
			}
		}
		if r[0] == "total" {
			total = row
			continue
		}
		s := sums[r[0]]
		for i := range s {
			s[i] += row[i]
		}
		sums[r[0]] = s
	}
	if total[5] != 16*ledger.Dollar+10_000 || total[4] != 10*ledger.Dollar+10_000 {
		t.Fatalf("CSV total %v, want net $16.01, holding $10.01", total)
	}
	for _, b := range []string{"month", "team", "cluster", "pool"} {
		if sums[b] != total {
			t.Errorf("CSV %s lines add to %v, the total line is %v", b, sums[b], total)
		}
	}
	if !csvHas(recs, "total", "") || !csvHas(recs, "team", "quiet") {
		t.Errorf("CSV lacks the team without spend: %q", recs)
	}

	// The FOCUS file of the same period: its BilledCost adds to the net total.
	href, _ = doc.Find("[data-testid=spend-focus]").Attr("href")
	res, err = fin.c.Get(f.srv.URL + href)
	if err != nil {
		t.Fatal(err)
	}
	recs, err = csv.NewReader(res.Body).ReadAll()
	res.Body.Close()
	if err != nil || len(recs) != 5 || recs[0][0] != "BilledCost" {
		t.Fatalf("FOCUS file %q, %v", recs, err)
	}
	var billed ledger.Money
	for _, r := range recs[1:] {
		c, err := ledger.ParseMoney(r[0])
		if err != nil {
			t.Fatal(err)
		}
		billed += c
	}
	if billed != total[5] {
		t.Errorf("FOCUS BilledCost adds to %s, the net total is %s", billed, total[5])
	}

	ops := f.browser()
	ops.login("ops@x.io")
	if res, _ := ops.get("/spend?team=ads"); res.StatusCode != http.StatusOK {
		t.Errorf("an operator asked for a team's spend: status %d", res.StatusCode)
	}
	mia := f.browser()
	mia.login("mia@x.io")
	_, doc = mia.get("/spend?from=2026-03&to=2026-04")
	if got := doc.Find("[data-testid=spend-teams] [data-testid=spend-row]").Length(); got != 1 || !strings.Contains(doc.Find("[data-testid=spend-teams]").Text(), "search") {
		t.Errorf("a member of search sees %d teams: want exactly its own", got)
	}
	if res, _ := mia.get("/spend?team=ads"); res.StatusCode != http.StatusForbidden {
		t.Errorf("a member asked for another team's spend: status %d", res.StatusCode)
	}
	for _, path := range []string{"/spend.csv?team=ads", "/spend/focus.csv?team=ads"} {
		if res, _ := mia.get(path); res.StatusCode != http.StatusForbidden {
			t.Errorf("a member asked for %s: status %d", path, res.StatusCode)
		}
	}
	res, doc = fin.get("/spend?from=2026-04&to=2026-03")
	if res.StatusCode != http.StatusOK || !strings.Contains(doc.Find("[data-testid=spend-error]").Text(), "ends before it starts") {
		t.Errorf("a backwards period: status %d, %q", res.StatusCode, doc.Find("[data-testid=spend-error]").Text())
	}
	if res, _ := fin.get("/spend?team=nobody"); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown team: status %d", res.StatusCode)
	}
}

// csvHas says whether a CSV has a line of breakdown b whose cells include v.
func csvHas(recs [][]string, b, v string) bool {
	for _, r := range recs {
		if r[0] == b && slices.Contains(r, v) {
			return true
		}
	}
	return false
}
