package auction

import (
	"math"
	"time"
)

// lpStatus says how a linear program ended.
type lpStatus int

const (
	lpOptimal    lpStatus = iota
	lpInfeasible          // no x satisfies the constraints
	lpUnbounded           // the objective grows without limit (never for a bounded market)
	lpGaveUp              // iteration cap or deadline: the caller must not trust the value
)

// lpEps is the simplex's tolerance on reduced costs, pivots and feasibility; rows
// are scaled so their largest coefficient is 1, which makes one absolute tolerance
// meaningful.
const lpEps = 1e-9

// perturb is the relative amount lpMax raises right-hand sides by.
const perturb = 1e-7

// lpMax solves max c.x subject to A x <= b, x >= 0 with a dense two-phase tableau
// simplex: Dantzig's rule, falling back to Bland's rule after a run of degenerate
// pivots so it cannot cycle. A is m rows of n coefficients (not modified); b may
// have any sign. It returns the optimal x, the value c.x, and the duals y (one per
// row, y >= 0, with b.y = c.x at the optimum). gonum's lp.Simplex solves the same
// problem but refactors the basis every pivot (cubic per pivot); branch and bound
// solves hundreds of these, so this one pivots in place. A test checks the two
// agree.
func lpMax(A [][]float64, b, c []float64, deadline time.Time) (x []float64, val float64, y []float64, st lpStatus) {
	m, n := len(A), len(c)
	nArt := 0
	for _, bi := range b {
		if bi < 0 {
			nArt++
		}
	}
	w := n + m + nArt + 1 // structural, slack, artificial columns, right-hand side
	t := make([]float64, (m+1)*w)
	basis := make([]int, m)
	neg := make([]bool, m)
	art := n + m
	for i := range m {
		row := t[i*w : (i+1)*w]
		sign := 1.0
		if b[i] < 0 {
			sign, neg[i] = -1, true
		}
		for j, a := range A[i] {
			row[j] = sign * a
		}
		row[n+i] = sign
		// Raising each right-hand side by a distinct tiny amount breaks the ties that
		// make set-packing LPs degenerate (and Bland's rule slow). It only enlarges the
		// feasible set, so the value stays an upper bound on the unperturbed LP's.
		_, frac := math.Modf(float64(i) * 0.6180339887)
		row[w-1] = sign * (b[i] + perturb*(1+frac)*max(1, math.Abs(b[i])))
		if neg[i] {
			row[art] = 1
			basis[i] = art
			art++
		} else {
			basis[i] = n + i
		}
	}
	obj := t[m*w : (m+1)*w]
	limit := 50*(m+n) + 1000
	if nArt > 0 {
		// Phase 1: maximise minus the sum of the artificials.
		for j := n + m; j < n+m+nArt; j++ {
			obj[j] = 1
		}
		for i := range m {
			if neg[i] {
				row := t[i*w : (i+1)*w]
				for j := range obj {
					obj[j] -= row[j]
				}
			}
		}
		if s := simplexRun(t, w, m, basis, w-1, limit, deadline); s != lpOptimal {
			return nil, 0, nil, s
		}
		if obj[w-1] < -1e-7 {
			return nil, 0, nil, lpInfeasible
		}
		// Drive artificials at zero out of the basis; a row with no other nonzero is
		// redundant and keeps its artificial (at zero, it never enters again).
		for i := range m {
			if basis[i] < n+m {
				continue
			}
			row := t[i*w : (i+1)*w]
			for j := 0; j < n+m; j++ {
				if math.Abs(row[j]) > 1e-7 {
					pivot(t, w, m, i, j)
					basis[i] = j
					break
				}
			}
		}
	}
	// Phase 2: reduced costs of the true objective over the current basis.
	for j := range obj {
		obj[j] = 0
	}
	for j := range n {
		obj[j] = -c[j]
	}
	for i, bj := range basis {
		if bj < n && c[bj] != 0 {
			row := t[i*w : (i+1)*w]
			for j := range obj {
				obj[j] += c[bj] * row[j]
			}
		}
	}
	if s := simplexRun(t, w, m, basis, n+m, limit, deadline); s != lpOptimal {
		return nil, 0, nil, s
	}
	x = make([]float64, n)
	for i, bj := range basis {
		if bj < n {
			x[bj] = max(t[i*w+w-1], 0)
		}
	}
	for j := range n {
		val += c[j] * x[j]
	}
	y = make([]float64, m)
	for i := range m {
		d := obj[n+i]
		if neg[i] {
			d = -d
		}
		y[i] = max(d, 0)
	}
	return x, val, y, lpOptimal
}

// simplexRun pivots the tableau to optimality, letting only columns below enter
// enter the basis.
func simplexRun(t []float64, w, m int, basis []int, enter, limit int, deadline time.Time) lpStatus {
	obj := t[m*w : (m+1)*w]
	degenerate := 0
	for it := 0; ; it++ {
		if it >= limit {
			return lpGaveUp
		}
		if it&63 == 63 && !deadline.IsZero() && time.Now().After(deadline) {
			return lpGaveUp
		}
		bland := degenerate > 50
		e := -1
		best := -lpEps
		for j := range enter {
			if obj[j] < best {
				e, best = j, obj[j]
				if bland {
					break
				}
			}
		}
		if e < 0 {
			return lpOptimal
		}
		r, ratio := -1, math.Inf(1)
		for i := range m {
			a := t[i*w+e]
			if a <= lpEps {
				continue
			}
			q := t[i*w+w-1] / a
			if q < ratio-1e-12 || (q <= ratio+1e-12 && r >= 0 && basis[i] < basis[r]) {
				r, ratio = i, q
			}
		}
		if r < 0 {
			return lpUnbounded
		}
		if ratio <= 1e-12 {
			degenerate++
		} else {
			degenerate = 0
		}
		pivot(t, w, m, r, e)
		basis[r] = e
	}
}

// pivot makes column e basic in row r, eliminating it from every other row and the
// objective row (row m).
func pivot(t []float64, w, m, r, e int) {
	pr := t[r*w : (r+1)*w]
	inv := 1 / pr[e]
	nz := make([]int32, 0, 64) // the pivot row's nonzero columns: rows stay sparse
	for j := range pr {
		if pr[j] != 0 {
			pr[j] *= inv
			nz = append(nz, int32(j))
		}
	}
	pr[e] = 1
	for i := 0; i <= m; i++ {
		if i == r {
			continue
		}
		row := t[i*w : (i+1)*w]
		f := row[e]
		if f == 0 {
			continue
		}
		for _, j := range nz {
			row[j] -= f * pr[j]
		}
		row[e] = 0
	}
}
