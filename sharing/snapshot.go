package sharing

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
)

// DefaultExposure is the paper's exposure threshold: a pool lends only while at least
// 30% of it stays free, which absorbs the delay of agents' reports.
const DefaultExposure = 0.30

// Snapshot is one cluster's idle-capacity state at Now, as the cluster-side service
// sees it on an agent's poll: its pools, the best-effort jobs waiting and the
// best-effort tasks running. Decide turns it into decisions.
type Snapshot struct {
	Now     time.Time
	Pools   []Pool
	Jobs    []Job  // jobs with tasks waiting
	Running []Task // best-effort tasks running now
}

// Pool is one pool of the cluster at Now.
type Pool struct {
	Name     string
	Capacity int64     // units the pool has now
	Teams    []Holding // every team holding quota in the pool, or using or reserving units in it
	// MinRuntime: a best-effort task that started less than this ago is never preempted.
	MinRuntime time.Duration
	// Exposure: best-effort tasks start only while at least this share of the pool
	// stays free after they start, in [0, 1) (DefaultExposure is the paper's).
	Exposure float64
	// Policy: the pool's own policy, a name ByName knows; "" follows the policy given
	// to Decide. See Decide for pools of one cluster under different policies.
	Policy string
}

// Holding is what one team holds and uses in a pool now. Used and Reserved exclude
// best-effort work: the team's demand is the larger of the two (units its agents report
// it uses, and units its reservations hold now whether or not they run yet).
type Holding struct {
	Team     string
	Quota    int64 // units of quota the team holds
	Used     int64 // units its own work uses now, as agents report
	Reserved int64 // units its reservations active now hold
}

// Job is a best-effort job: identical tasks of a configuration in one cluster, queued
// since Enqueued. Budget, Utility and Weights are the monetary policy's (Abacus); the
// non-monetary policies ignore them.
type Job struct {
	ID              string
	Team            string
	Configuration   map[string]int64 // pool -> units per task, every pool in the snapshot
	Waiting         int              // tasks waiting now, at least 1
	Enqueued        time.Time        // when the longest-waiting of its tasks was queued (its release)
	MaxTaskDuration time.Duration    // optional; informational to the policies

	Budget  float64            // dollars; zero for non-monetary jobs
	Utility string             // "", "linear" or "log"
	Weights map[string]float64 // pool -> weight, optional
}

// Task is a best-effort task running now: its job, team and configuration, when it
// started, its job's release, and the lenders its units are attributed to.
type Task struct {
	ID            string
	Job           string
	Team          string
	Configuration map[string]int64
	Started       time.Time
	Enqueued      time.Time // its job's release (REL utility)
	Lenders       []Share   // per pool of the configuration, summing to the units there
}

// Share is a lender's part of a task's (or a start's) units in a pool.
type Share struct {
	Pool, Lender string
	Units        float64
}

// Decision is what Decide tells the cluster to do now.
type Decision struct {
	Preempt      []string           // IDs of running tasks to stop now, in the order chosen
	Reattributed []Reattribution    // running tasks whose lenders change now
	Starts       []Start            // tasks to start now, in the order chosen
	Blocked      []Blocked          // units the pools need back but could not free yet (minimum runtime)
	Priority     map[string]float64 // the policy's priority of every team in the snapshot
	// PoolPriority: when pools follow different policies, each pool's policy's
	// priority of every team (in that pool alone), by pool then team; nil when every
	// pool follows the policy, whose Priority is then every pool's.
	PoolPriority map[string]map[string]float64
}

// Start is a number of tasks of one job to start now. Lenders sums over the tasks;
// each task is attributed Lenders[i].Units / Tasks of each lender.
type Start struct {
	Job, Team string
	Tasks     int
	Lenders   []Share
}

// Reattribution gives a running task its new lenders (per pool, summing to its units).
type Reattribution struct {
	Task    string
	Lenders []Share
}

// Blocked says a pool still runs Units more best-effort units than it has room for,
// because the tasks that could be stopped have not reached the minimum runtime.
type Blocked struct {
	Pool  string
	Units int64
}

const shareTolerance = 1e-6

// Validate checks the snapshot. EINVALID naming the field and the rule: a pool without
// name or with negative capacity, quota or usage, an exposure outside [0, 1), a
// negative minimum runtime, a team named like the operator; a job without ID or team,
// with no waiting task, a configuration naming an unknown pool or a unit count below
// 1, or monetary fields out of range; a running task with such a configuration, a
// start after Now, or lenders that do not add up to its units.
func (s *Snapshot) Validate() error {
	if s.Now.IsZero() {
		return clearhouse.Errorf(clearhouse.EINVALID, "now: required")
	}
	pools := map[string]*Pool{}
	for i := range s.Pools {
		if err := s.Pools[i].validate(pools); err != nil {
			return clearhouse.Errorf(clearhouse.EINVALID, "pools[%d]: %s", i, err)
		}
	}
	jobs := map[string]bool{}
	for i, j := range s.Jobs {
		if err := j.validate(pools, jobs); err != nil {
			return clearhouse.Errorf(clearhouse.EINVALID, "jobs[%d] (%q): %s", i, j.ID, err)
		}
	}
	teams := map[string]map[string]bool{} // pool -> teams listed in it
	for _, p := range s.Pools {
		teams[p.Name] = map[string]bool{}
		for _, h := range p.Teams {
			teams[p.Name][h.Team] = true
		}
	}
	tasks := map[string]bool{}
	for i, t := range s.Running {
		err := t.validate()
		if err == nil {
			err = t.checkPools(pools, teams, tasks, s.Now)
		}
		if err != nil {
			return clearhouse.Errorf(clearhouse.EINVALID, "running[%d] (%q): %s", i, t.ID, err)
		}
	}
	return nil
}

