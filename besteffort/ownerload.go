package besteffort

import (
	"cmp"
	"slices"
	"time"

	"gorm.io/gorm"
)

// Owners' own load over a span, for the fairness report's replay (issue 13). A team's
// demand of its quota at a moment is, as in the decisions (sharing.Holding), the
// larger of the units its own work used, as agents reported, and the units its
// reservations held. Usage comes from the usage history: between two recorded points
// it is their mean (the difference of their integrals over the time between them),
// from the last point to the end of the span it is what the current idle_usage row
// adds, and before a team's first point it is zero, as the decisions then had it.
// Reservations come from the accepted reservations that ran in the span.

// loadStep is a team's demand of a pool (units, a mean, so fractional) from At on.
type loadStep struct {
	At    time.Time
	Units float64
}

// ownerLoad returns, per pool and team of the cluster, the team's demand over
// [from, to] as steps in order of time, the first at from.
func ownerLoad(db *gorm.DB, cluster string, from, to time.Time) (map[[2]string][]loadStep, error) {
	used := map[[2]string][]loadStep{}
	var points []IdleUsagePoint
	// A point up to a day before from gives the mean across from (points are at most
	// a day apart once thinned).
	if err := db.Where("cluster_id = ? AND at >= ? AND at <= ?", cluster, from.Add(-24*time.Hour), to).
		Order("pool_id, team_id, at").Find(&points).Error; err != nil {
		return nil, err
	}
	var current []IdleUsage
	if err := db.Where("pool_id IN (SELECT id FROM pools WHERE cluster_id = ?)", cluster).Find(&current).Error; err != nil {
		return nil, err
	}
	for _, u := range current { // the current row is the newest point, read at to
		if !u.ReportedAt.After(to) {
			points = append(points, IdleUsagePoint{PoolID: u.PoolID, TeamID: u.TeamID, Units: u.Units, UnitSeconds: u.integralAt(to), ReadAt: to})
		}
	}
	slices.SortStableFunc(points, func(a, b IdleUsagePoint) int {
		if a.PoolID != b.PoolID {
			return cmp.Compare(a.PoolID, b.PoolID)
		}
		if a.TeamID != b.TeamID {
			return cmp.Compare(a.TeamID, b.TeamID)
		}
		return a.ReadAt.Compare(b.ReadAt)
	})
	for i := 0; i+1 < len(points); i++ {
		p, q := points[i], points[i+1]
		if p.PoolID != q.PoolID || p.TeamID != q.TeamID {
			continue
		}
		k := [2]string{p.PoolID, p.TeamID}
		mean := float64(p.Units)
		if secs := q.ReadAt.Sub(p.ReadAt).Seconds(); secs > 0 && q.UnitSeconds >= p.UnitSeconds {
			mean = (q.UnitSeconds - p.UnitSeconds) / secs
		}
		used[k] = append(used[k], loadStep{At: p.ReadAt, Units: mean})
	}
	spans, err := reservedSpans(db, cluster, from, to)
	if err != nil {
		return nil, err
	}
	reserved := map[[2]string][]reservedSpan{}
	for _, r := range spans {
		k := [2]string{r.Pool, r.Team}
		reserved[k] = append(reserved[k], r)
	}
	out := map[[2]string][]loadStep{}
	for _, k := range unionKeys(used, reserved) {
		// Every moment the demand may change at: from, each usage step and each
		// reservation's start and end inside the span.
		times := []time.Time{from}
		for _, s := range used[k] {
			times = append(times, s.At)
		}
		for _, r := range reserved[k] {
			times = append(times, r.Start, r.End)
		}
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
		times = slices.CompactFunc(times, func(a, b time.Time) bool { return a.Equal(b) })
		var steps []loadStep
		for _, t := range times {
			if t.Before(from) || t.After(to) {
				continue
			}
			d := usedAt(used[k], t)
			var res int64
			for _, r := range reserved[k] {
				if !t.Before(r.Start) && t.Before(r.End) {
					res += r.Units
				}
			}
			d = max(d, float64(res))
			if n := len(steps); n > 0 && steps[n-1].Units == d {
				continue
			}
			steps = append(steps, loadStep{At: t, Units: d})
		}
		if len(steps) > 0 && (len(steps) > 1 || steps[0].Units > 0) {
			out[k] = steps
		}
	}
	return out, nil
}

// usedAt is the usage steps' value at t (zero before the first).
func usedAt(steps []loadStep, t time.Time) float64 {
	i, found := slices.BinarySearchFunc(steps, t, func(s loadStep, t time.Time) int { return s.At.Compare(t) })
	switch {
	case found:
		return steps[i].Units
	case i == 0:
		return 0
	}
	return steps[i-1].Units
}

func unionKeys[A, B any](a map[[2]string]A, b map[[2]string]B) [][2]string {
	var keys [][2]string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y [2]string) int {
		if x[0] != y[0] {
			return cmp.Compare(x[0], y[0])
		}
		return cmp.Compare(x[1], y[1])
	})
	return keys
}
