package templates

import (
	"strconv"
	"strings"
)

// Sparkline is a pool's recent utilization (values in [0, 1], oldest first) drawn
// as a small line with a fixed 0-100% scale.
type Sparkline struct {
	Values []float64
	Label  string // accessible description, e.g. "7-day trend: 31% to 58%"
	Now    string // the latest hourly mean, "25%", shown under the line
}

const sparkW, sparkH = 96.0, 22.0

// points lays the values out as an SVG polyline.
func (s Sparkline) points() string {
	var b strings.Builder
	n := len(s.Values)
	for i, v := range s.Values {
		x := 1.0
		if n > 1 {
			x = 1 + float64(i)*(sparkW-2)/float64(n-1)
		}
		y := sparkH - 1 - min(max(v, 0), 1)*(sparkH-2)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64))
	}
	return b.String()
}

// BoxStats summarize one group's values: the five numbers of a box plot.
type BoxStats struct {
	N                        int
	Min, Q1, Median, Q3, Max float64 // in [0, 1]
}

// BoxGroup is one resource kind with the utilization of the pools its settled
// bids bought in and its settled offers sold in.
type BoxGroup struct {
	Resource    string
	Bids, Offer BoxStats
}

// BoxPlot is the distribution of settled trades' pool utilization per resource
// kind, bids beside offers (Stokely et al., Fig. 7).
type BoxPlot struct {
	ID     string
	Groups []BoxGroup
}

// boxGeom is one box laid out in SVG coordinates.
type boxGeom struct {
	X, W                     float64
	Min, Q1, Median, Q3, Max float64 // y positions
	Color, Side              string
	N                        int
	Title                    string
}

// box plot layout: a 0-100% axis on the left, a group per resource kind.
const boxH, boxTop, boxBot, boxLeft, groupW = 260.0, 16.0, 224.0, 52.0, 130.0

func (b BoxPlot) width() float64 { return boxLeft + groupW*float64(max(len(b.Groups), 1)) + 16 }

func boxY(v float64) float64 { return boxBot - min(max(v, 0), 1)*(boxBot-boxTop) }

func (b BoxPlot) boxes() []boxGeom {
	var out []boxGeom
	for i, g := range b.Groups {
		x0 := boxLeft + groupW*float64(i)
		for j, side := range []struct {
			name, color string
			s           BoxStats
		}{{"bids", "#0072B2", g.Bids}, {"offers", "#D55E00", g.Offer}} {
			if side.s.N == 0 {
				continue
			}
			bg := boxGeom{X: x0 + 20 + float64(j)*52, W: 36, Min: boxY(side.s.Min), Q1: boxY(side.s.Q1), Median: boxY(side.s.Median),
				Q3: boxY(side.s.Q3), Max: boxY(side.s.Max), Color: side.color, Side: side.name, N: side.s.N}
			bg.Title = g.Resource + " " + side.name + ": " + strconv.Itoa(side.s.N) + " trades, median " + pctOf(side.s.Median) +
				", quartiles " + pctOf(side.s.Q1) + "–" + pctOf(side.s.Q3) + ", range " + pctOf(side.s.Min) + "–" + pctOf(side.s.Max)
			out = append(out, bg)
		}
	}
	return out
}

func pctOf(v float64) string { return strconv.FormatFloat(100*v, 'f', 0, 64) + "%" }

var boxTicks = []float64{0, 0.25, 0.5, 0.75, 1}
