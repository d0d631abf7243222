package reports

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/scheduler"
	"github.com/clearhouse/clearhouse/templates"
)

// Simulation is what the report of `clearhouse simulate` shows.
type Simulation struct {
	Title           string
	Jobs, Slots     int
	Capacity        int64
	RequestedValue  float64 // dollars, as every value here
	UpperBoundValue float64 // the offline upper bound: the best fractional allocation
	Algorithms      []SimAlgorithm
	Classes         []string // the job classes (or teams) the acceptance chart shows
}

// SimAlgorithm is one algorithm's run.
type SimAlgorithm struct {
	Name                        string
	AcceptedJobs                int
	AcceptedValue, Revenue      float64
	ValueShare, UpperBoundShare float64           // of the requested value and of the upper bound, 0 to 1
	Utilization                 float64           // 0 to 1
	MeanPrice                   float64           // dollars per unit-slot
	Classes                     map[string][2]int // per class: accepted and submitted jobs
	Series                      []scheduler.SlotStat
}

type simView struct {
	Simulation
	BoundPct float64
	Lines    []templates.LineChart
	Bars     []templates.BarChart
}

// RenderSimulation is the self-contained HTML report of a simulation: no scripts,
// no external files, every chart an inline SVG drawn by the pages' chart components.
func RenderSimulation(s Simulation) ([]byte, error) {
	v := simView{Simulation: s}
	if s.RequestedValue > 0 {
		v.BoundPct = 100 * s.UpperBoundValue / s.RequestedValue
	}
	v.Lines = []templates.LineChart{
		seriesChart(s, "sim-utilization", "Utilization over time", "% of capacity", func(st scheduler.SlotStat) float64 {
			return 100 * float64(st.Used) / float64(s.Capacity)
		}),
		seriesChart(s, "sim-price", "Price over time", "$ per unit-slot", func(st scheduler.SlotStat) float64 { return st.Price }),
	}
	v.Bars = []templates.BarChart{classChart(s), valueChart(s)}
	var buf bytes.Buffer
	if err := simReport(v).Render(context.Background(), &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// lead is the sentence under the title: the workload and its upper bound.
func (v simView) lead() string {
	return fmt.Sprintf("%s: %d jobs over %d slots on %d units. Requested value $%s; the offline upper bound (the best fractional allocation) reaches $%s, %.1f%% of it.",
		v.Title, v.Jobs, v.Slots, v.Capacity, wholeDollars(v.RequestedValue), wholeDollars(v.UpperBoundValue), v.BoundPct)
}

// seriesChart plots one value per slot for every algorithm, averaged into at most
// 300 points.
func seriesChart(s Simulation, id, title, ylabel string, value func(scheduler.SlotStat) float64) templates.LineChart {
	c := templates.LineChart{ID: id, Title: title, YLabel: ylabel, XLabel: "slot", YFromZero: true, Width: 720, Height: 280}
	points := min(s.Slots, 300)
	for _, a := range s.Algorithms {
		line := templates.Series{Name: a.Name}
		for p := range points {
			from, to := p*s.Slots/points, (p+1)*s.Slots/points
			sum := 0.0
			for _, st := range a.Series[from:to] {
				sum += value(st)
			}
			x := float64(s.Slots) * (float64(p) + 0.5) / float64(points)
			line.Points = append(line.Points, templates.Point{X: x, Y: sum / float64(max(to-from, 1))})
		}
		c.Series = append(c.Series, line)
	}
	return c
}

// classChart shows, per class, the share of its jobs each algorithm accepted.
func classChart(s Simulation) templates.BarChart {
	c := templates.BarChart{ID: "sim-classes", Title: "Accepted jobs by class", YLabel: "% of the class's jobs", Groups: s.Classes, YMax: 100,
		FormatY: func(v float64) string { return fmt.Sprintf("%.0f%%", v) }}
	for i, a := range s.Algorithms {
		bs := templates.BarSeries{Name: a.Name, Color: templates.SeriesColor(i)}
		for _, class := range s.Classes {
			got := a.Classes[class]
			pct := 0.0
			if got[1] > 0 {
				pct = 100 * float64(got[0]) / float64(got[1])
			}
			addBar(&bs, pct, fmt.Sprintf("%s, %s: %d of %d (%.1f%%)", a.Name, class, got[0], got[1], pct))
		}
		c.Series = append(c.Series, bs)
	}
	return c
}

// valueChart sets each algorithm's accepted value against the upper bound and the
// requested value.
func valueChart(s Simulation) templates.BarChart {
	c := templates.BarChart{ID: "sim-value", Title: "Value accepted against the upper bound", YLabel: "value", FormatY: shortDollars,
		Groups: []string{"requested", "upper bound"}}
	bs := templates.BarSeries{Name: "value", Colors: []string{"#c9ced8", templates.NeutralColor}}
	addBar(&bs, s.RequestedValue, "requested: $"+wholeDollars(s.RequestedValue))
	addBar(&bs, s.UpperBoundValue, "upper bound: $"+wholeDollars(s.UpperBoundValue))
	for i, a := range s.Algorithms {
		title := fmt.Sprintf("%s: $%s", a.Name, wholeDollars(a.AcceptedValue))
		if s.UpperBoundValue > 0 {
			title += fmt.Sprintf(" (%.1f%% of the upper bound)", 100*a.AcceptedValue/s.UpperBoundValue)
		}
		c.Groups = append(c.Groups, a.Name)
		bs.Colors = append(bs.Colors, templates.SeriesColor(i))
		addBar(&bs, a.AcceptedValue, title)
	}
	c.Series = []templates.BarSeries{bs}
	return c
}

// wholeDollars writes dollars rounded to the dollar with thousands separators: 12,345.
func wholeDollars(x float64) string { return moneyfmt.Count(int64(math.Round(x))) }

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

// percent writes a share (0 to 1) in percent to a tenth: 12.3%.
func percent(share float64) string { return fmt.Sprintf("%.1f%%", 100*share) }
