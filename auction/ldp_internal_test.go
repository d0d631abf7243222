package auction

import (
	"math"
	"testing"
)

// ldp projects the origin onto a polyhedron: onto x1 + x2 >= 2 it is (1, 1); with
// x1 <= 0.5 added it is (0.5, 1.5); x >= 1 with x <= 0 has no point, and ldp says
// so (also when the two nearly meet, where nnls leaves a tiny residual).
func TestLDP(t *testing.T) {
	for _, c := range []struct {
		G    [][]float64
		h    []float64
		want []float64 // nil: infeasible
	}{
		{[][]float64{{1, 1}}, []float64{2}, []float64{1, 1}},
		{[][]float64{{1, 1}, {-1, 0}}, []float64{2, -0.5}, []float64{0.5, 1.5}},
		{[][]float64{{1, 0}, {-1, 0}}, []float64{1, 0}, nil},
		{[][]float64{{1, 1}, {-1, -1}}, []float64{14.6, -14.5999999}, nil},
		{[][]float64{{1, 0}, {0, 1}}, []float64{-3, -4}, []float64{0, 0}},
	} {
		d, ok := ldp(c.G, c.h, 2)
		if c.want == nil {
			if ok {
				t.Errorf("G %v h %v: got %v, want infeasible", c.G, c.h, d)
			}
			continue
		}
		if !ok || math.Abs(d[0]-c.want[0]) > 1e-9 || math.Abs(d[1]-c.want[1]) > 1e-9 {
			t.Errorf("G %v h %v: got %v (ok %v), want %v", c.G, c.h, d, ok, c.want)
		}
	}
}
