package reports

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/clearhouse/clearhouse/scheduler"
	"github.com/clearhouse/clearhouse/sharing"
	"github.com/clearhouse/clearhouse/templates"
)

func shareFixture() Share {
	return Share{Title: "log.swf: 3 jobs", Scenario: "equal", Seed: 7, Exact: true, Simulations: 12, Ties: "a tie scores nothing",
		Orgs:     []sharing.Org{{Name: "org1", Processors: 40}, {Name: "org2", Processors: 40}},
		Policies: []SharePolicy{{Name: "fairshare", Score: 1, MeanUnfairness: 2.5}, {Name: "round-robin", Score: 0, MeanUnfairness: 3.3}},
		Samples: []ShareSample{
			{Shapley: map[string]float64{"org1": 1, "org2": 2}, Wait: map[string]map[string]float64{"fairshare": {"org1": 1, "org2": 3}, "round-robin": {"org1": 2, "org2": 1}}},
			{Shapley: map[string]float64{"org1": 3, "org2": 0}, Wait: map[string]map[string]float64{"fairshare": {"org1": 2, "org2": 1}, "round-robin": {"org1": 4, "org2": 0}}},
		},
		Unfairness: [][]float64{{2, 3}, {3, 3.5}},
		Pairwise:   [][]float64{{0, 2}, {0, 0}},
	}
}

func simulationFixture() Simulation {
	series := func(used int64, price float64) []scheduler.SlotStat {
		var out []scheduler.SlotStat
		for i := range 10 {
			out = append(out, scheduler.SlotStat{Used: used + int64(i), Price: price * float64(i)})
		}
		return out
	}
	return Simulation{Title: "head.swf", Jobs: 20, Slots: 10, Capacity: 40, RequestedValue: 12345.6, UpperBoundValue: 10000,
		Classes: []string{"small", "large"},
		Algorithms: []SimAlgorithm{
			{Name: "econ", AcceptedJobs: 12, AcceptedValue: 9000.4, Revenue: 1500, ValueShare: 0.73, UpperBoundShare: 0.9, Utilization: 0.5,
				MeanPrice: 0.25, Classes: map[string][2]int{"small": {8, 10}, "large": {4, 10}}, Series: series(10, 0.1)},
			{Name: "greedy", AcceptedJobs: 10, AcceptedValue: 8000, Revenue: 2000, ValueShare: 0.65, UpperBoundShare: 0.8, Utilization: 0.4,
				MeanPrice: 0.5, Classes: map[string][2]int{"small": {5, 10}, "large": {5, 10}}, Series: series(5, 0.2)},
		},
	}
}

func render(t *testing.T, c templ.Component) string {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// checkReportPage asserts a report is one self-contained page whose text holds no
// templ expression that escaped rendering.
func checkReportPage(t *testing.T, page string, charts int) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if n := doc.Find("figure.chart-figure svg.chart").Length(); n != charts {
		t.Errorf("%d charts drawn by the shared components, want %d", n, charts)
	}
	if doc.Find("script, link, img").Length() > 0 || doc.Find("head style").Length() != 1 {
		t.Error("the report is not one file with its stylesheet inlined and nothing external")
	}
	if !strings.Contains(doc.Find("head style").Text(), ".chart .series") {
		t.Error("the inlined stylesheet lacks the charts' rules")
	}
	text := doc.Find("body").Text()
	for _, leak := range []string{"@", "{ ", " }", "templ."} {
		if strings.Contains(text, leak) {
			t.Errorf("the report's text holds %q, a templ expression left unrendered", leak)
		}
	}
	return doc
}

func TestShareReportDrawsTheSharedBarCharts(t *testing.T) {
	s := shareFixture()
	page, err := RenderShare(s)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	doc := checkReportPage(t, html, 2)
	names := []string{"fairshare", "round-robin"}
	for _, ch := range []templates.BarChart{unfairnessChart(s, names), fairWaitChart(s, names)} {
		if !strings.Contains(html, render(t, templates.Bars(ch))) {
			t.Errorf("the report does not hold the shared component's chart %q", ch.Title)
		}
	}
	if got := doc.Find(`[data-testid=share-pairwise] tbody tr`).First().Text(); got != "fairshare-2 of 2" {
		t.Errorf("pairwise row %q", got)
	}
	if got := doc.Find(`[data-testid=share-policies] tbody tr`).Eq(1).Text(); got != "round-robin03.3" {
		t.Errorf("policy row %q", got)
	}
	if n := doc.Find("[data-testid=share-unfairness] rect.bar").Length(); n != 4 {
		t.Errorf("%d bars for 2 samples of 2 policies", n)
	}
	if title := doc.Find("[data-testid=share-fair-wait] rect.bar title").First().Text(); title != "org1, Shapley value: 2.0 task-hours" {
		t.Errorf("first bar's title %q", title)
	}
	if !strings.Contains(doc.Find("p.lead").Text(), "2 organizations (40/40 processors); 2 samples of 24 hours, seed 7; Shapley values exact, 12 simulations.") {
		t.Errorf("lead %q", doc.Find("p.lead").Text())
	}
}

func TestSimulationReportDrawsTheSharedCharts(t *testing.T) {
	s := simulationFixture()
	page, err := RenderSimulation(s)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	doc := checkReportPage(t, html, 4)
	for _, ch := range []templ.Component{templates.Bars(classChart(s)), templates.Bars(valueChart(s))} {
		if !strings.Contains(html, render(t, ch)) {
			t.Error("the report does not hold the shared bar chart")
		}
	}
	if n := doc.Find("path.series").Length(); n != 4 {
		t.Errorf("%d lines, want 2 algorithms in 2 charts", n)
	}
	if got := doc.Find("[data-testid=sim-algorithms] tbody tr").First().Text(); !strings.Contains(got, "$9,000") || !strings.Contains(got, "73.0%") {
		t.Errorf("econ's row %q", got)
	}
	if !strings.Contains(doc.Find("p.lead").Text(), "Requested value $12,346; the offline upper bound (the best fractional allocation) reaches $10,000, 81.0% of it.") {
		t.Errorf("lead %q", doc.Find("p.lead").Text())
	}
	if title := doc.Find("[data-testid=sim-classes] rect.bar title").First().Text(); title != "econ, small: 8 of 10 (80.0%)" {
		t.Errorf("first class bar's title %q", title)
	}
}
