package abacus

import (
	"maps"
	"math"
	"slices"
)

// Rotation deals the freed units of one pool to jobs in proportion to their shares of
// the pool: a smooth weighted round robin. Every job holds a credit; to deal a unit,
// every eligible job's credit grows by its share, the job with the most credit (ties:
// the smallest id) gets the unit, and its credit falls by the eligible jobs' total
// share.
//
// Why deterministic rather than a draw with probability s_ij: a scheduler that hands
// out a few units on every agent poll wants each job's count to track its share
// closely over short runs, not only in the long run. With always-eligible jobs whose
// shares sum to 1, a job's count after n units is n s_ij minus its credit: it never
// exceeds n s_ij + 1 (the credit stays above -1) and in the tests never fell 2 units
// behind, whereas random draws drift by about sqrt(n s_ij (1 - s_ij)) units: for a 5%
// job over 100 units, +-2.2 units, 44% of its due. The choice is also reproducible
// from the credits alone, with no random stream to keep, so every server sharing the
// pool's state makes the same choice and a team can be shown why a unit went where it
// went. Its cost is that state: the credits must be stored with the pool (Credits,
// Restore).
//
// Jobs that cannot take a unit now (no waiting task) are skipped and gain no credit:
// best-effort service is not banked. When every eligible job has a zero share (the
// auction gave the pool to jobs that cannot use it now), the unit goes round robin
// among the eligible ones: what is left is used, not wasted. A Rotation is not safe
// for concurrent use.
type Rotation struct {
	jobs   []string // sorted
	shares []float64
	credit []float64
	ok     []bool // scratch: eligibility during Next
}

// NewRotation returns a rotation over the given shares (job id to share of the pool),
// all credits zero. It returns EINVALID for a share that is negative or not finite.
// Shares need not sum to 1: each eligible job's long-run fraction is its share over
// the eligible jobs' total.
func NewRotation(shares map[string]float64) (*Rotation, error) {
	r := &Rotation{}
	return r, r.SetShares(shares)
}

// SetShares replaces the shares (after the auction is re-run on a job's arrival or
// departure), keeping the credits of the jobs that stay, starting new jobs at zero,
// dropping departed jobs, and re-centring the credits on zero. It returns EINVALID,
// and changes nothing, for a share that is negative or not finite.
func (r *Rotation) SetShares(shares map[string]float64) error {
	for id, s := range shares {
		if !finite(s) || s < 0 {
			return invalid("shares[%q]: must be a finite number from 0, got %v", id, s)
		}
	}
	old := r.Credits()
	r.jobs = slices.Sorted(maps.Keys(shares))
	r.shares = make([]float64, len(r.jobs))
	r.credit = make([]float64, len(r.jobs))
	for k, id := range r.jobs {
		r.shares[k], r.credit[k] = shares[id], old[id]
	}
	r.recentre()
	return nil
}

// Credits returns each job's credit, for storing the rotation's state.
func (r *Rotation) Credits() map[string]float64 {
	c := make(map[string]float64, len(r.jobs))
	for k, id := range r.jobs {
		c[id] = r.credit[k]
	}
	return c
}

// Restore sets the credits of the rotation's jobs from stored state (jobs it does not
// hold are ignored; missing ones start at zero) and re-centres them. It returns
// EINVALID, and changes nothing, for a credit that is not finite.
func (r *Rotation) Restore(credits map[string]float64) error {
	for id, c := range credits {
		if !finite(c) {
			return invalid("credits[%q]: must be a finite number, got %v", id, c)
		}
	}
	for k, id := range r.jobs {
		r.credit[k] = credits[id]
	}
	r.recentre()
	return nil
}

func (r *Rotation) recentre() {
	if len(r.credit) == 0 {
		return
	}
	mean := 0.0
	for _, c := range r.credit {
		mean += c
	}
	mean /= float64(len(r.credit))
	for k := range r.credit {
		r.credit[k] -= mean
	}
}

// Next deals one unit: it returns the job that gets it, or false when no job is
// eligible. eligible may be nil (every job is); it is called once per job. Next takes
// time linear in the jobs.
func (r *Rotation) Next(eligible func(job string) bool) (string, bool) {
	if len(r.ok) != len(r.jobs) {
		r.ok = make([]bool, len(r.jobs))
	}
	total, count := 0.0, 0
	for k, id := range r.jobs {
		r.ok[k] = eligible == nil || eligible(id)
		if r.ok[k] {
			total += r.shares[k]
			count++
		}
	}
	if count == 0 {
		return "", false
	}
	equal := !(total > 0)
	if equal {
		total = 1
	}
	best, most := -1, math.Inf(-1)
	for k := range r.jobs {
		if !r.ok[k] {
			continue
		}
		if equal {
			r.credit[k] += 1 / float64(count)
		} else {
			r.credit[k] += r.shares[k]
		}
		if r.credit[k] > most {
			best, most = k, r.credit[k]
		}
	}
	r.credit[best] -= total
	return r.jobs[best], true
}
