package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// jobKey names a job: one request of a reservation.
type jobKey struct {
	Reservation int64 `json:"reservation"`
	Request     int   `json:"request"`
}

func keyOf(j agentJob) jobKey { return jobKey{j.Reservation, j.Request} }

func (k jobKey) String() string {
	return fmt.Sprintf("reservation %d request %d", k.Reservation, k.Request)
}

// runningJob is a job the agent started. When simulating, endAt is when it ends
// before its planned end (zero: it runs to the end) and failed says whether that
// end is a failure.
type runningJob struct {
	job    agentJob
	endAt  time.Time
	failed bool
	ended  bool // its end was reported (or is waiting to be); the plan may still list it until its slot ends
}

// simulation makes the agent play a cluster: started jobs run, report usage and
// may end early or fail, at random but repeatably for one seed.
type simulation struct {
	seed        uint64
	rng         *rand.Rand
	failRate    float64
	finishEarly float64
	useShare    float64 // of its units a running job uses (1: all)
}

func newSimulation(seed uint64, failRate, finishEarly, useShare float64) *simulation {
	return &simulation{seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), failRate: failRate, finishEarly: finishEarly, useShare: useShare}
}

// fate decides, when a job starts at now, whether and when it stops before its
// planned end: at a whole second strictly between now and the end.
func (s *simulation) fate(j *runningJob, now time.Time) {
	failed := s.rng.Float64() < s.failRate
	early := !failed && s.rng.Float64() < s.finishEarly
	span := int64(j.job.End.Sub(now) / time.Second)
	if (!failed && !early) || span < 2 {
		return
	}
	j.endAt, j.failed = now.Truncate(time.Second).Add(time.Duration(1+s.rng.Int64N(span-1))*time.Second), failed
}

// clusterAgent follows one cluster's allocation: it says what to start and stop
// and, when it simulates the cluster, reports what the jobs do.
type clusterAgent struct {
	client *agentClient
	out    io.Writer        // what to start and stop, the server's answers
	errOut io.Writer        // errors that the next poll retries
	now    func() time.Time // stamps lines written without an answer from the server
	sim    *simulation      // nil unless simulating
	usage  ownerUsageSource // where owners' usage is read (unset: simulated, or none)

	running map[jobKey]*runningJob
	waiting map[jobKey]time.Time  // the planned start last announced
	unsent  map[jobKey]agentEnd   // ends the server has not yet accepted
	starts  map[jobKey]agentStart // early starts the server has not yet taken

	tasks   map[int64]*beTask // best-effort tasks it runs
	stopped map[int64]bool    // best-effort tasks it announced stopping (a following agent is told until the server hears)
	events  []agentTaskEvent  // best-effort events the server has not yet accepted

	jobs     map[int64]*beJob   // abacus jobs it measures (simulating)
	measured []agentMeasurement // measurements the server has not yet accepted
}

func newClusterAgent(c *agentClient, out, errOut io.Writer, now func() time.Time, sim *simulation) *clusterAgent {
	return &clusterAgent{client: c, out: out, errOut: errOut, now: now, sim: sim,
		running: map[jobKey]*runningJob{}, waiting: map[jobKey]time.Time{}, unsent: map[jobKey]agentEnd{}, starts: map[jobKey]agentStart{}}
}

