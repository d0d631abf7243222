package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/scheduler"
)

//go:embed simreport.html
var simReportHTML string

var simReportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":     func(x float64) float64 { return 100 * x },
	"dollars": moneyfmt.Dollars,
}).Parse(simReportHTML))

// Chart geometry, in SVG user units.
const (
	chartW, chartH      = 760, 240
	chartLeft, chartTop = 56, 16
	plotW, plotH        = chartW - chartLeft - 16, chartH - chartTop - 36
)

var seriesColors = []string{"#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#57606a"}

type svgLine struct {
	Name, Color, Points string
}

type svgTick struct {
	Pos    float64
	Label  string
	Anchor string // text-anchor: start, middle or end
}

type svgBar struct {
	X, Y, W, H float64
	Color      string
	Title      string
}

type svgChart struct {
	Title, YLabel  string
	W, H           int
	Left, Top      int
	PlotW, PlotH   int
	Lines          []svgLine
	Bars           []svgBar
	XTicks, YTicks []svgTick
	Legend         []svgLine
}

type simReportView struct {
	Title    string
	Result   simResult
	Charts   []svgChart
	BoundPct float64
}

// renderSimReport is the self-contained HTML report of a simulation: no scripts,
// no external files, every chart an inline SVG.
func renderSimReport(res simResult) ([]byte, error) {
	v := simReportView{Title: res.title, Result: res}
	if res.Workload.RequestedValue > 0 {
		v.BoundPct = 100 * res.UpperBoundValue / res.Workload.RequestedValue
	}
	v.Charts = append(v.Charts,
		seriesChart(res, "Utilization over time", "% of capacity", func(s scheduler.SlotStat) float64 {
			return 100 * float64(s.Used) / float64(res.Workload.Capacity)
		}),
		seriesChart(res, "Price over time", "$ per unit-slot", func(s scheduler.SlotStat) float64 { return s.Price }),
		classChart(res),
		valueChart(res))
	var buf bytes.Buffer
	if err := simReportTmpl.Execute(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func newChart(title, ylabel string) svgChart {
	return svgChart{Title: title, YLabel: ylabel, W: chartW, H: chartH, Left: chartLeft, Top: chartTop, PlotW: plotW, PlotH: plotH}
}

// niceMax rounds up to 1, 2 or 5 times a power of ten.
func niceMax(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if x <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func yTicks(top float64, format string) []svgTick {
	var out []svgTick
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		out = append(out, svgTick{Pos: chartTop + plotH - plotH*float64(i)/4, Label: fmt.Sprintf(format, v)})
	}
	return out
}

// seriesChart plots one value per slot for every algorithm, averaged into at most
// 300 points.
func seriesChart(res simResult, title, ylabel string, value func(scheduler.SlotStat) float64) svgChart {
	c := newChart(title, ylabel)
	slots := res.Workload.Slots
	points := min(slots, 300)
	top := 0.0
	avgs := make([][]float64, len(res.outcomes))
	for i, o := range res.outcomes {
		avgs[i] = make([]float64, points)
		for p := range points {
			from, to := p*slots/points, (p+1)*slots/points
			sum := 0.0
			for _, s := range o.Series[from:to] {
				sum += value(s)
			}
			avgs[i][p] = sum / float64(max(to-from, 1))
			top = max(top, avgs[i][p])
		}
	}
	top = niceMax(top)
	for i := range res.outcomes {
		var b strings.Builder
		for p, y := range avgs[i] {
			x := chartLeft + plotW*(float64(p)+0.5)/float64(points)
			fmt.Fprintf(&b, "%.1f,%.1f ", x, chartTop+plotH-plotH*y/top)
		}
		l := svgLine{Name: res.Algorithms[i].Name, Color: seriesColors[i%len(seriesColors)], Points: b.String()}
		c.Lines = append(c.Lines, l)
		c.Legend = append(c.Legend, l)
	}
	c.YTicks = yTicks(top, "%.3g")
	for i := 0; i <= 4; i++ {
		anchor := []string{"start", "middle", "middle", "middle", "end"}[i]
		c.XTicks = append(c.XTicks, svgTick{Pos: chartLeft + plotW*float64(i)/4, Label: fmt.Sprintf("slot %d", slots*i/4), Anchor: anchor})
	}
	return c
}

// classChart shows, per class, the share of its jobs each algorithm accepted.
func classChart(res simResult) svgChart {
	c := newChart("Accepted jobs by class", "% of the class's jobs")
	n := len(res.classes)
	group := plotW / float64(max(n, 1))
	barW := group * 0.8 / float64(max(len(res.Algorithms), 1))
	for k, class := range res.classes {
		c.XTicks = append(c.XTicks, svgTick{Pos: chartLeft + group*(float64(k)+0.5), Label: class, Anchor: "middle"})
		for i, a := range res.Algorithms {
			got := a.Classes[class]
			pct := 0.0
			if got[1] > 0 {
				pct = 100 * float64(got[0]) / float64(got[1])
			}
			h := plotH * pct / 100
			c.Bars = append(c.Bars, svgBar{X: chartLeft + group*float64(k) + group*0.1 + barW*float64(i), Y: chartTop + plotH - h,
				W: barW, H: h, Color: seriesColors[i%len(seriesColors)],
				Title: fmt.Sprintf("%s, %s: %d of %d (%.1f%%)", a.Name, class, got[0], got[1], pct)})
		}
	}
	for i, a := range res.Algorithms {
		c.Legend = append(c.Legend, svgLine{Name: a.Name, Color: seriesColors[i%len(seriesColors)]})
	}
	c.YTicks = yTicks(100, "%.0f%%")
	return c
}

// valueChart sets each algorithm's accepted value against the upper bound and the
// requested value.
func valueChart(res simResult) svgChart {
	c := newChart("Value accepted against the upper bound", "value")
	type bar struct {
		name  string
		value float64
		color string
	}
	bars := []bar{{"requested", res.Workload.RequestedValue, "#afb8c1"}, {"upper bound", res.UpperBoundValue, "#57606a"}}
	for i, a := range res.Algorithms {
		bars = append(bars, bar{a.Name, a.AcceptedValue, seriesColors[i%len(seriesColors)]})
	}
	top := niceMax(res.Workload.RequestedValue)
	slot := plotW / float64(len(bars))
	for k, b := range bars {
		h := plotH * b.value / top
		title := fmt.Sprintf("%s: %s", b.name, moneyfmt.Dollars(b.value))
		if k >= 2 && res.UpperBoundValue > 0 {
			title += fmt.Sprintf(" (%.1f%% of the upper bound)", 100*b.value/res.UpperBoundValue)
		}
		c.Bars = append(c.Bars, svgBar{X: chartLeft + slot*float64(k) + slot*0.2, Y: chartTop + plotH - h, W: slot * 0.6, H: h,
			Color: b.color, Title: title})
		c.XTicks = append(c.XTicks, svgTick{Pos: chartLeft + slot*(float64(k)+0.5), Label: b.name, Anchor: "middle"})
	}
	c.YTicks = yTicks(top, "")
	for i := range c.YTicks {
		c.YTicks[i].Label = shortDollars(top * float64(i) / 4)
	}
	return c
}

// shortDollars writes an axis label: $750, $12k, $2.5M.
func shortDollars(x float64) string {
	switch {
	case x >= 1e6:
		return "$" + strconv.FormatFloat(x/1e6, 'g', 3, 64) + "M"
	case x >= 1e3:
		return "$" + strconv.FormatFloat(x/1e3, 'g', 3, 64) + "k"
	}
	return "$" + strconv.FormatFloat(x, 'g', 3, 64)
}
