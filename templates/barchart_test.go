package templates

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
)

func TestBarsStandOnZeroAndNegativeOnesHangBelow(t *testing.T) {
	ch := BarChart{Groups: []string{"a", "b", "c"}, Series: []BarSeries{
		{Name: "x", Values: []float64{3, -2, math.NaN()}},
		{Name: "y", Values: []float64{1, 4, 2}},
	}}
	g := ch.layout()
	if g.Empty || len(g.Bars) != 5 {
		t.Fatalf("%d bars, want 5 (NaN draws none)", len(g.Bars))
	}
	if g.minY > -2 || g.maxY < 4 {
		t.Fatalf("y axis [%v, %v] does not hold [-2, 4]", g.minY, g.maxY)
	}
	for _, b := range g.Bars {
		if b.H < 0 || b.Y < g.Top-1e-9 || b.Y+b.H > g.Bot+1e-9 {
			t.Fatalf("bar %+v outside the plot [%v, %v]", b, g.Top, g.Bot)
		}
	}
	up, down := g.Bars[0], g.Bars[2] // x in a, x in b
	if math.Abs(up.Y+up.H-g.Zero) > 1e-9 || math.Abs(down.Y-g.Zero) > 1e-9 {
		t.Fatalf("bars do not meet the zero line %v: %+v %+v", g.Zero, up, down)
	}
	if g.Bars[1].X <= up.X || g.Bars[2].X <= g.Bars[1].X+g.Bars[1].W {
		t.Fatal("bars not laid out left to right, series within groups")
	}
	if len(g.Legend) != 2 || g.Legend[0].Color != SeriesColor(0) {
		t.Fatalf("legend %+v", g.Legend)
	}
}

func TestBarsEscapeAndSayWhenEmpty(t *testing.T) {
	var buf bytes.Buffer
	ch := BarChart{ID: "b", Title: "<script>x</script>", Groups: []string{"<i>g</i>"},
		Series: []BarSeries{{Name: "s", Values: []float64{2}, Colors: []string{"#123456"}}}}
	if err := Bars(ch).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "<script>") || strings.Contains(out, "<i>g</i>") || !strings.Contains(out, "&lt;i&gt;g&lt;/i&gt;") {
		t.Fatalf("bar chart not escaped: %s", out)
	}
	if !strings.Contains(out, `fill="#123456"`) || !strings.Contains(out, "<title>s, &lt;i&gt;g&lt;/i&gt;: 2</title>") {
		t.Fatalf("bar colour or default title missing: %s", out)
	}
	if strings.Contains(out, "chart-legend") {
		t.Fatal("a single series has a legend")
	}
	buf.Reset()
	if err := Bars(BarChart{ID: "e", Groups: []string{"a"}}).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "No data yet.") || strings.Contains(buf.String(), "<svg") {
		t.Fatal("an empty bar chart should say there is no data and draw no SVG")
	}
}
