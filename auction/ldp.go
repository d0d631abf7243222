package auction

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// nnls solves min ||E u - f|| subject to u >= 0 by Lawson and Hanson's active-set
// algorithm ("Solving Least Squares Problems", 1974, chapter 23): a finite method
// that moves one column at a time into the passive set and solves an unconstrained
// least-squares problem on it. E is given by its columns (each of len(f)). ok is
// false when a least-squares step is singular or the iteration cap is reached.
func nnls(cols [][]float64, f []float64) (u []float64, ok bool) {
	m, n := len(f), len(cols)
	u = make([]float64, n)
	passive := make([]bool, n)
	resid := func(x []float64) []float64 {
		r := make([]float64, m)
		copy(r, f)
		for j, c := range cols {
			if x[j] != 0 {
				for i := range r {
					r[i] -= c[i] * x[j]
				}
			}
		}
		return r
	}
	scale := 0.0
	for _, c := range cols {
		for _, v := range c {
			scale = max(scale, math.Abs(v))
		}
	}
	for _, v := range f {
		scale = max(scale, math.Abs(v))
	}
	tol := 1e-12 * max(scale, 1) * max(scale, 1) * float64(m)
	for iter := 0; iter < 3*n+10; iter++ {
		r := resid(u)
		best, t := tol, -1
		for j, c := range cols {
			if passive[j] {
				continue
			}
			w := 0.0
			for i := range r {
				w += c[i] * r[i]
			}
			if w > best {
				best, t = w, j
			}
		}
		if t < 0 {
			return u, true
		}
		passive[t] = true
		for inner := 0; ; inner++ {
			if inner > 3*n+10 {
				return nil, false
			}
			z, ok := lsPassive(cols, f, passive)
			if !ok {
				return nil, false
			}
			alpha, blocked := 1.0, false
			for j := range z {
				if passive[j] && z[j] <= 0 {
					if a := u[j] / (u[j] - z[j]); a < alpha || !blocked {
						alpha, blocked = a, true
					}
				}
			}
			if !blocked {
				u = z
				break
			}
			for j := range u {
				if passive[j] {
					u[j] += alpha * (z[j] - u[j])
					if u[j] <= 1e-15*max(1, scale) {
						u[j], passive[j] = 0, false
					}
				}
			}
		}
	}
	return nil, false
}

// lsPassive solves min ||E_P z - f|| over the passive columns (z is 0 elsewhere)
// by gonum's QR-based least squares.
func lsPassive(cols [][]float64, f []float64, passive []bool) ([]float64, bool) {
	var idx []int
	for j, p := range passive {
		if p {
			idx = append(idx, j)
		}
	}
	m := len(f)
	if len(idx) > m {
		return nil, false
	}
	a := mat.NewDense(m, len(idx), nil)
	for k, j := range idx {
		for i := range m {
			a.Set(i, k, cols[j][i])
		}
	}
	var x mat.Dense
	if err := x.Solve(a, mat.NewDense(m, 1, append([]float64(nil), f...))); err != nil {
		return nil, false
	}
	z := make([]float64, len(passive))
	for k, j := range idx {
		z[j] = x.At(k, 0)
		if !finite(z[j]) {
			return nil, false
		}
	}
	return z, true
}

// ldp solves least-distance programming, min ||d|| subject to G d >= h (G is
// given by its rows), by Lawson and Hanson's reduction to nnls (chapter 23,
// algorithm LDP): with E = [G^T; h^T] and f = (0, ..., 0, 1), the residual r = E u
// - f of the nnls solution u gives d = -r[:n] / r[n]; r = 0 means G d >= h has no
// solution. The reduction is exact: ldp is as exact as nnls's least-squares steps.
// ok is false when the constraints are infeasible or nnls failed; a d it returns
// satisfies every constraint (to 1e-9 relative), which ldp checks.
func ldp(G [][]float64, h []float64, n int) (d []float64, ok bool) {
	// Solve for d / s, with s the largest |h_k|, so that h's scale matches f's 1.
	s := 0.0
	for _, v := range h {
		s = max(s, math.Abs(v))
	}
	if s == 0 {
		return make([]float64, n), true // d = 0 is feasible and the nearest
	}
	cols := make([][]float64, len(G))
	for k, row := range G {
		c := make([]float64, n+1)
		copy(c, row)
		c[n] = h[k] / s
		cols[k] = c
	}
	f := make([]float64, n+1)
	f[n] = 1
	u, ok := nnls(cols, f)
	if !ok {
		return nil, false
	}
	r := make([]float64, n+1)
	copy(r, f)
	r[n] = -1
	for k, c := range cols {
		for i := range r {
			r[i] += c[i] * u[k]
		}
	}
	norm := 0.0
	for _, v := range r {
		norm += v * v
	}
	if math.Sqrt(norm) < 1e-9 || r[n] >= 0 {
		return nil, false
	}
	d = make([]float64, n)
	for i := range d {
		d[i] = -s * r[i] / r[n]
	}
	// Near-infeasible systems leave a tiny residual that passes the test above
	// and gives a point far outside: check the point itself.
	for k, row := range G {
		v, scale := 0.0, math.Abs(h[k])
		for i, g := range row {
			v += g * d[i]
			scale += math.Abs(g * d[i])
		}
		if v < h[k]-1e-9*max(1, scale) {
			return nil, false
		}
	}
	return d, true
}
