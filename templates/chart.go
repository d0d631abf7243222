package templates

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Series is one line of a chart.
type Series struct {
	Name   string
	Points []Point
	Step   bool // draw as a step function (prices between auctions), not straight segments
}

// Point is one (x, y) value.
type Point struct{ X, Y float64 }

// LineChart is the view model of a server-rendered SVG line chart.
type LineChart struct {
	ID            string // data-testid of the figure
	Title         string
	XLabel        string
	YLabel        string
	Series        []Series
	FormatX       func(float64) string // tick labels; default: compact number
	FormatY       func(float64) string
	YFromZero     bool      // include zero on the y axis
	LogY          bool      // logarithmic y axis (cheap and dear series both show movement); y <= 0 is not drawn
	Markers       []float64 // vertical dashed lines at these x values
	Width, Height int       // viewBox size; default 720 x 280
	EmptyText     string    // said instead of the chart when there is nothing to draw; default "No data yet."
	Legend        bool      // name the series under the chart even when there is only one
}

// chartGeom is a LineChart laid out in SVG coordinates.
type chartGeom struct {
	W, H                   int
	Left, Right, Top, Bot  float64
	XTicks, YTicks         []tick
	XTicksNarrow           []tick // the x labels for narrow screens, where they are drawn larger
	Lines                  []chartLine
	Markers                []float64
	Empty                  bool
	minX, maxX, minY, maxY float64
	log                    bool // minY, maxY and y() are in log10 units
}

type tick struct {
	Pos    float64
	Label  string
	Anchor string // the label's text-anchor; "" is middle
}

// labelCharWidth and narrowCharWidth are generous widths of one character of a
// chart's labels, in the SVG's units, at the 14px that static/app.css gives them on
// wide screens and the 22px it gives them on narrow ones (where the chart is scaled
// down to fit). Each screen gets the labels that fit it (placeXLabels).
const (
	labelCharWidth  = 8.0
	narrowCharWidth = 13.0
)

// placeXLabels sets the x-axis labels from ts, one set for each screen width
// (anchorAtEdges).
func (g *chartGeom) placeXLabels(ts []tick) {
	g.XTicks = anchorAtEdges(slices.Clone(ts), float64(g.W), labelCharWidth)
	g.XTicksNarrow = anchorAtEdges(slices.Clone(ts), float64(g.W), narrowCharWidth)
}

// anchorAtEdges anchors x-axis labels that, centred on their tick, would run past
// the chart's left or right edge (width w) at that edge instead, so that no label is
// cut (the last month of a chart ends at the right edge), and then drops, from the
// right, a label that would overlap the one after it or is too long to fit at its
// tick either way. It returns the labels kept.
// charWidth is the width of a character (labelCharWidth, narrowCharWidth).
func anchorAtEdges(ts []tick, w, charWidth float64) []tick {
	for i := range ts {
		switch lo, hi := labelExtent(ts[i], charWidth); {
		case hi > w:
			ts[i].Anchor = "end"
		case lo < 0:
			ts[i].Anchor = "start"
		}
	}
	var kept []tick
	next := math.Inf(1) // where the kept label to the right begins
	for i := len(ts) - 1; i >= 0; i-- {
		lo, hi := labelExtent(ts[i], charWidth)
		if hi+labelGap > next || lo < 0 || hi > w { // overlaps, or too long to fit here
			continue
		}
		kept, next = append(kept, ts[i]), lo
	}
	slices.Reverse(kept)
	return kept
}

// fitYLabels widens the left margin, before anything is placed by x, so that the
// longest y-axis label fits beside the axis at the narrow screens' size too (a
// minus sign was cut there), at most to a third of the chart.
func (g *chartGeom) fitYLabels() {
	longest := 0
	for _, t := range g.YTicks {
		longest = max(longest, len([]rune(t.Label)))
	}
	g.Left = max(g.Left, min(narrowCharWidth*float64(longest)+8, float64(g.W)/3))
}

// labelExtent is where an x-axis label begins and ends, as anchored, at charWidth a
// character.
func labelExtent(t tick, charWidth float64) (lo, hi float64) {
	width := charWidth * float64(len([]rune(t.Label)))
	switch t.Anchor {
	case "end":
		return t.Pos - width, t.Pos
	case "start":
		return t.Pos, t.Pos + width
	}
	return t.Pos - width/2, t.Pos + width/2
}

// labelGap is the least space between two x-axis labels.
const labelGap = 6.0

// anchor is the label's text-anchor.
func (t tick) anchor() string {
	if t.Anchor == "" {
		return "middle"
	}
	return t.Anchor
}

type chartLine struct {
	Name, Path, Color string
	Dash              string // stroke-dasharray, so series beyond the palette stay distinct
}

// dashes tell apart series that share a colour: the first eight are solid.
var dashes = []string{"", "6 3", "2 3", "8 3 2 3"}

// palette is colour-blind safe (Okabe-Ito).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

