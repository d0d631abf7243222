package web_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// The spend page shows each team's spend per month with a chart, a totals row and
// a CSV of the same figures: finance sees every team, a team's member its own team
// only, and a period entered backwards is a message, not an error page.
func TestSpendByMonthPerTeam(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.cpuPool()
	ctx := context.Background()
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Budget: 500 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	l := f.market.Ledger()
	charge := func(key, team string, reason ledger.Reason, amount ledger.Money) {
		t.Helper()
		if _, err := l.Post(ctx, ledger.NewEntry{Key: key, Reason: reason, Ref: "pool:us-east/cpu",
			Postings: []ledger.Posting{{Account: ledger.TeamAccount(team), Amount: -amount}, {Account: ledger.Treasury, Amount: amount}}}); err != nil {
			t.Fatal(err)
		}
	}
	charge("h-search-3", "search", ledger.ReasonHolding, 4*ledger.Dollar)
	charge("r-search-3", "search", ledger.ReasonReservation, 6*ledger.Dollar)
	charge("h-ads-3", "ads", ledger.ReasonHolding, 2*ledger.Dollar)
	f.clock.Set(time.Date(2026, 4, 3, 0, 0, 0, 0, time.UTC))
	charge("h-search-4", "search", ledger.ReasonHolding, 4*ledger.Dollar)

	f.user("fin@x.io", identity.RoleFinance, "")
	f.user("mia@x.io", identity.RoleMember, "search")
	fin := f.browser()
	fin.login("fin@x.io")
	res, doc := fin.get("/spend?from=2026-03&to=2026-04")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("finance: status %d", res.StatusCode)
	}
	if doc.Find("[data-testid=spend-chart] path.series").Length() != 2 {
		t.Errorf("the chart does not draw one line per team")
	}
	net := func(sel string) []string {
		var out []string
		doc.Find(sel).Each(func(_ int, s *goquery.Selection) {
			out = append(out, strings.TrimSpace(s.Find("[data-testid=net]").Text()))
		})
		return out
	}
	if got := net("[data-testid=spend-search] [data-testid=spend-month]"); strings.Join(got, " ") != "$10.00 $4.00" {
		t.Errorf("search's months: %q", got)
	}
	if got := net("[data-testid=spend-search] [data-testid=spend-total]"); strings.Join(got, " ") != "$14.00" {
		t.Errorf("search's total: %q", got)
	}
	if doc.Find("[data-testid=spend-ads]").Length() != 1 {
		t.Error("finance does not see ads")
	}
	href, _ := doc.Find("[data-testid=spend-csv]").Attr("href")
	res, err := fin.c.Get(f.srv.URL + href)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(res.Body).ReadAll()
	res.Body.Close()
	if err != nil || len(recs) != 4 || strings.Join(recs[0], ",") != "team,month,bought,sold,reservations,best_effort,holding,net_spend" ||
		strings.Join(recs[1], ",") != "ads,2026-03,0.000000,0.000000,0.000000,0.000000,2.000000,2.000000" {
		t.Fatalf("CSV %q, %v", recs, err)
	}

	mia := f.browser()
	mia.login("mia@x.io")
	_, doc = mia.get("/spend?from=2026-03&to=2026-04")
	if doc.Find("[data-testid=spend-search]").Length() != 1 || doc.Find("[data-testid=spend-ads]").Length() != 0 {
		t.Error("a member of search does not see exactly its own team")
	}
	if res, _ := mia.get("/spend?team=ads"); res.StatusCode != http.StatusForbidden {
		t.Errorf("a member asked for another team's spend: status %d", res.StatusCode)
	}
	if res, _ := mia.get("/spend.csv?team=ads"); res.StatusCode != http.StatusForbidden {
		t.Errorf("a member asked for another team's spend CSV: status %d", res.StatusCode)
	}
	res, doc = fin.get("/spend?from=2026-04&to=2026-03")
	if res.StatusCode != http.StatusOK || !strings.Contains(doc.Find("[data-testid=spend-error]").Text(), "ends before it starts") {
		t.Errorf("a backwards period: status %d, %q", res.StatusCode, doc.Find("[data-testid=spend-error]").Text())
	}
}
