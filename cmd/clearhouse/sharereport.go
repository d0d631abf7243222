package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

//go:embed sharereport.html
var shareReportHTML string

var shareReportTmpl = template.Must(template.New("share").Parse(shareReportHTML))

type pairwiseRow struct {
	Name  string
	Cells []string
}

type shareReportView struct {
	Title, Scenario, How, Procs string
	Ties                        string
	Seed                        uint64
	Orgs                        []string
	Names                       []string
	Result                      shareReportResult
	Pairwise                    []pairwiseRow
	Charts                      []svgChart
}

type shareReportResult struct {
	Policies []sharePolicy
	Samples  []shareSample
	Sims     int
}

// renderShareReport is the self-contained HTML report of `share simulate`: no
// scripts, no external files, every chart an inline SVG.
func renderShareReport(r shareResult, o shareOptions) ([]byte, error) {
	v := shareReportView{Title: r.title, Scenario: o.scenario, How: "exact", Seed: o.seed, Names: r.names, Ties: tieWords(r.tiesHalf),
		Result: shareReportResult{Policies: r.Policies, Samples: r.Samples, Sims: r.sims}}
	if !r.exact {
		v.How = "sampled"
	}
	var procs []string
	for _, org := range r.orgs {
		v.Orgs = append(v.Orgs, org.Name)
		procs = append(procs, strconv.FormatInt(org.Processors, 10))
	}
	v.Procs = strings.Join(procs, "/")
	for a, name := range r.names {
		row := pairwiseRow{Name: name}
		for b := range r.names {
			cell := "-"
			if a != b {
				cell = fmt.Sprintf("%g of %d", r.pairwise[a][b], len(r.Samples))
			}
			row.Cells = append(row.Cells, cell)
		}
		v.Pairwise = append(v.Pairwise, row)
	}
	v.Charts = []svgChart{unfairnessChart(r), fairWaitChart(r)}
	var buf bytes.Buffer
	if err := shareReportTmpl.Execute(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// groupedBars lays out groups of bars (values[group][bar]) on a scale from the
// smallest value (or zero) to the largest, with a line at zero.
func groupedBars(c *svgChart, groups []string, values [][]float64, names []string, colors []string, title func(g, b int) string) {
	lo, hi := 0.0, 0.0
	for _, g := range values {
		for _, x := range g {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	hi = niceMax(hi)
	if lo < 0 {
		lo = -niceMax(-lo)
	}
	y := func(x float64) float64 { return chartTop + plotH*(hi-x)/(hi-lo) }
	group := plotW / float64(max(len(groups), 1))
	barW := group * 0.8 / float64(max(len(names), 1))
	for g, label := range groups {
		c.XTicks = append(c.XTicks, svgTick{Pos: chartLeft + group*(float64(g)+0.5), Label: label, Anchor: "middle"})
		for b, x := range values[g] {
			top, bottom := y(max(x, 0)), y(min(x, 0))
			c.Bars = append(c.Bars, svgBar{X: chartLeft + group*float64(g) + group*0.1 + barW*float64(b), Y: top, W: barW,
				H: bottom - top, Color: colors[b%len(colors)], Title: title(g, b)})
		}
	}
	for i := 0; i <= 4; i++ {
		x := lo + (hi-lo)*float64(i)/4
		c.YTicks = append(c.YTicks, svgTick{Pos: y(x), Label: tickLabel(x)})
	}
	if lo < 0 {
		c.YTicks = append(c.YTicks, svgTick{Pos: y(0), Label: "0"})
	}
	for b, name := range names {
		c.Legend = append(c.Legend, svgLine{Name: name, Color: colors[b%len(colors)]})
	}
}

// unfairnessChart: each sample's unfairness under each policy.
func unfairnessChart(r shareResult) svgChart {
	c := newChart("Unfairness per sample and policy", "task-hours")
	var groups []string
	for s := range r.unfair {
		groups = append(groups, strconv.Itoa(s+1))
	}
	groupedBars(&c, groups, r.unfair, r.names, seriesColors, func(g, b int) string {
		return fmt.Sprintf("sample %d, %s: %.1f task-hours", g+1, r.names[b], r.unfair[g][b])
	})
	return c
}

// fairWaitChart: per organization, the mean Shapley value and each policy's mean wait.
func fairWaitChart(r shareResult) svgChart {
	c := newChart("Wait per organization against its Shapley value (mean over samples)", "task-hours")
	names := append([]string{"Shapley value"}, r.names...)
	colors := append([]string{"#57606a"}, seriesColors...)
	var groups []string
	values := make([][]float64, len(r.orgs))
	n := float64(len(r.Samples))
	for i, org := range r.orgs {
		groups = append(groups, org.Name)
		values[i] = make([]float64, len(names))
		for _, s := range r.Samples {
			values[i][0] += s.Shapley[org.Name] / n
			for p, name := range r.names {
				values[i][p+1] += s.Wait[name][org.Name] / n
			}
		}
	}
	groupedBars(&c, groups, values, names, colors, func(g, b int) string {
		return fmt.Sprintf("%s, %s: %.1f task-hours", groups[g], names[b], values[g][b])
	})
	return c
}

// tickLabel writes an axis value: whole numbers in full, small ones to 3 digits.
func tickLabel(x float64) string {
	if math.Abs(x) >= 10 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}
