package apiv1

import (
	"fmt"
	"time"
)

// The cluster agent's contract: GET /clusters/{cluster}/allocation says what the
// cluster's jobs should have now; POST /clusters/{cluster}/updates reports what they
// did and what the cluster measured, and its Answer says what that changed.

// Allocation is the body of GET /clusters/{cluster}/allocation: the jobs that should
// run now with their units, and the jobs inside their window with none planned now
// (the cluster may start them early when it has room).
type Allocation struct {
	Cluster  string    `json:"cluster"`
	Now      time.Time `json:"now"`
	SlotEnds time.Time `json:"slot_ends"`
	Running  []Job     `json:"running"`
	Waiting  []Job     `json:"waiting"`
	// BestEffort lists the best-effort tasks to run now; Preempt those to stop now.
	BestEffort []Task `json:"best_effort"`
	Preempt    []Task `json:"preempt"`
	// Quotas is each team's holdings of each pool: what owner_usage reports against.
	Quotas []Quota `json:"quotas"`
	// Pools is each pool of the cluster with its idle-sharing settings, for backends
	// that map them onto the cluster's own sharing (e.g. Kueue's lending limits).
	Pools []PoolSharing `json:"pools"`
	// Upcoming lists the booked jobs whose planned start is still ahead (within the
	// plan's horizon, units 0), so that a backend whose manager reserves ahead (Slurm)
	// makes their reservations at booking, not when their slot starts.
	Upcoming []Job `json:"upcoming,omitempty"`
	// Limits is the one rule's answer for each team and pool of the cluster (see
	// Limit): what the backend enforces. Always sent (empty: no limits); a server that
	// sends none (nil: an older server) leaves the agent to compute limits from Quotas
	// and Running.
	Limits []Limit `json:"limits"`
	// OverLimit is the operators' policy for work beyond a team's limit.
	OverLimit OverLimitPolicy `json:"over_limit"`
	// Reclaim lists, per team and pool, the units of the team's own work to take back
	// now: each team over its limit for longer than the policy's grace, when the
	// policy is "evict". A backend that is a Reclaimer acts on it.
	Reclaim []Reclaim `json:"reclaim"`
}

// Job is one request of a reservation in a cluster's allocation: Count tasks of
// Configuration (pool -> units each), Units of which the plan runs now, from Start to
// End. A waiting job with MayStartNow fits from now for its whole duration: starting
// it early frees its planned slots.
type Job struct {
	Reservation   int64            `json:"reservation"`
	Request       int              `json:"request"`
	Team          string           `json:"team"`
	Configuration map[string]int64 `json:"configuration"`
	Count         int64            `json:"count"`
	Units         int64            `json:"units"`
	Start         time.Time        `json:"start"`
	End           time.Time        `json:"end"`
	Arrival       time.Time        `json:"arrival"`
	Deadline      time.Time        `json:"deadline"`
	MayStartNow   bool             `json:"may_start_now,omitempty"`
}

// Key is the job's name.
func (j Job) Key() JobKey { return JobKey{j.Reservation, j.Request} }

// JobKey names a job: one request of a reservation.
type JobKey struct {
	Reservation int64 `json:"reservation"`
	Request     int   `json:"request"`
}

func (k JobKey) String() string {
	return fmt.Sprintf("reservation %d request %d", k.Reservation, k.Request)
}

// Task is a best-effort task on idle quota, as the allocation lists it: in
// best_effort (start it) or preempt (preempted, cancelled or past its job's maximum
// duration: Reason says). It requests its job's Configuration (pool -> units) and
// runs as Team's task; Workload says what it runs, one member per backend kind.
type Task struct {
	ID              int64            `json:"task"`
	Job             int64            `json:"job"`
	Team            string           `json:"team"`
	Configuration   map[string]int64 `json:"configuration"`
	Started         time.Time        `json:"started"`
	MaxTaskDuration string           `json:"max_task_duration,omitempty"`
	Reason          string           `json:"reason,omitempty"`
	JobWaiting      int64            `json:"job_waiting"`
	Abacus          bool             `json:"abacus,omitempty"`
	Workload        *Workload        `json:"workload,omitempty"`
}

// Quota is a team's holdings of one pool, in the pool's units.
type Quota struct {
	Team  string `json:"team"`
	Pool  string `json:"pool"`
	Units int64  `json:"units"`
}

// PoolSharing is how a pool shares its idle capacity, as operators set it.
type PoolSharing struct {
	Pool              string  `json:"pool"`
	Policy            string  `json:"policy"`
	Alpha             float64 `json:"alpha"`
	MinRuntimeSeconds int64   `json:"min_runtime_seconds"`
	Exposure          float64 `json:"exposure"` // the share of the pool kept free of best-effort work
}