// run polls at once and then on every tick until ctx ends or stop fires (a nil
// stop never does), which is not an error; a poll under way when stop fires
// finishes first. A poll that fails is printed and retried on the next tick,
// unless the server refused the token: that error is returned at once.
func (a *clusterAgent) run(ctx context.Context, ticks, stop <-chan time.Time) error {
	for {
		if err := a.poll(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if refused(err) {
				return err
			}
			fmt.Fprintf(a.errOut, "%s error: %v (retrying at the next poll)\n", clock(a.now()), err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-stop:
			return nil
		case <-ticks:
		}
	}
}

// poll reads the allocation, prints what changed and reports early starts, the
// best-effort starts and stops it made, owners' usage and, when simulating, the
// jobs' ends, usage and waiting tasks.
func (a *clusterAgent) poll(ctx context.Context) error {
	alloc, err := a.client.Allocation(ctx)
	if err != nil {
		return err
	}
	now := alloc.Now.UTC()
	if a.sim != nil {
		a.endDue(alloc, now)
	}
	a.follow(alloc, now)
	a.followBestEffort(alloc, now)
	a.startEarly(alloc, now)
	var up agentUpdates
	if a.sim != nil {
		up = a.updates(alloc)
	}
	up.BestEffort = a.events // best-effort starts, stops (and, simulating, ends)
	for _, k := range sortedKeys(a.starts) {
		up.Starts = append(up.Starts, a.starts[k])
	}
	up.OwnerUsage = a.ownerUsage(ctx, alloc, now)
	if up.empty() {
		return nil
	}
	ans, err := a.client.Report(ctx, up)
	if err != nil {
		if isRejected(err) {
			// The server refused these ends and starts; sending them again will not help.
			clear(a.unsent)
			a.stopStarts(maps.Keys(a.starts), now, "the server refused the report")
			a.events, a.measured = nil, nil
		}
		return err
	}
	clear(a.unsent)
	a.events, a.measured = nil, nil
	clear(a.starts)
	a.stopStarts(slices.Values(ans.RefusedStarts), now, "the plan has no room for it now")
	if len(ans.Moved)+len(ans.AtRisk)+len(ans.Ended)+len(ans.RefusedStarts) > 0 {
		fmt.Fprintf(a.out, "%s server: %s\n", clock(now), answerText(ans))
	}
	return nil
}

// startEarly starts the waiting jobs the allocation says may start now (ERA's
// "empty allocation"): each runs its whole duration from now, and the start is
// reported so the plan moves it and frees its planned slots.
func (a *clusterAgent) startEarly(alloc agentAllocation, now time.Time) {
	for _, j := range alloc.Waiting {
		k := keyOf(j)
		if _, ok := a.running[k]; ok || !j.MayStartNow {
			continue
		}
		planned := j.Start
		j.End, j.Start, j.Units = now.Add(j.End.Sub(j.Start)), now, j.Count
		r := &runningJob{job: j}
		a.running[k] = r
		delete(a.waiting, k)
		a.starts[k] = agentStart{Reservation: k.Reservation, Request: k.Request, At: now}
		if a.sim != nil {
			a.sim.fate(r, now)
		}
		fmt.Fprintf(a.out, "%s start early %s: %d x %s until %s, planned %s (team %s)\n", clock(now), k, j.Units,
			configText(j.Configuration), hhmm(j.End, now), hhmm(planned, now), j.Team)
	}
}

// stopStarts stops jobs the agent started early that the server did not take.
func (a *clusterAgent) stopStarts(keys iter.Seq[jobKey], now time.Time, why string) {
	for k := range keys {
		if _, ok := a.running[k]; ok {
			delete(a.running, k)
			fmt.Fprintf(a.out, "%s stop %s (early start refused: %s)\n", clock(now), k, why)
		}
		delete(a.starts, k)
	}
}

// endDue ends the simulated jobs whose end came by now: those still planned to
// run, and those whose planned end has passed since the last poll. A job the plan
// moved or dropped was stopped, not ended.
func (a *clusterAgent) endDue(alloc agentAllocation, now time.Time) {
	listed := map[jobKey]bool{}
	for _, j := range alloc.Running {
		listed[keyOf(j)] = j.Units > 0
	}
	for _, k := range sortedKeys(a.running) {
		j := a.running[k]
		if j.ended || j.endAt.IsZero() || j.endAt.After(now) || (!listed[k] && now.Before(j.job.End)) {
			continue
		}
		j.ended = true
		a.unsent[k] = agentEnd{Reservation: k.Reservation, Request: k.Request, At: j.endAt, Failed: j.failed}
		how := "finished early"
		if j.failed {
			how = "failed"
		}
		fmt.Fprintf(a.out, "%s end %s: %s at %s, planned until %s\n", clock(now), k, how, clock(j.endAt), hhmm(j.job.End, now))
	}
}

// follow prints the jobs to start and stop, and the jobs newly waiting in their
// window, and keeps the agent's view of what runs.
func (a *clusterAgent) follow(alloc agentAllocation, now time.Time) {
	inPlan, waiting := map[jobKey]bool{}, map[jobKey]agentJob{}
	for _, j := range alloc.Waiting {
		waiting[keyOf(j)] = j
	}
	for _, j := range alloc.Running {
		k := keyOf(j)
		if j.Units <= 0 {
			continue
		}
		inPlan[k] = true
		if r, ok := a.running[k]; ok {
			r.job = j
			continue
		}
		r := &runningJob{job: j}
		a.running[k] = r
		delete(a.waiting, k)
		if a.sim != nil {
			a.sim.fate(r, now)
		}
		fmt.Fprintf(a.out, "%s start %s: %d x %s until %s (team %s)\n", clock(now), k, j.Units, configText(j.Configuration), hhmm(j.End, now), j.Team)
	}
	for _, k := range sortedKeys(a.running) {
		if _, starting := a.starts[k]; inPlan[k] || starting {
			continue
		}
		r := a.running[k]
		delete(a.running, k)
		if r.ended {
			continue // already reported as ended
		}
		why := "no longer planned"
		if w, ok := waiting[k]; ok {
			why = "moved, now planned " + hhmm(w.Start, now)
		} else if !now.Before(r.job.End) {
			why = "planned end reached"
		}
		fmt.Fprintf(a.out, "%s stop %s (%s)\n", clock(now), k, why)
	}
	for k := range a.waiting {
		if _, ok := waiting[k]; !ok {
			delete(a.waiting, k)
		}
	}
	for _, j := range alloc.Waiting {
		k := keyOf(j)
		if at, ok := a.waiting[k]; (ok && at.Equal(j.Start)) || j.MayStartNow {
			continue // announced, or about to start early
		}
		a.waiting[k] = j.Start
		fmt.Fprintf(a.out, "%s waiting: %s planned %s (team %s)\n", clock(now), k, hhmm(j.Start, now), j.Team)
	}
}

// updates is the simulated cluster's report: unsent ends, the usage of every job
// that runs (its units times its configuration, per pool) and the tasks of every
// job waiting in its window.
func (a *clusterAgent) updates(alloc agentAllocation) agentUpdates {
	var up agentUpdates
	for _, k := range sortedKeys(a.unsent) {
		up.Ends = append(up.Ends, a.unsent[k])
	}
	for _, k := range sortedKeys(a.running) {
		r := a.running[k]
		if r.ended {
			continue
		}
		pools := make([]string, 0, len(r.job.Configuration))
		for p := range r.job.Configuration {
			pools = append(pools, p)
		}
		slices.Sort(pools)
		for _, p := range pools {
			units := r.job.Units * r.job.Configuration[p]
			if a.sim.useShare < 1 {
				units = int64(math.Ceil(float64(units) * a.sim.useShare))
			}
			up.Usage = append(up.Usage, agentUsage{Reservation: k.Reservation, Request: k.Request, Pool: p, Units: units})
		}
	}
	for _, j := range alloc.Waiting {
		if _, started := a.running[keyOf(j)]; started {
			continue
		}
		up.Waiting = append(up.Waiting, agentWaiting{Reservation: j.Reservation, Request: j.Request, Tasks: j.Count})
	}
	up.BestEffortJobs = a.measured
	up.Pools = a.poolUsage(up.Usage)
	return up
}

// poolUsage totals, per pool, what the running reservations use (their usage
// rows) and what the running best-effort tasks take (one configuration each).
func (a *clusterAgent) poolUsage(usage []agentUsage) []agentPoolUsage {
	used := map[string]int64{}
	for _, u := range usage {
		used[u.Pool] += u.Units
	}
	for _, bt := range a.tasks {
		for p, n := range bt.task.Configuration {
			used[p] += n
		}
	}
	out := make([]agentPoolUsage, 0, len(used))
	for _, p := range slices.Sorted(maps.Keys(used)) {
		out = append(out, agentPoolUsage{Pool: p, Used: used[p]})
	}
	return out
}

// isRejected reports whether the server refused a report as it stands (a 4xx
// other than a timeout or rate limit).
func isRejected(err error) bool {
	var ae *agentAPIError
	return errors.As(err, &ae) && ae.Status/100 == 4 && ae.Status != 408 && ae.Status != 429
}

func sortedKeys[V any](m map[jobKey]V) []jobKey {
	ks := make([]jobKey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(x, y jobKey) int {
		return cmp.Or(cmp.Compare(x.Reservation, y.Reservation), cmp.Compare(x.Request, y.Request))
	})
	return ks
}

func answerText(a agentAnswer) string {
	var parts []string
	for _, p := range []struct {
		name string
		ids  []int64
	}{{"moved", a.Moved}, {"at risk", a.AtRisk}, {"ended", a.Ended}, {"early start refused for", refusedIDs(a.RefusedStarts)}} {
		if len(p.ids) == 0 {
			continue
		}
		ids := make([]string, len(p.ids))
		for i, id := range p.ids {
			ids[i] = fmt.Sprint(id)
		}
		parts = append(parts, fmt.Sprintf("%s reservation %s", p.name, strings.Join(ids, ", ")))
	}
	return strings.Join(parts, "; ")
}

// configText is a configuration as JSON with its pools in order.
func configText(c map[string]int64) string {
	b, _ := json.Marshal(c)
	return string(b)
}

// clock is a time of day in UTC, the plan's zone.
func clock(t time.Time) string { return t.UTC().Format(time.TimeOnly) }

// hhmm is t in UTC as hours and minutes, with the date when it is not now's day.
func hhmm(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() != now.YearDay() || t.Year() != now.Year() {
		return t.Format("Jan 2 15:04")
	}
	return t.Format("15:04")
}

func refusedIDs(ks []jobKey) []int64 {
	var out []int64
	for _, k := range ks {
		out = append(out, k.Reservation)
	}
	return out
}
