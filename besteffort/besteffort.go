package besteffort

import (
	"encoding/json"
	"math"
	"time"

	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/sharing"
	"github.com/clearhouse/clearhouse/store"
)

// Best-effort work on idle capacity (DESIGN.md, "Idle capacity"): jobs of identical
// tasks in one cluster, with no deadline and no price (under the abacus policy, a
// budget), run on quota its owner is not using and on capacity the operator has
// neither sold nor reserved. The pure engine is package sharing: on every poll of a
// cluster's agent this service brings the cluster's accounts up to now, builds a
// sharing.Snapshot from the database, runs sharing.Decide with the cluster's policy
// and records what it says (tasks started, preempted, re-attributed). Everything
// lives in the database, so every server decides from the same state; each write
// takes the cluster's idle_clusters row first (see lockIdleCluster).

// JobStatus is where a best-effort job is.
type JobStatus string

// Best-effort job statuses.
const (
	JobQueued    JobStatus = "queued"    // no task of it runs now; some wait
	JobRunning   JobStatus = "running"   // at least one task runs now
	JobDone      JobStatus = "done"      // every task ended (done or failed)
	JobCancelled JobStatus = "cancelled" // cancelled by its team; running tasks were stopped
)

// TaskStatus is what became of one run of a task.
type TaskStatus string

// Task statuses. A preempted or requeued task goes back to its job's queue.
const (
	TaskRunning   TaskStatus = "running"
	TaskDone      TaskStatus = "done"
	TaskFailed    TaskStatus = "failed"    // the agent reported a failure, or it overran the job's maximum task duration
	TaskPreempted TaskStatus = "preempted" // stopped because owners or reservations needed the units back
	TaskRequeued  TaskStatus = "requeued"  // its cluster's agent stopped reporting
	TaskCancelled TaskStatus = "cancelled" // its job was cancelled
)

// Job is a best-effort job: a row of best_effort_jobs. Queued + Running + Done +
// Failed + Cancelled = Tasks always; Preempted counts preemptions (each put a task back in the
// queue). Money is in micro-dollars: under the abacus policy Budget is held on the
// team's budget at submission and captured once when the job is done.
type Job struct {
	ID              int64
	TeamID          string
	ClusterID       string
	CreatedBy       *int64
	Configuration   string // JSON: units per task per pool
	Tasks           int64
	MaxTaskDuration int64 // seconds; 0 for none
	Status          JobStatus
	Queued          int64
	Running         int64
	Done            int64
	Failed          int64
	Cancelled       int64
	Preempted       int64
	IdemKey         *string
	Digest          string
	Budget          ledger.Money
	Utility         string // "", linear or log
	Weights         string // JSON: weight per pool, "" for the default (1 each)
	Shares          string // JSON: the job's share of each pool in the last auction
	HoldID          *int64
	Captured        ledger.Money
	Released        ledger.Money
	MinUtility      *float64 // the SLO (migration 00015); nil: none
	Auctions        int64    // auctions the job bid in
	ShareSums       string   // JSON: pool -> sum of its guaranteed shares over those auctions (0 when not served)
	SLO             string   // "", met or missed (decided when the job is done)
	WeightsFrom     string   // "", given, equal or fitted
	MeasuredUtility *float64 // what its agent measured once it was done
	MeasuredShares  string   // JSON: pool -> its average share, as measured
	Workload        string   // JSON of its Workload (migration 00024), "" for none
	EnqueuedAt      time.Time
	CreatedAt       time.Time
	UpdatedAt       time.Time
	EndedAt         *time.Time
}

// TableName implements gorm's tabler.
func (Job) TableName() string { return "best_effort_jobs" }

// Config decodes the job's configuration.
func (j Job) Config() map[string]int64 {
	var c map[string]int64
	_ = json.Unmarshal([]byte(j.Configuration), &c)
	return c
}

// WeightsByPool decodes the job's utility weights (nil: the default).
func (j Job) WeightsByPool() map[string]float64 { return decodeFloats(j.Weights) }

// MeanShares is the job's mean guaranteed share of each pool over the auctions it
// bid in (its share when served, 0 when the SLO variant left it out; nil when it
// bid in none).
func (j Job) MeanShares() map[string]float64 {
	if j.Auctions == 0 {
		return nil
	}
	m := decodeFloats(j.ShareSums)
	for p := range m {
		m[p] /= float64(j.Auctions)
	}
	return m
}

// UtilityAt is the job's utility (linear or log, its weights, 1 for a pool without
// one) over the pools of its configuration at the given shares; a log utility with
// a zero share is -Inf.
func (j Job) UtilityAt(shares map[string]float64) float64 {
	w := j.WeightsByPool()
	u := 0.0
	for pool := range j.Config() {
		x, ok := w[pool]
		if !ok {
			x = 1
		}
		if j.Utility == "log" {
			u += x * math.Log(shares[pool])
		} else {
			u += x * shares[pool]
		}
	}
	return u
}

// SharesByPool decodes the job's shares in the last auction (nil: none).
func (j Job) SharesByPool() map[string]float64 { return decodeFloats(j.Shares) }

