package sharing

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/clearhouse/clearhouse"
)

// QueueByStanding orders the waiting jobs of s (their IDs, the first to start
// first) by the rule of pools under different policies (perpool.go), as if every
// task fit: each pool's policy (its own, or p) ranks the teams by acc, a job stands
// at its team's worst rank among its pools, the best standing first, then the job
// waiting longest, then the team listed first, then the job listed first (Decide's
// order: release, then ID). While there is room and priorities hold, Decide starts
// jobs in this order; it re-ranks after every start (round robin's marks move) and
// passes over tasks that do not fit, so for a page it is an estimate. It ranks by
// pool whatever the pools' policies (a cluster under one policy is ranked over all
// its pools by Decide instead). acc is read, not changed, except that teams and
// pools it has not seen get empty rows. EINVALID for a snapshot that fails Validate
// or accounts not up to date with s.Now.
func QueueByStanding(s *Snapshot, acc *Accounts, p Policy) ([]string, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	now := HoursOf(s.Now)
	if math.Abs(acc.asOf-now) > clockTolerance {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "accounts: up to date with %s, not now (%s): advance them first",
			acc.AsOf().Format(time.RFC3339Nano), s.Now.UTC().Format(time.RFC3339Nano))
	}
	d := newDecider(s, now)
	d.v.bind(acc)
	_, pols, _ := d.policies(p)
	m := newPerPool(&d.v, pols)
	m.rankAll(acc)
	standing := make([]int, len(d.v.Jobs))
	jobs := make([]int, len(d.v.Jobs))
	for j, jv := range d.v.Jobs {
		jobs[j] = j
		for _, u := range jv.Units {
			standing[j] = max(standing[j], m.rank[u.Pool][jv.Team])
		}
	}
	slices.SortFunc(jobs, func(a, b int) int {
		ja, jb := &d.v.Jobs[a], &d.v.Jobs[b]
		if c := cmp.Compare(standing[a], standing[b]); c != 0 {
			return c
		}
		if c := cmp.Compare(ja.Enqueued, jb.Enqueued); c != 0 {
			return c
		}
		if c := cmp.Compare(ja.Team, jb.Team); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := make([]string, len(jobs))
	for k, j := range jobs {
		out[k] = d.v.Jobs[j].Job.ID
	}
	return out, nil
}
