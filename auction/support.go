package auction

import (
	"math"
	"time"
)

// maxSupportTableau is the largest tableau (rows x columns) the supporting-price
// LP builds; larger markets get no supporting prices (FinalRound.Prices nil).
const maxSupportTableau = 4_000_000

// unsupportedBy says whether prices that fail to support a bidder by v (dollars)
// fail it beyond the tolerance: a micro-dollar per dollar of its limit, at least one
// (the LP's own perturbation is about 1e-7). The prices are whole micro-dollars, and
// so are a market's limits, so a violation is a whole number of micro-dollars but for
// its sum's rounding: it is rounded to the micro-dollar first, so that one exactly at
// the tolerance (2 micro-dollars on a $2 limit) counts as supported every time, not
// as unsupported when the sum's last bit falls above it.
func unsupportedBy(v, limit float64) bool {
	return math.Round(v*microsPerDollar) > max(1, math.Abs(limit))
}

// supportingPrices returns linear per-pool prices that support the allocation
// choice (a bundle index per bidder, or -1) as well as possible, and the bidders
// they fail to support. A winner is supported when, at the prices, its bundle
// costs at most its limit and leaves it at least the surplus of any of its other
// bundles; a loser when every one of its bundles costs at least its limit. The
// prices minimise the total violation, sum over bidders of e_j, the least amount
// by which bidder j's conditions fail (Bichler, Shabalin and Pikovsky's
// minimum-violation prices), with prices at or above reserve, and among those
// lean to the lower ones (a weight of 1e-9 on their sum). Total violation 0 means
// the prices support the allocation exactly, which happens exactly when the
// allocation is an optimum of the winner determination's LP relaxation
// (Bikhchandani and Mamer 1997); otherwise some bidder must be left unsupported.
// ok is false when the LP is too large (maxSupportTableau) or gave up.
func (c *clock) supportingPrices(choice []int, deadline time.Time) (price []float64, unsupported []int, ok bool) {
	np := len(c.ids)
	// Losers whose every bundle only buys and is worth no more than its reserve
	// value are supported by any prices at or above reserve: they need no row.
	var bidders []int
	rows := 0
	for bi := range c.bidders {
		if choice[bi] >= 0 || c.couldWantAtReserve(bi) {
			bidders = append(bidders, bi)
			rows += len(c.bidders[bi].bundles)
		}
	}
	cols := np + len(bidders)
	if rows*(cols+2*rows) > maxSupportTableau {
		return nil, nil, false
	}
	// Variables: y_r = p_r - reserve_r >= 0, then e_j >= 0 per bidder. Rows A x <= b.
	var A [][]float64
	var b []float64
	row := func() []float64 { return make([]float64, cols) }
	for e, bi := range bidders {
		bd := &c.bidders[bi]
		ev := np + e
		if k := choice[bi]; k >= 0 {
			// IR: q_k . p - e <= l_k.
			r := row()
			rhs := bd.limits[k]
			for _, it := range bd.bundles[k] {
				r[it.pool] += it.q
				rhs -= it.q * c.reserve[it.pool]
			}
			r[ev] = -1
			A, b = append(A, r), append(b, rhs)
			// Envy-free: (q_k - q_m) . p - e <= l_k - l_m for every other bundle m.
			for m := range bd.bundles {
				if m == k {
					continue
				}
				r := row()
				rhs := bd.limits[k] - bd.limits[m]
				for _, it := range bd.bundles[k] {
					r[it.pool] += it.q
					rhs -= it.q * c.reserve[it.pool]
				}
				for _, it := range bd.bundles[m] {
					r[it.pool] -= it.q
					rhs += it.q * c.reserve[it.pool]
				}
				r[ev] = -1
				A, b = append(A, r), append(b, rhs)
			}
			continue
		}
		// A loser: l_m - q_m . p <= e for every bundle m.
		for m := range bd.bundles {
			r := row()
			rhs := -bd.limits[m]
			for _, it := range bd.bundles[m] {
				r[it.pool] -= it.q
				rhs += it.q * c.reserve[it.pool]
			}
			r[ev] = -1
			A, b = append(A, r), append(b, rhs)
		}
	}
	// Scale each row to a largest coefficient of 1, as the round's LPs are.
	for i, r := range A {
		s := 0.0
		for _, v := range r {
			s = max(s, math.Abs(v))
		}
		if s > 0 {
			for j := range r {
				r[j] /= s
			}
			b[i] /= s
		}
	}
	obj := make([]float64, cols)
	for j := range np {
		obj[j] = -1e-9
	}
	for j := np; j < cols; j++ {
		obj[j] = -1
	}
	s, st := lpSolve(A, b, obj, deadline)
	if st != lpOptimal {
		return nil, nil, false
	}
	// The optimal basis's own vertex, without the LP's perturbation (which moved
	// prices by a few micro-dollars: $105.000027 for $105), in whole micro-dollars,
	// as settlement stores them; the lists below are checked at these very prices.
	x := s.solutionAt(b)
	price = make([]float64, np)
	for r := range price {
		price[r] = max(math.Round((c.reserve[r]+x[r])*microsPerDollar)/microsPerDollar, c.reserve[r])
	}
	for _, bi := range bidders {
		if unsupportedBy(c.violation(bi, choice[bi], price), c.bidders[bi].limits[max(choice[bi], 0)]) {
			unsupported = append(unsupported, bi)
		}
	}
	return price, unsupported, true
}

// violation is how far prices fail to support bidder bi holding bundle k (-1:
// losing): for a winner, the most by which its bundle costs more than its limit
// or another bundle leaves it more surplus; for a loser, the most by which a
// bundle costs less than its limit. 0 when supported.
func (c *clock) violation(bi, k int, price []float64) float64 {
	bd := &c.bidders[bi]
	surplus := func(m int) float64 {
		s := bd.limits[m]
		for _, it := range bd.bundles[m] {
			s -= it.q * price[it.pool]
		}
		return s
	}
	best := 0.0
	for m := range bd.bundles {
		best = max(best, surplus(m))
	}
	if k < 0 {
		return best
	}
	return best - surplus(k)
}

// couldWantAtReserve reports whether some bundle of bidder bi sells, or buys and
// is worth more than its reserve value: whether prices at reserve might fail to
// support it losing.
func (c *clock) couldWantAtReserve(bi int) bool {
	bd := &c.bidders[bi]
	for m, items := range bd.bundles {
		w := bd.limits[m]
		for _, it := range items {
			if it.q < 0 {
				return true
			}
			w -= it.q * c.reserve[it.pool]
		}
		if w > 0 {
			return true
		}
	}
	return false
}
