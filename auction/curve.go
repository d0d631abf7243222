package auction

import (
	"math"
	"sort"

	"github.com/clearhouse/clearhouse"
)

// CurveSpec describes a reserve-price weighting curve phi(psi), the factor by
// which a pool's unit cost is multiplied at utilization psi. It is what operators
// edit and what the database stores (as JSON).
//
//   - "parametric": phi(psi) = K^(psi^Gamma - Threshold^Gamma). phi is 1 at the
//     Threshold, phi(1) = K phi(0), and a larger Gamma makes it flatter at low
//     utilization and steeper near full.
//   - "points": operator-drawn points (psi, phi), from psi 0 to psi 1, joined by
//     straight lines. The threshold is where the curve crosses 1, and K is
//     phi(1)/phi(0).
type CurveSpec struct {
	Kind      string       `json:"kind"`
	K         float64      `json:"k,omitempty"`
	Threshold float64      `json:"threshold,omitempty"`
	Gamma     float64      `json:"gamma,omitempty"`
	Points    []CurvePoint `json:"points,omitempty"`
}

// CurvePoint is one operator-drawn point of a curve.
type CurvePoint struct {
	Psi float64 `json:"psi"`
	Phi float64 `json:"phi"`
}

// Curve is a validated weighting curve. Build one from a CurveSpec.
type Curve struct {
	spec   CurveSpec
	k, tau float64
}

// DefaultCurve is a reasonable starting curve: phi(0.8) = 1, phi(1) = 4 phi(0).
var DefaultCurve = CurveSpec{Kind: "parametric", K: 4, Threshold: 0.8, Gamma: 3}

// Build validates the spec and returns its curve. The curve must have DESIGN.md's
// five properties, checked here: monotonically increasing; above 1 for
// over-utilized pools (psi above the threshold) and at most 1 for under-utilized
// ones; a larger relative spread between 80% and 99% than between 15% and 40%
// (phi(0.99)/phi(0.80) > phi(0.40)/phi(0.15)); and phi(1) = K phi(0). Returns
// EINVALID naming the property that fails.
func (s CurveSpec) Build() (Curve, error) {
	bad := func(format string, args ...any) (Curve, error) {
		return Curve{}, clearhouse.Errorf(clearhouse.EINVALID, "curve: "+format, args...)
	}
	c := Curve{spec: s}
	switch s.Kind {
	case "parametric":
		switch {
		case !finite(s.K) || s.K <= 1 || s.K > 1e6:
			return bad("k must be more than 1 (phi(1) = k phi(0)), got %v", s.K)
		case !finite(s.Threshold) || s.Threshold <= 0 || s.Threshold >= 1:
			return bad("threshold must be strictly between 0 and 1, got %v", s.Threshold)
		case !finite(s.Gamma) || s.Gamma <= 0 || s.Gamma > 100:
			return bad("gamma must be a positive number up to 100, got %v", s.Gamma)
		}
		c.spec.Points = nil
		c.k, c.tau = s.K, s.Threshold
	case "points":
		pts := append([]CurvePoint(nil), s.Points...)
		sort.Slice(pts, func(i, j int) bool { return pts[i].Psi < pts[j].Psi })
		if len(pts) < 2 || pts[0].Psi != 0 || pts[len(pts)-1].Psi != 1 {
			return bad("points must run from psi 0 to psi 1")
		}
		for i, p := range pts {
			if !finite(p.Psi) || !finite(p.Phi) || p.Phi <= 0 || p.Phi > 1e6 {
				return bad("point %d: psi and phi must be numbers, phi positive", i)
			}
			if i > 0 && !(p.Phi > pts[i-1].Phi && p.Psi > pts[i-1].Psi) {
				return bad("must be increasing: phi(%v) = %v is not above phi(%v) = %v", p.Psi, p.Phi, pts[i-1].Psi, pts[i-1].Phi)
			}
		}
		if pts[0].Phi > 1 || pts[len(pts)-1].Phi <= 1 {
			return bad("must be at most 1 at psi 0 and above 1 at psi 1")
		}
		c.spec = CurveSpec{Kind: "points", Points: pts}
		c.k = pts[len(pts)-1].Phi / pts[0].Phi
		// The threshold is where the curve reaches 1.
		for i := 1; i < len(pts); i++ {
			if pts[i].Phi > 1 {
				a, b := pts[i-1], pts[i]
				c.tau = a.Psi + (1-a.Phi)*(b.Psi-a.Psi)/(b.Phi-a.Phi)
				break
			}
		}
	default:
		return bad("kind must be parametric or points, got %q", s.Kind)
	}
	if err := c.checkProperties(); err != nil {
		return Curve{}, err
	}
	return c, nil
}

