package sharing

// View is what a policy sees when it decides: the cluster's pools with the room left
// for best-effort work, the teams with their queues, the jobs waiting and the tasks
// running. Decide and Simulate build it; a policy reads it and never changes it.
type View struct {
	Now     float64 // hours (the engine's clock)
	Pools   []PoolView
	Teams   []TeamView
	Jobs    []JobView
	Running []RunningView

	// caches bound to one Accounts, so priorities need no map look-up per team
	boundTo  *Accounts
	teamRows []int
	poolRows []int
	prio     []float64
	skip     []bool
}

// PoolView is one pool: its capacity and the units a best-effort start may still take
// now (after the exposure threshold, and within what lenders have idle).
type PoolView struct {
	Name     string
	Capacity int64
	Room     int64
}

// TeamView is one team: its share of the cluster's quota (the mean over pools of its
// quota over all teams' quota, 0 if it holds none) and its jobs with waiting tasks,
// longest waiting first (indices into View.Jobs).
type TeamView struct {
	Name  string
	Share float64
	Queue []int
}

// JobView is one waiting job: the job itself (for the monetary fields), its team (an
// index into View.Teams), its units per task in each pool, the tasks waiting, and its
// release in hours.
type JobView struct {
	Job      *Job
	Team     int
	Units    []PoolUnits
	Waiting  int
	Enqueued float64
}

// PoolUnits is a number of units in one pool (an index into View.Pools).
type PoolUnits struct {
	Pool  int
	Units int64
}

// RunningView is one running best-effort task: its ID, team (an index into
// View.Teams), start in hours and units per pool.
type RunningView struct {
	ID      string
	Team    int
	Started float64
	Units   []PoolUnits
}

// Fits reports whether one more task of job j fits in the room of every pool it needs.
func (v *View) Fits(j int) bool {
	if v.Jobs[j].Waiting < 1 {
		return false
	}
	for _, u := range v.Jobs[j].Units {
		if v.Pools[u.Pool].Room < u.Units {
			return false
		}
	}
	return true
}

// bind resolves the view's teams and pools to rows of acc, once per Accounts and
// shape; it adds empty rows for teams and pools the accounts have not seen.
func (v *View) bind(acc *Accounts) {
	if v.boundTo == acc && len(v.teamRows) == len(v.Teams) && len(v.poolRows) == len(v.Pools) {
		return
	}
	v.boundTo = acc
	v.teamRows = v.teamRows[:0]
	for _, t := range v.Teams {
		v.teamRows = append(v.teamRows, acc.team(t.Name))
	}
	v.poolRows = v.poolRows[:0]
	for _, p := range v.Pools {
		v.poolRows = append(v.poolRows, acc.pool(p.Name))
	}
}

// scratch returns the view's priority and skip buffers, sized to its teams.
func (v *View) scratch() ([]float64, []bool) {
	if cap(v.prio) < len(v.Teams) {
		v.prio = make([]float64, len(v.Teams))
		v.skip = make([]bool, len(v.Teams))
	}
	v.prio, v.skip = v.prio[:len(v.Teams)], v.skip[:len(v.Teams)]
	clear(v.skip)
	return v.prio, v.skip
}

// anyRoom reports whether some pool has room for at least one unit.
func (v *View) anyRoom() bool {
	for _, p := range v.Pools {
		if p.Room > 0 {
			return true
		}
	}
	return false
}
