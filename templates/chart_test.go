package templates

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestNiceTicksCoverTheRangeWithRoundSteps(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := rapid.Float64Range(-1e6, 1e6).Draw(t, "lo")
		span := rapid.Float64Range(0, 1e6).Draw(t, "span")
		hi := lo + span
		ticks := niceTicks(lo, hi, 5)
		if len(ticks) < 2 || len(ticks) > 52 {
			t.Fatalf("%d ticks for [%g, %g]", len(ticks), lo, hi)
		}
		if ticks[0] > lo || ticks[len(ticks)-1] < hi {
			t.Fatalf("ticks %v do not cover [%g, %g]", ticks, lo, hi)
		}
		for i := 1; i < len(ticks); i++ {
			if ticks[i] <= ticks[i-1] {
				t.Fatalf("ticks not increasing: %v", ticks)
			}
		}
	})
}

func TestChartMapsPointsIntoThePlotArea(t *testing.T) {
	ch := LineChart{Series: []Series{{Name: "a", Points: []Point{{0, 1}, {10, 3}, {20, 2}}}}}
	g := ch.layout()
	if g.Empty {
		t.Fatal("chart with points reported empty")
	}
	if x := g.x(0); x != g.Left {
		t.Fatalf("x(min) = %v, want left edge %v", x, g.Left)
	}
	if x := g.x(20); x != g.Right {
		t.Fatalf("x(max) = %v, want right edge %v", x, g.Right)
	}
	if g.y(g.maxY) != g.Top || g.y(g.minY) != g.Bot {
		t.Fatal("y range not mapped onto the plot's top and bottom")
	}
	if !strings.HasPrefix(g.Lines[0].Path, "M64.0 ") {
		t.Fatalf("path %q does not start at the left edge", g.Lines[0].Path)
	}
}

func TestChartEscapesNamesAndHandlesNoData(t *testing.T) {
	var buf bytes.Buffer
	ch := LineChart{ID: "c", Title: "<script>alert(1)</script>", Series: []Series{
		{Name: "<b>x</b>", Points: []Point{{0, 1}, {1, 2}}},
		{Name: "y", Points: []Point{{0, 2}, {1, 1}}},
	}}
	if err := Chart(ch).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "<script>") || strings.Contains(out, "<b>x</b>") {
		t.Fatalf("chart output not escaped: %s", out)
	}
	if !strings.Contains(out, "&lt;b&gt;x&lt;/b&gt;") {
		t.Fatal("series name missing from legend")
	}
	buf.Reset()
	if err := Chart(LineChart{ID: "e"}).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "No data yet.") || strings.Contains(buf.String(), "<svg") {
		t.Fatal("empty chart should say there is no data and draw no SVG")
	}
}

func TestLogAxisShowsCheapAndDearSeries(t *testing.T) {
	ch := LineChart{LogY: true, Series: []Series{
		{Name: "ram", Points: []Point{{1, 0.2}, {2, 0.3}}},
		{Name: "gpu", Points: []Point{{1, 200}, {2, 300}}},
		{Name: "bad", Points: []Point{{1, 0}, {2, -1}}},
	}}
	g := ch.layout()
	// On a log axis the cheap series moves as far up the plot as the dear one.
	ram := g.yOf(0.2) - g.yOf(0.3)
	gpu := g.yOf(200) - g.yOf(300)
	if ram < 1 || math.Abs(ram-gpu) > 0.01 {
		t.Fatalf("ram moves %.2f, gpu %.2f: want the same visible move", ram, gpu)
	}
	if g.YTicks[0].Label != "0.1" || g.YTicks[len(g.YTicks)-1].Label != "1000" {
		t.Fatalf("log ticks %v", g.YTicks)
	}
	if g.Lines[2].Path != "" {
		t.Fatalf("non-positive values drawn on a log axis: %q", g.Lines[2].Path)
	}
}

func TestEveryOfManySeriesIsDrawnAndTold(t *testing.T) {
	ch := LineChart{ID: "many"}
	for i := range 12 {
		ch.Series = append(ch.Series, Series{Name: "pool-" + itoa(i), Points: []Point{{0, float64(i)}, {1, float64(i + 1)}}})
	}
	var buf bytes.Buffer
	if err := Chart(ch).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if n := strings.Count(html, `class="series"`); n != 12 {
		t.Fatalf("%d of 12 series drawn", n)
	}
	legend := html[strings.Index(html, `data-testid="chart-legend"`):]
	for i := range 12 {
		if !strings.Contains(legend, "pool-"+itoa(i)) {
			t.Fatalf("pool-%d missing from the legend", i)
		}
	}
	g := ch.layout()
	seen := map[string]bool{}
	for _, l := range g.Lines {
		key := l.Color + "|" + l.Dash
		if seen[key] {
			t.Fatalf("two series drawn alike: %s", key)
		}
		seen[key] = true
	}
}