func (c Curve) checkProperties() error {
	bad := func(format string, args ...any) error {
		return clearhouse.Errorf(clearhouse.EINVALID, "curve: "+format, args...)
	}
	const n = 1000
	prev := c.Phi(0)
	for i := 1; i <= n; i++ {
		psi := float64(i) / n
		phi := c.Phi(psi)
		if !(phi > prev) {
			return bad("must increase: phi(%.3f) = %v is not above phi(%.3f) = %v", psi, phi, float64(i-1)/n, prev)
		}
		if psi > c.tau+1e-9 && phi <= 1 {
			return bad("must be above 1 for over-utilized pools: phi(%.3f) = %v", psi, phi)
		}
		if psi < c.tau-1e-9 && phi > 1+1e-9 {
			return bad("must be at most 1 for under-utilized pools: phi(%.3f) = %v", psi, phi)
		}
		prev = phi
	}
	// Property 4 on relative spread: what the curve multiplies a price by from 80%
	// to 99% must exceed what it multiplies it by from 15% to 40%. Comparing
	// absolute slopes would let a curve that is tiny at low utilization pass while
	// it makes a move between two idle pools cost more, relatively, than a move
	// out of a congested one.
	high := c.Phi(0.99) / c.Phi(0.80)
	low := c.Phi(0.40) / c.Phi(0.15)
	if !(high > low) {
		return bad("moves between under-utilized pools would be pricier than moves out of congested ones: "+
			"phi(0.99)/phi(0.80) = %.4g must be more than phi(0.40)/phi(0.15) = %.4g (make the curve flatter at low utilization, e.g. a larger gamma or a smaller k)", high, low)
	}
	if r := c.Phi(1) / c.Phi(0); math.Abs(r-c.k) > 1e-9*c.k {
		return bad("phi(1) must be k phi(0): %v vs %v", r, c.k)
	}
	return nil
}

// Phi is the weight at utilization psi (clamped to [0, 1]).
func (c Curve) Phi(psi float64) float64 {
	psi = min(max(psi, 0), 1)
	if c.spec.Kind == "parametric" {
		return math.Pow(c.k, math.Pow(psi, c.spec.Gamma)-math.Pow(c.tau, c.spec.Gamma))
	}
	pts := c.spec.Points
	i := sort.Search(len(pts), func(i int) bool { return pts[i].Psi >= psi })
	if i == 0 {
		return pts[0].Phi
	}
	a, b := pts[i-1], pts[i]
	return a.Phi + (psi-a.Psi)*(b.Phi-a.Phi)/(b.Psi-a.Psi)
}

// K is phi(1)/phi(0).
func (c Curve) K() float64 { return c.k }

// Threshold is the utilization above which a pool counts as over-utilized.
func (c Curve) Threshold() float64 { return c.tau }

// Spec returns the curve's (normalized) spec.
func (c Curve) Spec() CurveSpec { return c.spec }

// Sample returns n+1 evenly spaced points of the curve, for plotting.
func (c Curve) Sample(n int) []CurvePoint {
	out := make([]CurvePoint, n+1)
	for i := range out {
		psi := float64(i) / float64(n)
		out[i] = CurvePoint{Psi: psi, Phi: c.Phi(psi)}
	}
	return out
}

// ReservePrice is a pool's reserve price: phi(utilization) times its unit cost.
// Returns EINVALID for a utilization outside [0, 1] or a negative or non-finite
// cost.
func ReservePrice(c Curve, utilization, cost float64) (float64, error) {
	if !finite(utilization) || utilization < 0 || utilization > 1 {
		return 0, clearhouse.Errorf(clearhouse.EINVALID, "utilization: must be between 0 and 1, got %v", utilization)
	}
	if !finite(cost) || cost < 0 {
		return 0, clearhouse.Errorf(clearhouse.EINVALID, "unit cost: must not be negative, got %v", cost)
	}
	if c.spec.Kind == "" {
		return 0, clearhouse.Errorf(clearhouse.EINVALID, "curve: not built; use CurveSpec.Build")
	}
	return c.Phi(utilization) * cost, nil
}
