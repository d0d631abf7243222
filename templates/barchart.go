package templates

import (
	"fmt"
	"math"
)

// BarChart is the view model of a server-rendered SVG chart of grouped bars: for
// each group (a label on the x axis) one bar per series, on a y axis that holds
// zero, so negative values hang below the zero line. It shares the line chart's
// axes, ticks, palette and legend.
type BarChart struct {
	ID        string // data-testid of the figure
	Title     string
	YLabel    string
	Groups    []string // the x axis, one label per group
	Series    []BarSeries
	FormatY   func(float64) string // tick labels; default: compact number
	YMax      float64              // the y axis reaches at least this (100 for shares in percent)
	Width     int                  // viewBox size; default 720 x 300
	Height    int
	EmptyText string // said instead of the chart when there is nothing to draw; default "No data yet."
}

// BarSeries is one bar in every group.
type BarSeries struct {
	Name   string
	Values []float64 // one per group; NaN and infinities draw no bar
	Titles []string  // hover text per bar; default "series, group: value"
	Color  string    // default: the palette's colour for the series' place
	Colors []string  // one colour per bar, over Color (a chart of one bar per group)
}

// SeriesColor is the colour the charts give the i-th series, so a figure drawn
// apart (a table's swatch, a bar chart's series) can match a line chart's.
func SeriesColor(i int) string { return palette[i%len(palette)] }

// NeutralColor is the colour of a reference series (a bound, a target) set among
// the palette's colours.
const NeutralColor = "#9aa3b5"

// barGeom is a BarChart laid out in SVG coordinates.
type barGeom struct {
	chartGeom
	Bars   []bar
	Zero   float64     // y of the value zero: the bars' base line
	Legend []chartLine // one per series, when there are several
}

type bar struct {
	X, Y, W, H   float64
	Color, Title string
}

func (ch BarChart) layout() barGeom {
	g := barGeom{chartGeom: chartGeom{W: ch.Width, H: ch.Height}}
	if g.W == 0 {
		g.W = 720
	}
	if g.H == 0 {
		g.H = 300
	}
	g.Left, g.Right, g.Top, g.Bot = 64, float64(g.W)-16, 36, float64(g.H)-44
	lo, hi, seen := 0.0, ch.YMax, false
	for _, s := range ch.Series {
		for _, v := range s.Values {
			if g.drawable(Point{Y: v}) {
				lo, hi, seen = math.Min(lo, v), math.Max(hi, v), true
			}
		}
	}
	if !seen || len(ch.Groups) == 0 {
		g.Empty = true
		return g
	}
	ys := niceTicks(lo, hi, 5)
	g.minY, g.maxY = ys[0], ys[len(ys)-1]
	g.minX, g.maxX = 0, float64(len(ch.Groups))
	fy := ch.FormatY
	if fy == nil {
		fy = compactNumber
	}
	for _, v := range ys {
		g.YTicks = append(g.YTicks, tick{Pos: g.y(v), Label: fy(v)})
	}
	g.fitYLabels()
	g.Zero = g.y(0)
	group := (g.Right - g.Left) / float64(len(ch.Groups))
	barW := group * 0.8 / float64(max(len(ch.Series), 1))
	for k, label := range ch.Groups {
		g.XTicks = append(g.XTicks, tick{Pos: g.x(float64(k) + 0.5), Label: label})
		for i, s := range ch.Series {
			if k >= len(s.Values) || !g.drawable(Point{Y: s.Values[k]}) {
				continue
			}
			v := s.Values[k]
			top, bottom := g.y(math.Max(v, 0)), g.y(math.Min(v, 0))
			g.Bars = append(g.Bars, bar{X: g.x(float64(k)) + group*0.1 + barW*float64(i), Y: top, W: barW, H: bottom - top,
				Color: s.color(i, k), Title: s.title(k, label, fy)})
		}
	}
	if len(ch.Series) > 1 {
		for i, s := range ch.Series {
			g.Legend = append(g.Legend, chartLine{Name: s.Name, Color: s.color(i, -1)})
		}
	}
	g.placeXLabels(g.XTicks)
	return g
}

// color is the colour of the series' bar in group k (k < 0: the series' own).
func (s BarSeries) color(i, k int) string {
	if k >= 0 && k < len(s.Colors) && s.Colors[k] != "" {
		return s.Colors[k]
	}
	if s.Color != "" {
		return s.Color
	}
	return SeriesColor(i)
}

func (s BarSeries) title(k int, group string, format func(float64) string) string {
	if k < len(s.Titles) && s.Titles[k] != "" {
		return s.Titles[k]
	}
	return fmt.Sprintf("%s, %s: %s", s.Name, group, format(s.Values[k]))
}
