package sharing

import (
	"fmt"
	"slices"
)

// LoadStep is one step of a team's own load over time: Units processors busy from At
// (hours from the start of the run) until the next step's At.
type LoadStep struct {
	At    float64
	Units int64
}

// BackgroundJobs turns a team's own load, a step function from its first step until
// end (hours), into background jobs for the simulator, so that at every moment the
// team's running background tasks are exactly its load. The load is cut into unit
// layers: layer k is busy while the load is at least k, and each stretch during which
// a layer stays busy is one background task, released when the stretch begins and
// lasting until it ends. Stretches that begin and end together form one job of as many
// tasks. A load that never changes is a single job; a load of total rise R (the sum
// of its increases, counting the first step) gives at most R tasks. Steps must be in
// order of At; a negative load counts as zero; stretches of no length are left out.
// IDs are team, "#", and a sequence number.
func BackgroundJobs(team string, steps []LoadStep, end float64) []SimJob {
	var (
		out  []SimJob
		open []float64 // open[k]: when layer k (0-based) became busy
	)
	emit := func(from, to float64, n int) {
		if n > 0 && to > from {
			out = append(out, SimJob{Team: team, Release: from, Tasks: n, TaskHours: to - from, Background: true})
		}
	}
	// closeAbove ends every layer from k up at t, one job per run of equal starts
	// (layers opened later sit higher, so equal starts are adjacent).
	closeAbove := func(k int, t float64) {
		for i := len(open); i > k; {
			j := i - 1
			for j > k && open[j-1] == open[i-1] {
				j--
			}
			emit(open[j], t, i-j)
			i = j
		}
		open = open[:k]
	}
	for i, s := range steps {
		t := min(s.At, end)
		if i > 0 && t < steps[i-1].At {
			t = steps[i-1].At // out of order: treat as simultaneous
		}
		u := int(max(s.Units, 0))
		switch {
		case u < len(open):
			closeAbove(u, t)
		case u > len(open):
			for range u - len(open) {
				open = append(open, t)
			}
		}
	}
	if len(steps) > 0 {
		closeAbove(0, max(end, steps[len(steps)-1].At))
	}
	slices.SortStableFunc(out, func(a, b SimJob) int { return cmpFloat(a.Release, b.Release) })
	for i := range out { // numbered in order of release
		out[i].ID = fmt.Sprintf("%s#%d", team, i+1)
	}
	return out
}
