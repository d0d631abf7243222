package auction

import (
	"math"
	"slices"
	"sync"
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
	// shift is where fix moved a column's origin: x_k = shift[k] + the tableau's
	// x_k (nil while no column is fixed at a value other than 0).
	shift []float64
	nz    []int32   // pivot's buffers: the pivot row's nonzero columns,
	vals  []float64 // and their values
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

// lpMaxDual solves max c.x subject to A x <= b, x >= 0 as lpMax does (the
// same perturbed right-hand sides, so the same optimal value), for c <= 0
// only, without the duals: x = 0 is then optimal for the objective, so the
// slack basis is dual feasible and the dual simplex solves the LP from it,
// without lpSolve's first phase and its artificial per negative right-hand
// side. The core step's least-revenue LP (corePoint.leastRevenue) is one:
// minimise the revenue, every cost -1, most rows with a negative right-hand
// side. Where the optimum is not unique, x may be another optimal vertex
// than lpMax's. A positive cost gives lpGaveUp.
func lpMaxDual(A [][]float64, b, c []float64, deadline time.Time) (x []float64, val float64, st lpStatus) {
	m, n := len(A), len(c)
	w := n + m + 1
	s := &lp{t: make([]float64, (m+1)*w), w: w, m: m, n: n, basis: make([]int, m), blocked: make([]bool, w-1), c: c}
	for i := range m {
		row := s.row(i)
		copy(row, A[i])
		row[n+i] = 1
		_, frac := math.Modf(float64(i) * 0.6180339887)
		row[w-1] = b[i] + perturb*(1+frac)*max(1, math.Abs(b[i]))
		s.basis[i] = n + i
	}
	obj := s.row(m)
	for j, cj := range c {
		if cj > 0 {
			return nil, 0, lpGaveUp // not dual feasible: lpMax's LP, not this one's
		}
		obj[j] = -cj
	}
	if st := s.dual(deadline); st != lpOptimal {
		return nil, 0, st
	}
	x, val = s.solution()
	return x, val, lpOptimal
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
	for j, v := range s.shift {
		x[j] += v
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
// (the basis was optimal only perturbed) is taken as 0. s is lpSolve's, no
// column fixed (fix).
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
		// Dual steepest edge: the row whose infeasibility is largest against the
		// norm of its row of B^-1 (the slack columns hold it), computed afresh for
		// the few infeasible rows (Forrest and Goldfarb 1992).
		r, best := -1, 0.0
		for i := range m {
			v := s.t[i*w+w-1]
			if v >= -1e-9 {
				continue
			}
			norm := 0.0
			for _, a := range s.t[i*w+s.n : i*w+s.n+m] {
				norm += a * a
			}
			if score := v * v / norm; score > best {
				r, best = i, score
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

// clone returns a copy of s that shares nothing it may modify with s (c, which
// no method writes, is shared). Its tableau reuses one that branch and bound
// gave back (recycle) where one is large enough.
func (s *lp) clone() *lp {
	t := takeTableau(len(s.t))
	copy(t, s.t)
	return &lp{t: t, w: s.w, m: s.m, n: s.n, basis: slices.Clone(s.basis),
		blocked: slices.Clone(s.blocked), c: s.c, shift: slices.Clone(s.shift)}
}

// tableaux holds tableaux branch and bound no longer uses (recycle), for
// clone to copy into. A payment solve's search copies a tableau of about a
// megabyte at most of its branchings; freshly allocated, each copy faulted
// its pages in from the operating system (CATS matching 96x450's core step:
// 800,000 minor page faults, most of its 2 s of system time), while a
// recycled one is already mapped. The pool holds nothing past two garbage
// collections.
var tableaux sync.Pool // of *[]float64

// takeTableau returns a tableau of n entries (their values are overwritten by
// the caller): a recycled one when one of that size or larger is at hand.
func takeTableau(n int) []float64 {
	if t, ok := tableaux.Get().(*[]float64); ok && cap(*t) >= n {
		return (*t)[:n]
	}
	return make([]float64, n)
}

// recycle gives s's tableau back for a later clone. The caller holds the
// only reference to s and does not use it again (its tableau is nil after).
func (s *lp) recycle() {
	if s == nil || s.t == nil {
		return
	}
	t := s.t
	s.t = nil
	tableaux.Put(&t)
}

// fix fixes x_k at v in the optimal tableau s, in place, and re-solves it with the
// dual simplex: branch and bound's child with a column fixed in (v = 1) or out
// (v = 0). The tableau keeps its size (no row is added, as the bound's row would):
// x_k is replaced by v + x'_k, which moves v times column k to the right-hand
// sides (and v c_k to the objective's value, s.shift keeping v for the
// solution), and x'_k, fixed at 0, is taken out of the basis and blocked. Where
// x_k <= 1 holds (every column of a node's LP is bounded by 1 by its bidder's or
// a pool's row), fixing it at 1 is adding the row x_k >= 1. On lpInfeasible s
// is left part-pivoted, of no further use.
func (s *lp) fix(k int, v float64, deadline time.Time) lpStatus {
	m, w := s.m, s.w
	if v != 0 {
		if s.shift == nil {
			s.shift = make([]float64, s.n)
		}
		s.shift[k] += v
		for i := 0; i <= m; i++ {
			s.t[i*w+w-1] -= v * s.t[i*w+k]
		}
	}
	s.blocked[k] = true
	r := slices.Index(s.basis, k)
	if r >= 0 {
		// x'_k is basic in row r at rhs; make it non-basic (at 0) with one dual
		// simplex pivot: an entering column whose entry in row r has rhs's sign
		// (moving x'_k towards 0), by least ratio, so that the reduced costs stay
		// optimal. At rhs 0 either sign does.
		row, obj := s.row(r), s.row(m)
		rhs := row[w-1]
		signs := []float64{1, -1}
		if rhs > lpEps {
			signs = signs[:1]
		} else if rhs < -lpEps {
			signs = signs[1:]
		}
		e := -1
		for _, sign := range signs {
			ratio, pivotSize := math.Inf(1), 0.0
			for j := range w - 1 {
				if a := sign * row[j]; a > lpEps && !s.blocked[j] {
					if q := max(obj[j], 0) / a; q < ratio-1e-12 || (q <= ratio+1e-12 && a > pivotSize) {
						e, ratio, pivotSize = j, min(q, ratio), a
					}
				}
			}
			if e >= 0 {
				break
			}
		}
		if e < 0 {
			if math.Abs(rhs) > lpEps {
				return lpInfeasible // x'_k cannot move towards 0
			}
			// x'_k's row has no entry that may move: it stays basic at 0.
		} else {
			s.pivot(r, e)
		}
	}
	return s.dual(deadline)
}

// pivot makes column e basic in row r, eliminating it from every other row and the
// objective row.
func (s *lp) pivot(r, e int) {
	w := s.w
	pr := s.row(r)
	inv := 1 / pr[e]
	// The pivot row's nonzero columns and their values (rows stay sparse),
	// leaving out blocked columns: they never enter again, and no step reads
	// them (fix reads only the column it fixes, before blocking it; a blocked
	// column still basic keeps its unit column, whose entry in r is 0), so their
	// entries are not kept up to date. In branch and bound's deep nodes, where
	// reduced-cost fixing has blocked many columns, this is half of each pivot.
	nz, vals := s.nz[:0], s.vals[:0]
	blocked := s.blocked[:w-1]
	for j, v := range pr[:w-1] {
		if v != 0 && !blocked[j] {
			pr[j] = v * inv
			nz, vals = append(nz, int32(j)), append(vals, pr[j])
		}
	}
	if v := pr[w-1]; v != 0 {
		pr[w-1] = v * inv
		nz, vals = append(nz, int32(w-1)), append(vals, pr[w-1])
	}
	s.nz, s.vals = nz, vals
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
		vals := vals[:len(nz)]
		for q, j := range nz {
			row[j] -= f * vals[q]
		}
		row[e] = 0
	}
	s.basis[r] = e
}
