package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// The operator's fairness report replays owners' own usage and says how much: ads
// holds 60 of the pool's 100 cores and uses them all for the first hour of search's
// job, so the replay makes search wait, as it did in Clearhouse.
func TestOperatorSeesTheFairnessReportWithOwnersUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.cpuPool()
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Budget: 100 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	if err := f.market.GrantQuota(ctx, "ads", "us-east/cpu", 60); err != nil {
		t.Fatal(err)
	}
	ana := f.user("ana@x.io", identity.RoleMember, "search")
	f.user("op@x.io", identity.RoleOperator, "")
	usage := func(units int64) {
		t.Helper()
		if err := f.be.Report(ctx, "us-east", besteffort.Report{Usage: []besteffort.OwnerUsage{{Team: "ads", Pool: "us-east/cpu", Units: units}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.be.RecordHistory(ctx); err != nil {
			t.Fatal(err)
		}
	}
	usage(60)
	if _, err := f.be.Submit(ctx, ana, besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": 1}, Tasks: 40, MaxTaskDuration: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.be.Step(ctx, "us-east"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	usage(0)
	f.clock.Advance(time.Hour)
	if _, err := f.be.ComputeFairness(ctx); err != nil {
		t.Fatal(err)
	}
	op := f.browser()
	op.login("op@x.io")
	_, doc := op.get("/operate/idle")
	if got := doc.Find("[data-testid=fairness-reading]").Text(); !strings.Contains(got, "own demand") {
		t.Fatalf("the reading guide does not say owners' demand is replayed: %q", got)
	}
	var summary string
	doc.Find("h3").Each(func(_ int, h *goquery.Selection) {
		if h.Text() == "us-east/cpu, last day" {
			summary = h.Next().Text()
		}
	})
	if !strings.Contains(summary, "owners' own demand replayed: 60 unit-hours") {
		t.Fatalf("the day report's summary: %q", summary)
	}
	table := doc.Find("[data-testid=fairness]").First()
	col := -1
	table.Find("thead th").Each(func(i int, th *goquery.Selection) {
		if th.Text() == "fairshare" {
			col = i
		}
	})
	var wait float64
	table.Find("tbody tr").Each(func(_ int, tr *goquery.Selection) {
		if tds := tr.Find("td"); strings.TrimSpace(tds.First().Text()) == "search" && col >= 0 {
			wait, _ = strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(tds.Eq(col).Text()), ",", ""), 64)
		}
	})
	if !(wait > 0) {
		t.Fatalf("search's simulated wait under fairshare: %g (column %d)", wait, col)
	}
}
