package sharing

import (
	"math"
	"testing"
)

// Hand-checked: 1..5 has mean 3, standard error sqrt(2.5/5) = 0.7071, t(4, 0.975) =
// 2.7764, so the 95% interval is 3 +- 1.9632.
func TestMeanIntervalByHand(t *testing.T) {
	iv := MeanInterval([]float64{1, 2, 3, 4, 5}, 0.95)
	if iv.N != 5 || iv.Mean != 3 || math.Abs(iv.High-3-1.9632) > 1e-3 || math.Abs(3-iv.Low-1.9632) > 1e-3 {
		t.Fatalf("%+v", iv)
	}
	if one := MeanInterval([]float64{7}, 0.95); one.Low != 7 || one.High != 7 {
		t.Fatalf("%+v", one)
	}
}

// Ten pairs, a above b in 9 and tied in 1: the sign test's p is 2^-9 = 0.00195; the
// differences 1 (x9) and 0 give t = 0.9 / (0.3162/sqrt(10)) = 9, p far below 0.001.
// The other way round nothing is significant.
func TestComparePairedByHand(t *testing.T) {
	a := []float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 1}
	b := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	p := ComparePaired(a, b, 0.95)
	if p.Wins != 9 || p.Losses != 0 || p.Ties != 1 || math.Abs(p.SignP-1.0/512) > 1e-9 || !(p.TP < 1e-4) || math.Abs(p.Diff.Mean-0.9) > 1e-12 {
		t.Fatalf("%+v", p)
	}
	q := ComparePaired(b, a, 0.95)
	if q.Wins != 0 || q.Losses != 9 || q.SignP != 1 || !(q.TP > 0.999) {
		t.Fatalf("%+v", q)
	}
}
