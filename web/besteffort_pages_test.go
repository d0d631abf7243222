package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/identity"
)

// A member queues a best-effort job from the form (bad input keeps the form and
// saves nothing), sees it running after the agent's poll, and cancels it; the team
// page shows what the team borrows; an operator switches the pool to the abacus
// policy, after which the form asks for a budget and quotes shares.
func TestBestEffortPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	f.user("ana@x.io", identity.RoleMember, "search")
	f.user("op@x.io", identity.RoleOperator, "")
	b := f.browser()
	b.login("ana@x.io")
	tok := b.csrf("/best-effort")
	res, doc := b.post("/best-effort", url.Values{"csrf_token": {tok}, "cluster": {"us-east"}, "u.cpu": {"2"}, "tasks": {"0"}})
	if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("[data-testid=error-tasks]").Text() == "" {
		t.Fatalf("zero tasks: %d %q", res.StatusCode, doc.Find("[data-testid=form-errors]").Text())
	}
	if n, _ := f.be.Jobs(ctx, besteffort.JobFilter{}); len(n) != 0 {
		t.Fatalf("a refused form saved %d jobs", len(n))
	}
	res, _ = b.post("/best-effort", url.Values{"csrf_token": {tok}, "cluster": {"us-east"}, "u.cpu": {"2"}, "tasks": {"40"}, "max_task_duration": {"2h"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("submit: %d", res.StatusCode)
	}
	if _, err := f.be.Step(ctx, "us-east"); err != nil {
		t.Fatal(err)
	}
	_, doc = b.get("/best-effort")
	row := doc.Find("[data-testid=best-effort-jobs] tbody tr").First()
	if row.Find("[data-testid=status]").Text() != "running" || row.Find("[data-testid=running]").Text() != "35" || row.Find("[data-testid=position]").Text() != "next" {
		t.Fatalf("job row: %q", strings.Join(strings.Fields(row.Text()), " "))
	}
	if got := doc.Find(`[data-testid="idle-us-east/cpu"] [data-testid=borrowed]`).Text(); got != "70 cores" {
		t.Fatalf("borrowed on the best-effort page: %q", got)
	}
	_, doc = b.get("/team")
	if got := doc.Find(`[data-testid="idle-us-east/cpu"] [data-testid=borrowed]`).Text(); got != "70 cores" {
		t.Fatalf("borrowed on the team page: %q", got)
	}
	action, _ := row.Find("form").Attr("action")
	// The first click only asks: the job still runs.
	if res, doc = b.post(action, url.Values{"csrf_token": {tok}}); res.StatusCode != http.StatusOK || !strings.Contains(doc.Text(), "Keep the job") {
		t.Fatalf("cancel without confirmation: %d %q", res.StatusCode, strings.Join(strings.Fields(doc.Find("main").Text()), " "))
	}
	if _, doc = b.get("/best-effort"); doc.Find("[data-testid=best-effort-jobs] [data-testid=status]").First().Text() != "running" {
		t.Fatal("asking to cancel stopped the job")
	}
	if res, _ = b.post(action, url.Values{"csrf_token": {tok}, "confirm": {"yes"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: %d", res.StatusCode)
	}
	_, doc = b.get("/best-effort")
	if got := doc.Find("[data-testid=best-effort-jobs] [data-testid=status]").First().Text(); got != "cancelled" {
		t.Fatalf("after cancel: %q", got)
	}

	op := f.browser()
	op.login("op@x.io")
	otok := op.csrf("/operate/idle")
	res, doc = op.post("/operate/idle/us-east/cpu", url.Values{"csrf_token": {otok}, "policy": {"abacus"}, "alpha": {"2"}, "min_runtime": {"10m"}, "exposure": {"0.3"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(doc.Find("[data-testid=error]").Text(), "alpha") {
		t.Fatalf("alpha 2: %d %q", res.StatusCode, doc.Find("[data-testid=error]").Text())
	}
	res, _ = op.post("/operate/idle/us-east/cpu", url.Values{"csrf_token": {otok}, "policy": {"abacus"}, "alpha": {"0.5"}, "min_runtime": {"5m"}, "exposure": {"0.2"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("save: %d", res.StatusCode)
	}
	_, doc = b.get("/best-effort")
	if doc.Find("[data-testid=abacus-help]").Length() != 1 {
		t.Fatal("the form does not ask for a budget under the abacus policy")
	}
	// A budget the form cannot read is the form's to name; one of zero or less the
	// service refuses (for a quote as for a job), and its reason shows beside the field.
	for budget, want := range map[string]string{"": "Give a budget in dollars", "twenty": "Give a budget in dollars", "0": "needs a budget above zero", "-5": "must not be negative"} {
		for _, action := range []string{"quote", ""} {
			res, doc = b.post("/best-effort", url.Values{"csrf_token": {tok}, "cluster": {"us-east"}, "u.cpu": {"1"}, "tasks": {"5"}, "budget": {budget}, "action": {action}})
			if got := doc.Find("[data-testid=error-budget]").Text(); res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(got, want) {
				t.Fatalf("budget %q, action %q: %d %q, want %q beside the budget", budget, action, res.StatusCode, got, want)
			}
		}
	}
	if n, _ := f.be.Jobs(ctx, besteffort.JobFilter{}); len(n) != 1 {
		t.Fatalf("refused budgets saved jobs: %d in all, want the cancelled one", len(n))
	}
	res, doc = b.post("/best-effort", url.Values{"csrf_token": {tok}, "cluster": {"us-east"}, "u.cpu": {"1"}, "tasks": {"5"}, "budget": {"20"}, "utility": {"log"}, "w.cpu": {"-1"}, "action": {"quote"}})
	if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("[data-testid=error-w\\.cpu]").Length() != 1 {
		t.Fatalf("a negative weight: %d", res.StatusCode)
	}
	res, doc = b.post("/best-effort", url.Values{"csrf_token": {tok}, "cluster": {"us-east"}, "u.cpu": {"1"}, "tasks": {"5"}, "budget": {"20"}, "utility": {"log"}, "w.cpu": {"2"}, "action": {"quote"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(doc.Find("[data-testid=quote]").Text(), "us-east/cpu: 100%") {
		t.Fatalf("quote: %d %q", res.StatusCode, doc.Find("[data-testid=quote]").Text())
	}
	_, doc = op.get("/operate/idle")
	if got, _ := doc.Find(`[data-testid="idle-pool-us-east/cpu"] [data-testid=field-policy] option[selected]`).Attr("value"); got != "abacus" {
		t.Fatalf("the operator page shows policy %q", got)
	}
}

// The team page draws the history the scheduled job records: per pool, a chart of
// contribution and utility, and one of priority, each series named in a legend.
func TestTeamPageChartsIdleHistory(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	ana := f.user("ana@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("ana@x.io")
	_, doc := b.get("/team")
	if doc.Find("[data-testid=idle-history]").Length() != 0 {
		t.Fatal("a history chart with no history")
	}
	if _, err := f.be.Submit(ctx, ana, besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": 2}, Tasks: 10}); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := f.be.Step(ctx, "us-east"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.be.RecordHistory(ctx); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(besteffort.HistoryInterval)
	}
	_, doc = b.get("/team")
	ch := doc.Find(`[data-testid="idle-history-us-east/cpu"]`)
	if ch.Find("path.series").Length() != 2 || ch.Find("[data-testid=chart-legend] li").Length() != 2 {
		t.Fatalf("contribution chart: %d series, legend %q", ch.Find("path.series").Length(), ch.Find("[data-testid=chart-legend]").Text())
	}
	legend := strings.Fields(ch.Find("[data-testid=chart-legend]").Text())
	if strings.Join(legend, " ") != "contribution utility" {
		t.Fatalf("legend: %q", legend)
	}
	d, _ := ch.Find("path.series").Eq(1).Attr("d")
	if strings.Count(d, "L") != 3 {
		t.Fatalf("utility series has not 4 points: %q", d)
	}
	units := doc.Find(`[data-testid="idle-units-us-east/cpu"]`)
	if got := strings.Join(strings.Fields(units.Find("[data-testid=chart-legend]").Text()), " "); got != "lent borrowed" || units.Find("path.series").Length() != 2 {
		t.Fatalf("lent and borrowed chart: %d series, legend %q", units.Find("path.series").Length(), got)
	}
	prio := doc.Find("[data-testid=idle-priority]")
	if prio.Find("path.series").Length() != 1 || strings.TrimSpace(prio.Find("[data-testid=chart-legend]").Text()) != "us-east/cpu" {
		t.Fatalf("priority chart: %d series, legend %q", prio.Find("path.series").Length(), prio.Find("[data-testid=chart-legend]").Text())
	}
	// The y axes say their units: direct-orig, the default, in unit-hours × hours and h².
	if got := ch.Find("svg > text.label").Last().Text(); got != "unit-hours × hours" {
		t.Fatalf("the contribution chart's y unit %q", got)
	}
	if got := units.Find("svg > text.label").Last().Text(); got != "core" {
		t.Fatalf("the lent and borrowed chart's y unit %q", got)
	}
	if got := prio.Find("svg > text.label").Last().Text(); got != "h²" {
		t.Fatalf("the priority chart's y unit %q", got)
	}
}
