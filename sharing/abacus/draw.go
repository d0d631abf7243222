package abacus

import "math/rand/v2"

// DrawForResource is Abacus's scheduler for one resource (section 3: "There are m
// resource request queues maintained in Abacus. Each queue Q_j stores the running
// jobs currently waiting for the resource of type j. [...] when a particular
// resource of type j is available for a new task, Abacus assigns the resource to
// job J_i with probability s_ij"): it returns the index of the job a freed unit of
// resource j goes to, job i with probability shares[i] (its s_ij) over the total
// share of the jobs in the queue (eligible: waiting for the resource and able to
// take the unit now). It returns -1 when no job is eligible, and the first
// eligible job when every eligible share is zero (what is left is used, not
// wasted). A job's long-run fraction of the units is its s_ij when the shares of
// the jobs always waiting sum to 1 (TestDrawsConvergeToTheShares).
func DrawForResource(shares []float64, eligible func(i int) bool, rng *rand.Rand) int {
	total, first := 0.0, -1
	for i, s := range shares {
		if eligible(i) {
			if first < 0 {
				first = i
			}
			if s > 0 {
				total += s
			}
		}
	}
	if first < 0 || total <= 0 {
		return first
	}
	x := rng.Float64() * total
	last := first
	for i, s := range shares {
		if s > 0 && eligible(i) {
			last = i
			if x -= s; x < 0 {
				return i
			}
		}
	}
	return last
}