// Limit is a team's limit in one pool, by the one rule the server applies for every
// backend and page: Units = Held (its holdings, including what it offers for sale
// until the sale settles) + Reserved (its reservations running now, only the units
// beyond its own unreserved quota: a reservation inside own quota does not raise the
// limit). BestEffort is what the server granted the team's best-effort tasks now
// (their configurations summed): a backend enforces it apart from Units (a quota
// scoped to the best-effort class; an association only the agent holds), so that a
// team's own work can never use it and its own limit never grows because of work it
// started itself. Offered is the part of Held on offer for sale now: still the
// team's to use until the sale settles, so it never lowers Units (for display).
type Limit struct {
	Team       string `json:"team"`
	Pool       string `json:"pool"`
	Units      int64  `json:"units"`
	Held       int64  `json:"held"`
	Offered    int64  `json:"offered"`
	Reserved   int64  `json:"reserved"`
	BestEffort int64  `json:"best_effort"`
}

// OverLimitPolicy is what happens when a team's own usage exceeds its limit: the agent
// reports it each poll; after GraceSeconds, with Action "evict", the server lists the
// excess in Allocation.Reclaim and the backend takes it back (newest pods evicted,
// newest jobs requeued); with Action "report" nothing is taken back.
type OverLimitPolicy struct {
	Action       string `json:"action"`
	GraceSeconds int64  `json:"grace_seconds"`
}

// The over-limit policy's actions.
const (
	OverLimitReport = "report"
	OverLimitEvict  = "evict"
)

// Reclaim is the excess Units of Team's own work in Pool to take back now, over since
// Since.
type Reclaim struct {
	Team  string    `json:"team"`
	Pool  string    `json:"pool"`
	Units int64     `json:"units"`
	Since time.Time `json:"since"`
}

// Updates is the body of POST /clusters/{cluster}/updates. Every part is optional.
type Updates struct {
	// Capacity changes a pool's capacity over a window (maintenance, a rack down):
	// sent by scripts and operators' tools; the agent reports measured capacity in
	// Pools instead.
	Capacity []CapacityChange `json:"capacity,omitempty"`
	Ends     []JobEnd         `json:"ends,omitempty"`
	Starts   []JobStart       `json:"starts,omitempty"`
	Usage    []JobUsage       `json:"usage,omitempty"`
	Waiting  []JobWaiting     `json:"waiting,omitempty"`
	// Pools is what all the work the cluster runs uses of each pool now: the series
	// the server measures utilization (and so reserve prices) from.
	Pools []PoolUsage `json:"pools,omitempty"`
	// BestEffort reports best-effort tasks started, done, failed or stopped.
	BestEffort []TaskEvent `json:"best_effort,omitempty"`
	// OwnerUsage is what teams' own work uses of each pool now.
	OwnerUsage []OwnerUsage `json:"owner_usage,omitempty"`
	// BestEffortJobs is what the agent measured of finished abacus jobs.
	BestEffortJobs []JobMeasurement `json:"best_effort_jobs,omitempty"`
	// Unplaceable lists booked jobs the cluster refused to reserve: each one's
	// reservation ends, its team refunded and told.
	Unplaceable []JobUnplaceable `json:"unplaceable,omitempty"`
	// OverLimit lists the teams whose own usage exceeds their limit now; a team and
	// pool of the cluster a report does not list is back under its limit.
	OverLimit []OverLimit `json:"over_limit,omitempty"`
	// Reclaimed lists what the backend stopped to take back excess since the last report.
	Reclaimed []Reclaimed `json:"reclaimed,omitempty"`
	// Agent is the agent's own status (optional), shown to operators on /operate.
	Agent *AgentStatus `json:"agent,omitempty"`
}

// CapacityChange is a pool's capacity of Units from From to To.
type CapacityChange struct {
	Pool  string    `json:"pool"`
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	Units int64     `json:"units"`
}

// JobStart is a job that started (early, before its planned start) at At.
type JobStart struct {
	Reservation int64     `json:"reservation"`
	Request     int       `json:"request"`
	At          time.Time `json:"at"`
}

// JobEnd is a job that ended before its planned end: finished, or Failed.
type JobEnd struct {
	Reservation int64     `json:"reservation"`
	Request     int       `json:"request"`
	At          time.Time `json:"at"`
	Failed      bool      `json:"failed,omitempty"`
}

// JobUsage is what a running job uses of one pool now.
type JobUsage struct {
	Reservation int64  `json:"reservation"`
	Request     int    `json:"request"`
	Pool        string `json:"pool"`
	Units       int64  `json:"units"`
}