// A label that would run past the chart's right edge if centred on its tick ends at
// the edge instead; labels well inside stay centred.
func TestXLabelsAtTheEdgeAreNotCut(t *testing.T) {
	ch := LineChart{Series: []Series{{Name: "a", Points: []Point{{0, 1}, {10, 3}}}},
		FormatX: func(v float64) string { return "2026-" + compactNumber(v) }}
	var buf bytes.Buffer
	if err := Chart(ch).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	g := ch.layout()
	last, first := g.XTicks[len(g.XTicks)-1], g.XTicks[0]
	if last.Pos != g.Right || last.anchor() != "end" {
		t.Fatalf("last x label at %v (right edge %v) anchored %q, want end", last.Pos, g.Right, last.anchor())
	}
	if mid := g.XTicks[len(g.XTicks)/2]; mid.anchor() != "middle" {
		t.Fatalf("a middle label anchored %q", mid.anchor())
	}
	if first.anchor() != "middle" { // the left margin holds half of it
		t.Fatalf("first label anchored %q", first.anchor())
	}
	if !strings.Contains(buf.String(), `text-anchor="end">2026-10</text>`) {
		t.Fatal("the rendered chart does not anchor its last x label at the end")
	}
}

// No two x-axis labels overlap, whatever their length and the chart's width, and
// none runs past the chart's edges: on wide screens and on narrow ones,
// where they are drawn larger.
func TestXLabelsNeverOverlap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 40).Draw(t, "points")
		label := rapid.StringMatching(`[A-Za-z0-9 ]{1,16}`).Draw(t, "label")
		ch := LineChart{Width: rapid.IntRange(200, 1400).Draw(t, "width"), Series: []Series{{Name: "a"}},
			FormatX: func(v float64) string { return label + compactNumber(v) }}
		for i := range n {
			ch.Series[0].Points = append(ch.Series[0].Points, Point{X: float64(i), Y: float64(i % 3)})
		}
		g := ch.layout()
		for _, set := range []struct {
			ticks     []tick
			charWidth float64
		}{{g.XTicks, labelCharWidth}, {g.XTicksNarrow, narrowCharWidth}} {
			for i := 1; i < len(set.ticks); i++ {
				_, prevHi := labelExtent(set.ticks[i-1], set.charWidth)
				lo, _ := labelExtent(set.ticks[i], set.charWidth)
				if prevHi+labelGap > lo {
					t.Fatalf("labels %q and %q overlap at %g a character", set.ticks[i-1].Label, set.ticks[i].Label, set.charWidth)
				}
			}
			for _, tk := range set.ticks {
				if lo, hi := labelExtent(tk, set.charWidth); lo < 0 || hi > float64(ch.Width) {
					t.Fatalf("label %q at %v runs past the chart [0, %d] at %g a character", tk.Label, tk.Pos, ch.Width, set.charWidth)
				}
			}
		}
	})
}

// The y-axis labels, drawn right-aligned left of the axis, fit the chart even at the
// narrow screens' size: "-2000" lost its minus sign there.
func TestYLabelsFitLeftOfTheAxis(t *testing.T) {
	for _, pts := range [][]Point{{{0, -1300}, {1, 4700}}, {{0, 0}, {1, 3}}, {{0, -123456789}, {1, 987654321}}} {
		for _, g := range []chartGeom{LineChart{Series: []Series{{Name: "a", Points: pts}}}.layout(),
			BarChart{Groups: []string{"a", "b"}, Series: []BarSeries{{Name: "a", Values: []float64{pts[0].Y, pts[1].Y}}}}.layout().chartGeom} {
			for _, tk := range g.YTicks {
				if room := g.Left - 6; float64(len([]rune(tk.Label)))*narrowCharWidth > room && room < float64(g.W)/3-6 {
					t.Errorf("y label %q needs %g, has %g left of the axis", tk.Label, float64(len([]rune(tk.Label)))*narrowCharWidth, room)
				}
			}
			if g.Left < 64 || g.Left > float64(g.W)/3 {
				t.Errorf("left margin %g, want from 64 to a third of %d", g.Left, g.W)
			}
		}
	}
}
