package sharing

import "math"

// attribute splits w units of a new task over lenders with idle units (slack): the
// task's own team first (own, -1 when the team is no lender here), then every other
// lender with idle units in proportion to them. It writes the units per lender into
// out, lowers slack by them, and never gives a lender more than its idle units while
// the lenders together have w idle units.
func attribute(slack []float64, own int, w float64, out []float64) {
	clear(out)
	rest := w
	if own >= 0 && slack[own] > 0 {
		take := min(slack[own], rest)
		out[own], slack[own], rest = take, slack[own]-take, rest-take
	}
	if rest <= 0 {
		return
	}
	spread(slack, own, rest, func(k int, x float64) { out[k] += x })
}

// spread hands m units to the lenders other than exclude in proportion to their idle
// units, lowering their slack and calling give for each share. With no lender idle it
// hands all of m to the lender with the most slack (or the first), so units are never
// lost.
func spread(slack []float64, exclude int, m float64, give func(k int, x float64)) {
	sum := 0.0
	for k, s := range slack {
		if k != exclude && s > 0 {
			sum += s
		}
	}
	if sum <= 0 {
		best := -1
		for k, s := range slack {
			if k != exclude && (best < 0 || s > slack[best]) {
				best = k
			}
		}
		if best < 0 {
			best = max(exclude, 0)
		}
		slack[best] -= m
		give(best, m)
		return
	}
	for k, s := range slack {
		if k != exclude && s > 0 {
			x := m * s / sum
			slack[k] -= x
			give(k, x)
		}
	}
}

// eps is the engine's tolerance on fractional units.
const eps = 1e-9

// floorUnits is the whole units in x, forgiving rounding just below an integer.
func floorUnits(x float64) int64 { return int64(math.Floor(x + eps)) }
