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

// perturb is the relative amount the right-hand sides are raised by.
const perturb = 1e-7

// lp is a dense simplex tableau for max c.x subject to A x <= b, x >= 0: m rows of
// w columns (n structural, one slack per row, phase-one artificials, and the
// right-hand side last), then the objective row of reduced costs, whose last entry
// is the objective's value. gonum's lp.Simplex solves the same problem but
// refactors the basis every pivot (cubic per pivot); branch and bound solves
// hundreds of these and re-solves a child from its parent's tableau, so this one
// pivots in place. A test checks the two agree.
type lp struct {
	t       []float64
	w, m, n int
	basis   []int
	blocked []bool // columns that may not enter (artificials after phase one)
	c       []float64
}

func (s *lp) row(i int) []float64 { return s.t[i*s.w : (i+1)*s.w] }

// lpMax solves max c.x subject to A x <= b, x >= 0 (A is m rows of n coefficients,
// not modified; b may have any sign) and returns the optimal x, its value c.x, and
// the duals y (one per row, y >= 0, b.y = c.x at the optimum).
func lpMax(A [][]float64, b, c []float64, deadline time.Time) (x []float64, val float64, y []float64, st lpStatus) {
	s, st := lpSolve(A, b, c, deadline)
	if st != lpOptimal {
		return nil, 0, nil, st
	}
	x, val = s.solution()
	y = make([]float64, s.m)
	obj := s.row(s.m)
	for i := range s.m {
		d := obj[s.n+i]
		if b[i] < 0 {
			d = -d
		}
		y[i] = max(d, 0)
	}
	return x, val, y, lpOptimal
}

// lpSolve builds the tableau and solves it with the two-phase primal simplex:
// Dantzig's rule, falling back to Bland's after a run of degenerate pivots so it
// cannot cycle. Each right-hand side is first raised by a distinct tiny amount,
// which breaks the ties that make set-packing LPs degenerate; that only enlarges
// the feasible set, so the value stays an upper bound on the unperturbed LP's.
func lpSolve(A [][]float64, b, c []float64, deadline time.Time) (*lp, lpStatus) {
	m, n := len(A), len(c)
	nArt := 0
	for _, bi := range b {
		if bi < 0 {
			nArt++
		}
	}
	w := n + m + nArt + 1
	s := &lp{t: make([]float64, (m+1)*w), w: w, m: m, n: n, basis: make([]int, m), blocked: make([]bool, w-1), c: c}
	neg := make([]bool, m)
	art := n + m
	for i := range m {
		row := s.row(i)
		sign := 1.0
		if b[i] < 0 {
			sign, neg[i] = -1, true
		}
		for j, a := range A[i] {
			row[j] = sign * a
		}
		row[n+i] = sign
		_, frac := math.Modf(float64(i) * 0.6180339887)
		row[w-1] = sign * (b[i] + perturb*(1+frac)*max(1, math.Abs(b[i])))
		if neg[i] {
			row[art] = 1
			s.basis[i] = art
			art++
		} else {
			s.basis[i] = n + i
		}
	}
	obj := s.row(m)
	if nArt > 0 {
		// Phase 1: maximise minus the sum of the artificials.
		for j := n + m; j < n+m+nArt; j++ {
			obj[j] = 1
		}
		for i := range m {
			if neg[i] {
				row := s.row(i)
				for j := range obj {
					obj[j] -= row[j]
				}
			}
		}
		if st := s.primal(deadline); st != lpOptimal {
			return nil, st
		}
		if obj[w-1] < -1e-7 {
			return nil, lpInfeasible
		}
		// Drive artificials at zero out of the basis; a row with no other nonzero is
		// redundant and keeps its artificial (at zero; it never enters again).
		for i := range m {
			if s.basis[i] < n+m {
				continue
			}
			row := s.row(i)
			for j := 0; j < n+m; j++ {
				if math.Abs(row[j]) > 1e-7 {
					s.pivot(i, j)
					break
				}
			}
		}
		for j := n + m; j < n+m+nArt; j++ {
			s.blocked[j] = true
		}
	}
	// Phase 2: reduced costs of the true objective over the current basis.
	for j := range obj {
		obj[j] = 0
	}
	for j := range n {
		obj[j] = -c[j]
	}
	for i, bj := range s.basis {
		if bj < n && c[bj] != 0 {
			row := s.row(i)
			for j := range obj {
				obj[j] += c[bj] * row[j]
			}
		}
	}
	if st := s.primal(deadline); st != lpOptimal {
		return nil, st
	}
	return s, lpOptimal
}

// solution returns x and c.x.
func (s *lp) solution() ([]float64, float64) {
	x := make([]float64, s.n)
	for i, bj := range s.basis {
		if bj < s.n {
			x[bj] = max(s.t[i*s.w+s.w-1], 0)
		}
	}
	val := 0.0
	for j, v := range x {
		val += s.c[j] * v
	}
	return x, val
}

// solutionAt returns x at the optimal basis's vertex for right-hand sides b (the
// ones lpSolve was given), without the perturbation that broke ties: the slack
// columns of the tableau hold B^-1 (each times its row's sign, as built), so the
// basic columns are that times b. Where the perturbation only separated tied
// vertices this is the exact optimum; a basic value that b would make negative
// (the basis was optimal only perturbed) is taken as 0.
func (s *lp) solutionAt(b []float64) []float64 {
	x := make([]float64, s.n)
	for i, bj := range s.basis {
		if bj >= s.n {
			continue
		}
		row := s.row(i)
		v := 0.0
		for k, bk := range b {
			v += row[s.n+k] * bk
		}
		x[bj] = max(v, 0)
	}
	return x
}