func (ch LineChart) layout() chartGeom {
	g := chartGeom{W: ch.Width, H: ch.Height, log: ch.LogY}
	if g.W == 0 {
		g.W = 640
	}
	if g.H == 0 {
		g.H = 300
	}
	g.Left, g.Right, g.Top, g.Bot = 64, float64(g.W)-16, 36, float64(g.H)-44
	first := true
	for _, s := range ch.Series {
		for _, p := range s.Points {
			if !g.drawable(p) {
				continue
			}
			if g.log {
				p.Y = math.Log10(p.Y)
			}
			if first {
				g.minX, g.maxX, g.minY, g.maxY = p.X, p.X, p.Y, p.Y
				first = false
			}
			g.minX, g.maxX = math.Min(g.minX, p.X), math.Max(g.maxX, p.X)
			g.minY, g.maxY = math.Min(g.minY, p.Y), math.Max(g.maxY, p.Y)
		}
	}
	if first {
		g.Empty = true
		return g
	}
	if ch.YFromZero && !g.log {
		g.minY, g.maxY = math.Min(0, g.minY), math.Max(0, g.maxY)
	}
	var ys []float64
	if g.log {
		ys = logTicks(g.minY, g.maxY)
		g.minY, g.maxY = math.Log10(ys[0]), math.Log10(ys[len(ys)-1])
	} else {
		ys = niceTicks(g.minY, g.maxY, 5)
		g.minY, g.maxY = ys[0], ys[len(ys)-1]
	}
	if g.maxX == g.minX {
		g.minX, g.maxX = g.minX-1, g.maxX+1
	}
	fx, fy := ch.FormatX, ch.FormatY
	if fx == nil {
		fx = compactNumber
	}
	if fy == nil {
		fy = compactNumber
	}
	for _, v := range ys {
		g.YTicks = append(g.YTicks, tick{Pos: g.yOf(v), Label: fy(v)})
	}
	g.fitYLabels()
	for _, v := range niceTicks(g.minX, g.maxX, 6) {
		if v >= g.minX && v <= g.maxX {
			g.XTicks = append(g.XTicks, tick{Pos: g.x(v), Label: fx(v)})
		}
	}
	g.placeXLabels(g.XTicks)
	for _, m := range ch.Markers {
		if m >= g.minX && m <= g.maxX {
			g.Markers = append(g.Markers, g.x(m))
		}
	}
	for i, s := range ch.Series {
		g.Lines = append(g.Lines, chartLine{Name: s.Name, Path: g.path(s), Color: palette[i%len(palette)],
			Dash: dashes[(i/len(palette))%len(dashes)]})
	}
	return g
}

// drawable reports whether a point can be placed: finite, and positive on a log axis.
func (g chartGeom) drawable(p Point) bool {
	if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) {
		return false
	}
	return !g.log || p.Y > 0
}

// yOf places a data value (not yet in log units) on the y axis.
func (g chartGeom) yOf(v float64) float64 {
	if g.log {
		return g.y(math.Log10(v))
	}
	return g.y(v)
}

// logTicks returns round values (1, 2, 5 times powers of ten; only powers of ten
// over many decades) covering [10^lo, 10^hi].
func logTicks(lo, hi float64) []float64 {
	a, b := math.Floor(lo), math.Ceil(hi)
	if b <= a {
		b = a + 1
	}
	steps := []float64{1, 2, 5}
	if b-a > 2 {
		steps = []float64{1}
	}
	var ticks []float64
	for e := a; e <= b; e++ {
		for _, m := range steps {
			v := m * math.Pow(10, e)
			l := math.Log10(v)
			if l > b+1e-9 {
				break
			}
			// keep the ticks that cover the data: the last at or below lo onwards
			ticks = append(ticks, v)
		}
	}
	first, last := 0, len(ticks)-1
	for i, v := range ticks {
		if math.Log10(v) <= lo+1e-9 {
			first = i
		}
	}
	for i := len(ticks) - 1; i >= 0; i-- {
		if math.Log10(ticks[i]) >= hi-1e-9 {
			last = i
		}
	}
	return ticks[first : last+1]
}

func (g chartGeom) x(v float64) float64 {
	return g.Left + (v-g.minX)/(g.maxX-g.minX)*(g.Right-g.Left)
}

func (g chartGeom) y(v float64) float64 {
	if g.maxY == g.minY {
		return (g.Top + g.Bot) / 2
	}
	return g.Bot - (v-g.minY)/(g.maxY-g.minY)*(g.Bot-g.Top)
}

func (g chartGeom) path(s Series) string {
	out := make([]byte, 0, 16*len(s.Points))
	for i, p := range s.Points {
		if !g.drawable(p) {
			continue
		}
		x, y := g.x(p.X), g.yOf(p.Y)
		switch {
		case len(out) == 0:
			out = fmt.Appendf(out, "M%.1f %.1f", x, y)
		case s.Step && i > 0:
			out = fmt.Appendf(out, " H%.1f V%.1f", x, y)
		default:
			out = fmt.Appendf(out, " L%.1f %.1f", x, y)
		}
	}
	return string(out)
}

// niceTicks returns about n evenly spaced round values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if hi < lo {
		lo, hi = hi, lo
	}
	// A range too narrow to divide in floating point (or empty) is widened around its
	// middle, so the ticks stay distinct, round and covering.
	if scale := max(math.Abs(lo), math.Abs(hi)); hi-lo <= scale*1e-9 {
		if scale == 0 {
			return []float64{0, 1}
		}
		pad := scale * 0.1
		lo, hi = lo-pad, hi+pad
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	start := math.Floor(lo/step) * step
	var ticks []float64
	for v := start; v <= hi+step*1e-9 || len(ticks) < 2; v += step {
		ticks = append(ticks, math.Round(v/step)*step)
		if len(ticks) > 50 {
			break
		}
	}
	// Floating-point products can land a hair inside the range: add a step.
	if ticks[0] > lo {
		ticks = append([]float64{ticks[0] - step}, ticks...)
	}
	if ticks[len(ticks)-1] < hi {
		ticks = append(ticks, ticks[len(ticks)-1]+step)
	}
	return ticks
}

// compactNumber formats a tick value briefly: 1.5k, 2M, 0.25.
func compactNumber(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}

func ff(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
