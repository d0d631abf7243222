package sharing

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is a sample's mean and its two-sided Student-t confidence interval at the
// level it was computed for (Low = High = Mean for fewer than two values).
type Interval struct {
	N               int
	Mean, Low, High float64
}

// MeanInterval returns the mean of xs with its two-sided confidence interval at level
// (in (0, 1), e.g. 0.95), from Student's t with N - 1 degrees of freedom. Empty xs
// give a zero Interval.
func MeanInterval(xs []float64, level float64) Interval {
	n := len(xs)
	if n == 0 {
		return Interval{}
	}
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	out := Interval{N: n, Mean: mean, Low: mean, High: mean}
	if n < 2 {
		return out
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	se := math.Sqrt(ss / float64(n-1) / float64(n))
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.5+level/2) * se
	out.Low, out.High = mean-half, mean+half
	return out
}

// Paired compares two measurements of the same units (seeds, samples): the
// differences d = a - b, their mean's confidence interval, how many are positive
// (Wins), negative and zero, and two one-sided p-values for "a is greater than b":
// Student's paired t-test (TP) and the exact sign test on the non-zero differences
// (SignP: the chance of at least Wins successes in Wins + Losses fair coin tosses).
type Paired struct {
	Diff               Interval
	Wins, Losses, Ties int
	TP, SignP          float64
}

// ComparePaired returns the paired comparison of a against b at level. a and b must
// have the same length; it panics otherwise (a programming error).
func ComparePaired(a, b []float64, level float64) Paired {
	if len(a) != len(b) {
		panic("sharing: ComparePaired of different lengths")
	}
	d := make([]float64, len(a))
	var p Paired
	for i := range a {
		d[i] = a[i] - b[i]
		switch {
		case d[i] > 0:
			p.Wins++
		case d[i] < 0:
			p.Losses++
		default:
			p.Ties++
		}
	}
	p.Diff = MeanInterval(d, level)
	p.TP, p.SignP = 1, 1
	if n := len(d); n >= 2 {
		ss := 0.0
		for _, x := range d {
			ss += (x - p.Diff.Mean) * (x - p.Diff.Mean)
		}
		if se := math.Sqrt(ss / float64(n-1) / float64(n)); se > 0 {
			p.TP = 1 - distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.CDF(p.Diff.Mean/se)
		} else if p.Diff.Mean > 0 {
			p.TP = 0
		}
	}
	if m := p.Wins + p.Losses; m > 0 {
		b := distuv.Binomial{N: float64(m), P: 0.5}
		p.SignP = 1 - b.CDF(float64(p.Wins)-0.5)
	}
	return p
}
