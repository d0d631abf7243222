package auction

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	gonumlp "gonum.org/v1/gonum/optimize/convex/lp"
	"pgregory.net/rapid"
)

// The payment rule: within limits, covering the reserve value whenever the limits
// can, equal to min(limit, at prices) when that already covers it, and otherwise
// exactly covering it with one common top-up (least squares nearest the prices).
func TestFinalPayments(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 8).Draw(t, "winners")
		at, lim := make([]float64, n), make([]float64, n)
		sumLim := 0.0
		for i := range n {
			at[i] = float64(rapid.IntRange(-50, 100).Draw(t, "at"))
			lim[i] = float64(rapid.IntRange(-50, 100).Draw(t, "limit"))
			sumLim += lim[i]
		}
		R := float64(rapid.IntRange(-100, 300).Draw(t, "reserve"))
		if R > sumLim {
			R = sumLim // the final round's welfare is never negative: limits cover R
		}
		pay := finalPayments(at, lim, R)
		total, base := 0.0, 0.0
		for i := range pay {
			if pay[i] > lim[i]+1e-9 {
				t.Fatalf("winner %d pays %v beyond its limit %v", i, pay[i], lim[i])
			}
			total += pay[i]
			base += min(at[i], lim[i])
		}
		if total < R-1e-9 {
			t.Fatalf("payments %v cover %v of the reserve value %v", pay, total, R)
		}
		if base >= R {
			for i := range pay {
				if pay[i] != min(at[i], lim[i]) {
					t.Fatalf("winner %d pays %v, not min(limit, at prices) = %v", i, pay[i], min(at[i], lim[i]))
				}
			}
		} else if math.Abs(total-R) > 1e-9*max(1, math.Abs(R)) {
			t.Fatalf("payments %v total %v, more than the reserve value %v they had to reach", pay, total, R)
		}
	})
}

// lpMax agrees with gonum's simplex on random packing LPs with mixed-sign rows.
func TestLPMaxAgreesWithGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		m, n := 1+rng.IntN(6), 1+rng.IntN(8)
		A := make([][]float64, m)
		b := make([]float64, m)
		for i := range A {
			A[i] = make([]float64, n)
			for j := range A[i] {
				if rng.IntN(3) > 0 {
					A[i][j] = float64(rng.IntN(9) - 2)
				}
			}
			b[i] = float64(rng.IntN(12) - 1)
		}
		c := make([]float64, n)
		for j := range c {
			c[j] = float64(rng.IntN(20) - 4)
		}
		// Bound every variable so the LP is never unbounded: x_j <= 3.
		for j := range n {
			row := make([]float64, n)
			row[j] = 1
			A = append(A, row)
			b = append(b, 3)
		}
		x, val, _, st := lpMax(A, b, c, time.Time{})
		// gonum: minimise -c.x subject to [A I] (x, s) = b, x, s >= 0.
		rows := len(A)
		G := mat.NewDense(rows, n+rows, nil)
		for i := range A {
			for j, a := range A[i] {
				G.Set(i, j, a)
			}
			G.Set(i, n+i, 1)
		}
		cc := make([]float64, n+rows)
		for j := range n {
			cc[j] = -c[j]
		}
		gv, _, gerr := gonumlp.Simplex(cc, G, b, 1e-10, nil)
		switch {
		case gerr == gonumlp.ErrInfeasible:
			if st != lpInfeasible {
				t.Fatalf("trial %d: gonum finds it infeasible, lpMax says %v (value %v)", trial, st, val)
			}
		case gerr != nil:
			continue // gonum's own failures (singular bases) prove nothing
		default:
			if st != lpOptimal || math.Abs(val+gv) > 1e-5*max(1, math.Abs(gv)) {
				t.Fatalf("trial %d: lpMax %v (status %v), gonum %v", trial, val, st, -gv)
			}
			for i := range A {
				s := 0.0
				for j := range x {
					s += A[i][j] * x[j]
				}
				if s > b[i]+1e-5 {
					t.Fatalf("trial %d: row %d: %v > %v", trial, i, s, b[i])
				}
			}
		}
	}
}

