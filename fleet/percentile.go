package fleet

import (
	"math"
	"slices"
)

// Percentiles operators may choose for a pool's psi.
var Percentiles = []int{50, 90, 95, 99}

// DefaultPercentile and DefaultWindowDays are a pool's settings until an operator
// changes them: psi is the 95th percentile of used/capacity over the last 7 days.
const (
	DefaultPercentile = 95
	DefaultWindowDays = 7
	MaxWindowDays     = 14 // raw samples are kept this long
)

// Percentile is the p-th percentile (0 < p <= 100) of xs by the nearest-rank
// method: the smallest value with at least p% of the values at or below it, the
// ceil(p/100 * n)-th smallest. It sorts xs in place; NaN for no values.
func Percentile(xs []float64, p int) float64 {
	if len(xs) == 0 || p <= 0 || p > 100 {
		return math.NaN()
	}
	slices.Sort(xs)
	rank := (p*len(xs) + 99) / 100 // ceil(p n / 100), exact in integers
	return xs[max(rank, 1)-1]
}

// ratio is used over capacity, clamped to [0, 1] (a cluster may run above its
// configured capacity); ok is false for a pool with no capacity.
func ratio(used, capacity int64) (float64, bool) {
	if capacity <= 0 {
		return 0, false
	}
	return min(max(float64(used)/float64(capacity), 0), 1), true
}