// JobWaiting is how many of a job's tasks wait in the cluster's queue.
type JobWaiting struct {
	Reservation int64 `json:"reservation"`
	Request     int   `json:"request"`
	Tasks       int64 `json:"tasks"`
}

// PoolUsage is one pool's units in use now (all work: reservations, owners' own,
// best-effort) and, optionally, its capacity as the agent measured it: the server
// records it and sells from it unless an operator overrides it; an absurd value
// refuses the whole report.
type PoolUsage struct {
	Pool     string `json:"pool"`
	Used     int64  `json:"used"`
	Capacity *int64 `json:"capacity,omitempty"`
}

// The events of a best-effort task.
const (
	TaskStarted = "started"
	TaskDone    = "done"
	TaskFailed  = "failed"
	TaskStopped = "stopped"
)

// TaskEvent is a best-effort task started, done, failed or stopped at At (the time the
// cluster recorded).
type TaskEvent struct {
	Task  int64     `json:"task"`
	Event string    `json:"event"`
	At    time.Time `json:"at"`
}

// OwnerUsage is what a team's own (not best-effort) work uses of a pool now. Rising
// usage takes idle quota back from best-effort tasks at the server's next decision.
type OwnerUsage struct {
	Team  string `json:"team"`
	Pool  string `json:"pool"`
	Units int64  `json:"units"`
}

// JobMeasurement is a finished abacus job's measured utility (the inverse of its run
// time in hours, first start to last end; required) and average share of each pool.
type JobMeasurement struct {
	Job     int64              `json:"job"`
	Utility *float64           `json:"utility"`
	Shares  map[string]float64 `json:"shares,omitempty"`
}

// JobUnplaceable is a booked job the cluster refused to reserve (Slurm: "Requested
// nodes are busy"): the server tells the team, refunds it, and never shows it running.
type JobUnplaceable struct {
	Reservation int64  `json:"reservation"`
	Request     int    `json:"request"`
	Reason      string `json:"reason"`
}

// OverLimit is a team whose own usage of a pool exceeds its limit now, as the agent
// measured it: reported each poll while it lasts.
type OverLimit struct {
	Team  string `json:"team"`
	Pool  string `json:"pool"`
	Used  int64  `json:"used"`
	Limit int64  `json:"limit"`
}

// Reclaimed is one object a backend stopped to take back a team's excess: a pod
// evicted, a job requeued.
type Reclaimed struct {
	Team   string `json:"team"`
	Pool   string `json:"pool"`
	Object string `json:"object"`
	Units  int64  `json:"units"`
}

// AgentStatus is what an agent says of itself in each report: its backend and
// version, the drift it corrected and the errors it met since its last report.
type AgentStatus struct {
	Backend     string       `json:"backend"`
	Version     string       `json:"version,omitempty"`
	Corrections []Correction `json:"corrections,omitempty"`
	Errors      []string     `json:"errors,omitempty"`
}

// Correction is one value a backend set that differed from what the cluster held.
// Object names the cluster's object ("ResourceQuota ads/clearhouse", "assoc ads
// GrpTRES"); Was and Now are the values as the cluster writes them (Was "" when the
// backend created the object).
type Correction struct {
	Team   string `json:"team"`
	Pool   string `json:"pool"`
	Object string `json:"object"`
	Was    string `json:"was"`
	Now    string `json:"now"`
}

func (c Correction) String() string {
	return fmt.Sprintf("%s (team %s, pool %s): %q -> %q", c.Object, c.Team, c.Pool, c.Was, c.Now)
}

// Answer is what the server did with a report: the jobs whose plan moved, those at
// risk, those it ended; the early starts it took and refused.
type Answer struct {
	Moved         []int64  `json:"moved"`
	AtRisk        []int64  `json:"at_risk"`
	Ended         []int64  `json:"ended"`
	Started       []JobKey `json:"started"`
	RefusedStarts []JobKey `json:"refused_starts"`
	// AlreadyEnded are reported ends of requests already over (a report sent again):
	// nothing changed. RefusedEnds contradict the server's record (an end earlier than
	// the one on record, or of a request that never ran): nothing changed; Reason says
	// why. The rest of the report applied.
	AlreadyEnded []EndNote `json:"already_ended"`
	RefusedEnds  []EndNote `json:"refused_ends"`
}

// EndNote is the server's answer about one reported end it did not apply.
type EndNote struct {
	Reservation int64     `json:"reservation"`
	Request     int       `json:"request"`
	At          time.Time `json:"at"`
	Reason      string    `json:"reason"`
}
