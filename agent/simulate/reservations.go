package simulate

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// runningJob is a job the cluster runs. When simulating, endAt is when it ends before
// its planned end (zero: it runs to the end) and failed says whether that end is a
// failure.
type runningJob struct {
	job    agent.Job
	endAt  time.Time
	failed bool
	ended  bool // its end was reported; the plan may still list it until its slot ends
}

// simulation makes the cluster play its jobs: started jobs run, report usage and may
// end early or fail, at random but repeatably for one seed.
type simulation struct {
	seed        uint64
	rng         *rand.Rand
	failRate    float64
	finishEarly float64
	useShare    float64 // of its units a running job uses (1: all)
}

func newSimulation(s agent.Simulation) *simulation {
	return &simulation{seed: s.Seed, rng: rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15)), failRate: s.FailRate, finishEarly: s.FinishEarly, useShare: s.Use}
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

// FollowReservations stops the early starts the server refused, ends (simulating) the
// jobs whose end came, prints the jobs to start and stop and the jobs newly waiting,
// starts early the waiting jobs the plan says may start now, and returns the early
// starts and, simulating, the ends, each running job's usage and the waiting jobs'
// tasks.
func (c *Cluster) FollowReservations(_ context.Context, plan agent.Plan) (agent.JobReport, error) {
	now := plan.Now.UTC()
	c.now = now
	c.stopStarts(plan.Refused, now, "the server refused it")
	var rep agent.JobReport
	if c.sim != nil {
		rep.Ends = c.endDue(plan, now)
	}
	c.follow(plan, now)
	rep.Starts = c.startEarly(plan, now)
	c.usage = nil
	if c.sim != nil {
		rep.Usage, rep.Waiting = c.jobUsage(), c.waitingTasks(plan)
		c.usage = rep.Usage
	}
	return rep, nil
}

// startEarly starts the waiting jobs the plan says may start now (ERA's "empty
// allocation"): each runs its whole duration from now, and the start is reported so
// the plan moves it and frees its planned slots.
func (c *Cluster) startEarly(plan agent.Plan, now time.Time) []agent.JobStart {
	var starts []agent.JobStart
	for _, j := range plan.Waiting {
		k := j.Key()
		if _, ok := c.running[k]; ok || !j.MayStartNow {
			continue
		}
		planned := j.Start
		j.End, j.Start, j.Units = now.Add(j.End.Sub(j.Start)), now, j.Count
		r := &runningJob{job: j}
		c.running[k] = r
		delete(c.waiting, k)
		c.early[k] = true
		starts = append(starts, agent.JobStart{Reservation: k.Reservation, Request: k.Request, At: now})
		if c.sim != nil {
			c.sim.fate(r, now)
		}
		c.printf(now, "start early %s: %d x %s until %s, planned %s (team %s)", k, j.Units,
			agent.ConfigText(j.Configuration), agent.HHMM(j.End, now), agent.HHMM(planned, now), j.Team)
	}
	return starts
}

// stopStarts stops jobs started early whose start the server did not take.
func (c *Cluster) stopStarts(keys []agent.JobKey, now time.Time, why string) {
	for _, k := range keys {
		if _, ok := c.running[k]; ok {
			delete(c.running, k)
			c.printf(now, "stop %s (early start refused: %s)", k, why)
		}
		delete(c.early, k)
	}
}

// endDue ends the simulated jobs whose end came by now: those still planned to run,
// and those whose planned end has passed since the last poll. A job the plan moved or
// dropped was stopped, not ended.
func (c *Cluster) endDue(plan agent.Plan, now time.Time) []agent.JobEnd {
	listed := map[agent.JobKey]bool{}
	for _, j := range plan.Running {
		listed[j.Key()] = j.Units > 0
	}
	var ends []agent.JobEnd
	for _, k := range sortedKeys(c.running) {
		j := c.running[k]
		if j.ended || j.endAt.IsZero() || j.endAt.After(now) || (!listed[k] && now.Before(j.job.End)) {
			continue
		}
		j.ended = true
		ends = append(ends, agent.JobEnd{Reservation: k.Reservation, Request: k.Request, At: j.endAt, Failed: j.failed})
		how := "finished early"
		if j.failed {
			how = "failed"
		}
		c.printf(now, "end %s: %s at %s, planned until %s", k, how, agent.Clock(j.endAt), agent.HHMM(j.job.End, now))
	}
	return ends
}

// follow prints the jobs to start and stop, and the jobs newly waiting in their
// window, and keeps the cluster's view of what runs.
func (c *Cluster) follow(plan agent.Plan, now time.Time) {
	inPlan, waiting := map[agent.JobKey]bool{}, map[agent.JobKey]agent.Job{}
	for _, j := range plan.Waiting {
		waiting[j.Key()] = j
	}
	for _, j := range plan.Running {
		k := j.Key()
		if j.Units <= 0 {
			continue
		}
		inPlan[k] = true
		delete(c.early, k) // the server took its early start
		if r, ok := c.running[k]; ok {
			r.job = j
			continue
		}
		r := &runningJob{job: j}
		c.running[k] = r
		delete(c.waiting, k)
		if c.sim != nil {
			c.sim.fate(r, now)
		}
		c.printf(now, "start %s: %d x %s until %s (team %s)", k, j.Units, agent.ConfigText(j.Configuration), agent.HHMM(j.End, now), j.Team)
	}
	for _, k := range sortedKeys(c.running) {
		r := c.running[k]
		if starting := c.early[k] && now.Before(r.job.End); inPlan[k] || starting {
			continue
		}
		delete(c.running, k)
		delete(c.early, k)
		if r.ended {
			continue // already reported as ended
		}
		why := "no longer planned"
		if w, ok := waiting[k]; ok {
			why = "moved, now planned " + agent.HHMM(w.Start, now)
		} else if !now.Before(r.job.End) {
			why = "planned end reached"
		}
		c.printf(now, "stop %s (%s)", k, why)
	}
	for k := range c.waiting {
		if _, ok := waiting[k]; !ok {
			delete(c.waiting, k)
		}
	}
	for _, j := range plan.Waiting {
		k := j.Key()
		if at, ok := c.waiting[k]; (ok && at.Equal(j.Start)) || j.MayStartNow {
			continue // announced, or about to start early
		}
		c.waiting[k] = j.Start
		c.printf(now, "waiting: %s planned %s (team %s)", k, agent.HHMM(j.Start, now), j.Team)
	}
}

// jobUsage is the usage of every job that runs (its units times its configuration,
// per pool; less with a use share below 1).
func (c *Cluster) jobUsage() []agent.JobUsage {
	var usage []agent.JobUsage
	for _, k := range sortedKeys(c.running) {
		r := c.running[k]
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
			if c.sim.useShare < 1 {
				units = int64(math.Ceil(float64(units) * c.sim.useShare))
			}
			usage = append(usage, agent.JobUsage{Reservation: k.Reservation, Request: k.Request, Pool: p, Units: units})
		}
	}
	return usage
}

// waitingTasks is the tasks of every job waiting in its window that has not started.
func (c *Cluster) waitingTasks(plan agent.Plan) []agent.JobWaiting {
	var out []agent.JobWaiting
	for _, j := range plan.Waiting {
		if _, started := c.running[j.Key()]; started {
			continue
		}
		out = append(out, agent.JobWaiting{Reservation: j.Reservation, Request: j.Request, Tasks: j.Count})
	}
	return out
}