func (p *Pool) validate(seen map[string]*Pool) error {
	switch {
	case p.Name == "":
		return fmt.Errorf("name: required")
	case seen[p.Name] != nil:
		return fmt.Errorf("name: %q appears twice", p.Name)
	case p.Capacity < 0:
		return fmt.Errorf("capacity: must not be negative")
	case !(p.Exposure >= 0 && p.Exposure < 1):
		return fmt.Errorf("exposure: must be in [0, 1)")
	case p.MinRuntime < 0:
		return fmt.Errorf("min runtime: must not be negative")
	case p.Policy != "" && !slices.Contains(Names(), p.Policy):
		return fmt.Errorf("policy: %q is not one of %s", p.Policy, strings.Join(Names(), ", "))
	}
	teams := map[string]bool{}
	for _, h := range p.Teams {
		switch {
		case h.Team == "" || h.Team == Operator:
			return fmt.Errorf("teams: a team needs a name other than %q", Operator)
		case teams[h.Team]:
			return fmt.Errorf("teams: %q appears twice", h.Team)
		case h.Quota < 0 || h.Used < 0 || h.Reserved < 0:
			return fmt.Errorf("teams: %q: quota, used and reserved must not be negative", h.Team)
		}
		teams[h.Team] = true
	}
	seen[p.Name] = p
	return nil
}

func checkConfiguration(c map[string]int64, pools map[string]*Pool) error {
	if len(c) == 0 {
		return fmt.Errorf("configuration: name at least one pool")
	}
	for _, name := range sortedKeys(c) {
		if pools != nil && pools[name] == nil {
			return fmt.Errorf("configuration: pool %q is not in this cluster's snapshot", name)
		}
		if c[name] < 1 {
			return fmt.Errorf("configuration: %q: a task needs at least 1 unit", name)
		}
	}
	return nil
}

func (j *Job) validate(pools map[string]*Pool, seen map[string]bool) error {
	switch {
	case j.ID == "" || seen[j.ID]:
		return fmt.Errorf("id: required and unique")
	case j.Team == "" || j.Team == Operator:
		return fmt.Errorf("team: required, and not %q", Operator)
	case j.Waiting < 1:
		return fmt.Errorf("waiting: at least 1 task")
	case j.Enqueued.IsZero():
		return fmt.Errorf("enqueued: required")
	case j.MaxTaskDuration < 0:
		return fmt.Errorf("max task duration: must not be negative")
	case math.IsNaN(j.Budget) || math.IsInf(j.Budget, 0) || j.Budget < 0:
		return fmt.Errorf("budget: must be a number, zero or more")
	case j.Utility != "" && j.Utility != "linear" && j.Utility != "log":
		return fmt.Errorf("utility: %q is not linear or log", j.Utility)
	}
	seen[j.ID] = true
	if err := checkConfiguration(j.Configuration, pools); err != nil {
		return err
	}
	for _, pool := range sortedKeys(j.Weights) {
		w := j.Weights[pool]
		if _, ok := j.Configuration[pool]; !ok {
			return fmt.Errorf("weights: %q is not in the configuration", pool)
		}
		if !(w > 0) || math.IsInf(w, 0) {
			return fmt.Errorf("weights: %q must be a positive number", pool)
		}
	}
	return nil
}

// validate checks what a task says of itself: configuration and lenders adding up.
func (t *Task) validate() error {
	switch {
	case t.ID == "":
		return fmt.Errorf("id: required")
	case t.Team == "" || t.Team == Operator:
		return fmt.Errorf("team: required, and not %q", Operator)
	case t.Started.IsZero() || t.Enqueued.IsZero():
		return fmt.Errorf("started and enqueued: required")
	}
	if err := checkConfiguration(t.Configuration, nil); err != nil {
		return err
	}
	sum := map[string]float64{}
	for _, s := range t.Lenders {
		if _, ok := t.Configuration[s.Pool]; !ok {
			return fmt.Errorf("lenders: pool %q is not in the configuration", s.Pool)
		}
		if s.Lender == "" || !(s.Units >= 0) || math.IsInf(s.Units, 0) {
			return fmt.Errorf("lenders: a lender needs a name and units zero or more")
		}
		sum[s.Pool] += s.Units
	}
	for _, pool := range sortedKeys(t.Configuration) {
		if math.Abs(sum[pool]-float64(t.Configuration[pool])) > shareTolerance*float64(t.Configuration[pool]) {
			return fmt.Errorf("lenders: %q: shares sum to %g, not the task's %d units", pool, sum[pool], t.Configuration[pool])
		}
	}
	return nil
}

func (t *Task) checkPools(pools map[string]*Pool, teams map[string]map[string]bool, seen map[string]bool, now time.Time) error {
	if seen[t.ID] {
		return fmt.Errorf("id: appears twice")
	}
	seen[t.ID] = true
	if t.Started.After(now) {
		return fmt.Errorf("started: after now")
	}
	if err := checkConfiguration(t.Configuration, pools); err != nil {
		return err
	}
	for _, s := range t.Lenders {
		if s.Lender != Operator && !teams[s.Pool][s.Lender] {
			return fmt.Errorf("lenders: %q is not listed among pool %q's teams", s.Lender, s.Pool)
		}
	}
	return nil
}