func decodeFloats(s string) map[string]float64 {
	if s == "" {
		return nil
	}
	var m map[string]float64
	_ = json.Unmarshal([]byte(s), &m)
	return m
}

// Task is one run of one task of a best-effort job: a row of best_effort_tasks.
// Lenders is the JSON of its []sharing.Share; StopAckedAt is when the agent
// confirmed it stopped a task the service ended (preempted, cancelled, overran).
type Task struct {
	ID          int64
	JobID       int64
	ClusterID   string
	TeamID      string
	Status      TaskStatus
	Lenders     string
	Reason      string
	StartedAt   time.Time
	ConfirmedAt *time.Time
	EndedAt     *time.Time
	StopAckedAt *time.Time
}

// TableName implements gorm's tabler.
func (Task) TableName() string { return "best_effort_tasks" }

// Shares decodes the task's lenders.
func (t Task) Shares() []sharing.Share {
	var s []sharing.Share
	_ = json.Unmarshal([]byte(t.Lenders), &s)
	return s
}

// IdleCluster is a cluster's best-effort state: a row of idle_clusters.
type IdleCluster struct {
	ClusterID   string `gorm:"primaryKey"`
	Policy      string
	Alpha       float64
	AsOf        time.Time
	Seq         int64
	Decisions   int64
	AgentSeenAt *time.Time
	Auction     string // JSON of the last Abacus auction (AuctionView)
	UpdatedAt   time.Time
}

// IdlePool is a pool's best-effort settings: a row of idle_pools.
type IdlePool struct {
	PoolID     string `gorm:"primaryKey"`
	Policy     string // the pool's own policy; "" follows its cluster's
	MinRuntime int64  // seconds
	Exposure   float64
	UpdatedAt  time.Time
}

// IdleUsage is what a team's own work uses of a pool, as its cluster's agent last
// reported: a row of idle_usage. UnitSeconds is the integral of the reported units
// from the row's first report to ReportedAt (the usage history reads it).
type IdleUsage struct {
	PoolID      string `gorm:"primaryKey"`
	TeamID      string `gorm:"primaryKey"`
	Units       int64
	ReportedAt  time.Time
	UnitSeconds float64
}

// integralAt is the usage's integral carried to at, the last reported units holding
// since they were reported.
func (u IdleUsage) integralAt(at time.Time) float64 {
	return u.UnitSeconds + float64(u.Units)*max(at.Sub(u.ReportedAt).Seconds(), 0)
}

// IdleBalance is a team's contribution and utility in a pool: a row of
// idle_balances (see sharing.Balance).
type IdleBalance struct {
	ClusterID   string
	TeamID      string `gorm:"primaryKey"`
	PoolID      string `gorm:"primaryKey"`
	Surface     float64
	Orig        float64
	Rel         float64
	LentSurface float64
	LentOrig    float64
	LentRel     float64
	Priority    float64 // the team's priority in the pool at the last decision, under the pool's policy
}

// IdleTeam is a team's round-robin mark and last priority in a cluster: a row of
// idle_teams.
type IdleTeam struct {
	ClusterID string `gorm:"primaryKey"`
	TeamID    string `gorm:"primaryKey"`
	Served    int64
	Priority  float64
}

// IdleFairness is a fairness report of one cluster over a span: a row of
// idle_fairness.
type IdleFairness struct {
	ClusterID  string `gorm:"primaryKey"`
	Span       string `gorm:"primaryKey"`
	ComputedAt time.Time
	Report     string
}

// TableName implements gorm's tabler.
func (IdleFairness) TableName() string { return "idle_fairness" }

// TableName implements gorm's tabler.
func (IdleUsage) TableName() string { return "idle_usage" }

// Config is the service's settings.
type Config struct {
	// AgentTimeout: a cluster whose agent has not reported for this long has its
	// running best-effort tasks requeued (the paper's site leaving the federation).
	AgentTimeout time.Duration
	// Seed fixes the abacus policy's draws (with each decision's sequence number).
	Seed uint64
}

// DefaultConfig requeues after 10 minutes of silence.
var DefaultConfig = Config{AgentTimeout: 10 * time.Minute, Seed: 1}

// Defaults of a pool without settings of its own.
const (
	DefaultPolicy     = "direct-orig"
	DefaultMinRuntime = 10 * time.Minute
	DefaultAlpha      = 0.5
	// MaxTasks bounds one job's task count.
	MaxTasks = 100_000
	// MaxTaskDuration bounds a job's maximum task duration.
	MaxTaskDuration = 30 * 24 * time.Hour
)

// Service is the service for best-effort jobs on idle capacity.
type Service struct {
	db     *store.DB
	ledger *ledger.Ledger
	now    func() time.Time
	cfg    Config
}

// New returns the best-effort service on db, holding abacus budgets
// through l.
func New(db *store.DB, l *ledger.Ledger, now func() time.Time, cfg Config) *Service {
	if cfg.AgentTimeout <= 0 {
		cfg.AgentTimeout = DefaultConfig.AgentTimeout
	}
	return &Service{db: db, ledger: l, now: func() time.Time { return now().UTC() }, cfg: cfg}
}