// lpMaxDual, the dual simplex from the slack basis, finds lpMax's optimal value
// (the same perturbed LP), or its infeasibility, on random LPs with negative
// costs and mixed-sign rows, as the least-revenue LP has them, and a point that
// meets every row to the perturbation.
func TestLPMaxDualAgreesWithLPMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	optimal, infeasible := 0, 0
	for trial := range 2000 {
		m, n := 1+rng.IntN(8), 1+rng.IntN(8)
		A, b := randomRows(m, n, func() float64 {
			if rng.IntN(2) > 0 {
				return -float64(rng.IntN(3))
			}
			return 0
		}, func() float64 { return -float64(rng.IntN(10)) }, func() float64 { return float64(rng.IntN(6)) })
		c := make([]float64, n)
		for j := range c {
			c[j] = -float64(1 + rng.IntN(3))
		}
		want, wantVal, _, wantSt := lpMax(A, b, c, time.Time{})
		x, val, st := lpMaxDual(A, b, c, time.Time{})
		if st != wantSt {
			t.Fatalf("trial %d: lpMaxDual %v, lpMax %v (x %v)", trial, st, wantSt, want)
		}
		if st == lpInfeasible {
			infeasible++
			continue
		}
		optimal++
		if math.Abs(val-wantVal) > 1e-9*max(1, math.Abs(wantVal)) {
			t.Fatalf("trial %d: lpMaxDual %v, lpMax %v", trial, val, wantVal)
		}
		for i := range A {
			s := 0.0
			for j := range x {
				if x[j] < 0 {
					t.Fatalf("trial %d: x[%d] = %v", trial, j, x[j])
				}
				s += A[i][j] * x[j]
			}
			if s > b[i]+1e-6*max(1, math.Abs(b[i])) {
				t.Fatalf("trial %d: row %d: %v > %v", trial, i, s, b[i])
			}
		}
	}
	if optimal < 200 || infeasible < 200 {
		t.Fatalf("%d optimal and %d infeasible trials: the generator no longer covers both", optimal, infeasible)
	}
}

// randomRows is m random rows over n columns (entry gives each coefficient, rhs
// each right-hand side), then one bound row x_j <= bound() per column.
func randomRows(m, n int, entry, rhs, bound func() float64) (A [][]float64, b []float64) {
	for range m {
		row := make([]float64, n)
		for j := range row {
			row[j] = entry()
		}
		A, b = append(A, row), append(b, rhs())
	}
	for j := range n {
		row := make([]float64, n)
		row[j] = 1
		A, b = append(A, row), append(b, bound())
	}
	return A, b
}

// Fixing columns at 1 or at 0 in an optimal tableau, one after another (fix: a
// child in branch and bound, a VCG solve's root without a bidder's columns) gives
// what solving the LP with the rows x_k >= 1 (x_k <= 1 holds) or x_k <= 0 from
// scratch gives, in a copy (clone) that leaves the copied tableau as it was.
func TestLPFixMatchesAFreshSolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	checked := 0
	for trial := range 1000 {
		m, n := 1+rng.IntN(6), 1+rng.IntN(8)
		// x_j <= 1 below the random rows, as a bidder's row bounds its columns.
		A, b := randomRows(m, n, func() float64 {
			if rng.IntN(3) > 0 {
				return float64(rng.IntN(6))
			}
			return 0
		}, func() float64 { return float64(rng.IntN(8)) }, func() float64 { return 1 })
		c := make([]float64, n)
		for j := range c {
			c[j] = float64(rng.IntN(20) - 4)
		}
		s, st := lpSolve(A, b, c, time.Time{})
		if st != lpOptimal {
			t.Fatalf("trial %d: a bounded feasible LP ended %v", trial, st)
		}
		_, before := s.solution()
		warm, wst := s.clone(), lpOptimal
		fixed := map[int]float64{}
		fA, fb := slices.Clone(A), slices.Clone(b)
		for range 1 + rng.IntN(min(n, 3)) {
			k := rng.IntN(n)
			if _, ok := fixed[k]; ok {
				continue
			}
			v, row, rhs := float64(rng.IntN(2)), make([]float64, n), 0.0
			if v == 1 {
				row[k], rhs = -1, -1
			} else {
				row[k] = 1
			}
			fixed[k] = v
			fA, fb = append(fA, row), append(fb, rhs)
			if wst = warm.fix(k, v, time.Time{}); wst != lpOptimal {
				break
			}
		}
		if _, after := s.solution(); after != before {
			t.Fatalf("trial %d: fixing a copy changed the original's value from %v to %v", trial, before, after)
		}
		_, fval, _, fst := lpMax(fA, fb, c, time.Time{})
		if (wst == lpOptimal) != (fst == lpOptimal) {
			t.Fatalf("trial %d: fixed %v: warm %v, fresh %v", trial, fixed, wst, fst)
		}
		if wst != lpOptimal {
			continue
		}
		checked++
		x, val := warm.solution()
		if math.Abs(val-fval) > 1e-5*max(1, math.Abs(fval)) {
			t.Fatalf("trial %d: fixed %v: warm %v, fresh %v", trial, fixed, val, fval)
		}
		for k, v := range fixed {
			if math.Abs(x[k]-v) > 1e-6 {
				t.Fatalf("trial %d: fixed %v: x_%d = %v", trial, fixed, k, x[k])
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d feasible fixed LPs", checked)
	}
}