func (s *lp) limit() int { return 50*(s.m+s.n) + 1000 }

// primal pivots the tableau to optimality.
func (s *lp) primal(deadline time.Time) lpStatus {
	m, w := s.m, s.w
	obj := s.row(m)
	degenerate := 0
	for it := 0; ; it++ {
		if it >= s.limit() || (it&63 == 63 && !deadline.IsZero() && time.Now().After(deadline)) {
			return lpGaveUp
		}
		bland := degenerate > 50
		e, best := -1, -lpEps
		for j := range w - 1 {
			if obj[j] < best && !s.blocked[j] {
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
			a := s.t[i*w+e]
			if a <= lpEps {
				continue
			}
			q := s.t[i*w+w-1] / a
			if q < ratio-1e-12 || (q <= ratio+1e-12 && r >= 0 && s.basis[i] < s.basis[r]) {
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
		s.pivot(r, e)
	}
}

// dual restores primal feasibility with the dual simplex, from a tableau whose
// reduced costs are all optimal (as after adding a row to an optimal tableau).
func (s *lp) dual(deadline time.Time) lpStatus {
	m, w := s.m, s.w
	obj := s.row(m)
	for it := 0; ; it++ {
		if it >= s.limit() || (it&63 == 63 && !deadline.IsZero() && time.Now().After(deadline)) {
			return lpGaveUp
		}
		r, worst := -1, -1e-9
		for i := range m {
			if v := s.t[i*w+w-1]; v < worst {
				r, worst = i, v
			}
		}
		if r < 0 {
			return s.primal(deadline) // clean up reduced costs left slightly negative
		}
		row := s.row(r)
		e, ratio, pivotSize := -1, math.Inf(1), 0.0
		for j := range w - 1 {
			if a := row[j]; a < -lpEps && !s.blocked[j] {
				// Least ratio; among ties, the largest pivot (Harris's idea, without
				// the relaxed tolerance), which keeps degenerate dual steps stable.
				if q := max(obj[j], 0) / -a; q < ratio-1e-12 || (q <= ratio+1e-12 && -a > pivotSize) {
					e, ratio, pivotSize = j, min(q, ratio), -a
				}
			}
		}
		if e < 0 {
			return lpInfeasible
		}
		s.pivot(r, e)
	}
}

// atLeast returns a copy of the optimal tableau s with the row x_k >= bound added,
// re-solved with the dual simplex; atMost the same with x_k <= bound. s is not
// modified.
func (s *lp) atLeast(k int, bound float64, deadline time.Time) (*lp, lpStatus) {
	return s.withBound(k, -1, bound, deadline)
}

func (s *lp) atMost(k int, bound float64, deadline time.Time) (*lp, lpStatus) {
	return s.withBound(k, 1, bound, deadline)
}

// withBound adds sigma x_k + slack = sigma bound (sigma -1: x_k >= bound; +1:
// x_k <= bound) to a copy of the optimal tableau and restores feasibility with the
// dual simplex.
func (s *lp) withBound(k int, sigma, bound float64, deadline time.Time) (*lp, lpStatus) {
	m, w := s.m+1, s.w+1
	u := &lp{t: make([]float64, (m+1)*w), w: w, m: m, n: s.n, basis: make([]int, m), c: s.c}
	u.blocked = append(append(make([]bool, 0, w-1), s.blocked...), false)
	for i := 0; i <= s.m; i++ { // old rows, a zero for the new slack, then the rhs
		to := i
		if i == s.m {
			to = m // the objective row stays last
		}
		old, row := s.row(i), u.row(to)
		copy(row[:w-2], old[:s.w-1])
		row[w-1] = old[s.w-1]
	}
	copy(u.basis, s.basis)
	// The new row in terms of the non-basic variables: where x_k is basic in row i
	// (x_k + alpha . x_N = beta), substitute it.
	nr := u.row(m - 1)
	for i := range nr {
		nr[i] = 0
	}
	nr[k], nr[w-2], nr[w-1] = sigma, 1, sigma*bound
	for i, bj := range s.basis {
		if bj == k {
			src := u.row(i)
			for j := range nr {
				nr[j] -= sigma * src[j]
			}
			nr[k], nr[w-2] = 0, 1
		}
	}
	u.basis[m-1] = w - 2
	st := u.dual(deadline)
	if st != lpOptimal {
		return nil, st
	}
	return u, lpOptimal
}

// pivot makes column e basic in row r, eliminating it from every other row and the
// objective row.
func (s *lp) pivot(r, e int) {
	w := s.w
	pr := s.row(r)
	inv := 1 / pr[e]
	nz := make([]int32, 0, 64) // the pivot row's nonzero columns: rows stay sparse
	for j := range pr {
		if pr[j] != 0 {
			pr[j] *= inv
			nz = append(nz, int32(j))
		}
	}
	pr[e] = 1
	for i := 0; i <= s.m; i++ {
		if i == r {
			continue
		}
		row := s.t[i*w : (i+1)*w]
		f := row[e]
		if f == 0 {
			continue
		}
		for _, j := range nz {
			row[j] -= f * pr[j]
		}
		row[e] = 0
	}
	s.basis[r] = e
}
