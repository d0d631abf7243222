package besteffort

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
	"gorm.io/gorm"
)

// AgentTask is a best-effort task as a cluster agent sees it: run it (it is
// in Allocation.Run) or stop it (in Stop, with the reason).
type AgentTask struct {
	Task            int64
	Job             int64
	Team            string
	Configuration   map[string]int64
	Started         time.Time
	MaxTaskDuration time.Duration
	Reason          string
	JobWaiting      int64     // the job's tasks waiting now: with none and no task left running, the job is done
	Abacus          bool      // the job has a budget: its agent may report its measured utility once it is done
	Workload        *Workload // what the task runs (nil: the job has none)
}

// Allocation is the best-effort part of a cluster's allocation: every
// task that should run now, and every task the service ended whose stop the agent
// has not confirmed (preempted, cancelled, overran), oldest first.
type Allocation struct {
	Run  []AgentTask
	Stop []AgentTask
	// Quotas is each team's quota of each pool of the cluster (less what it offers
	// for sale): what an agent reports owners' own usage against.
	Quotas []OwnerUsage
}

// stopListed is how long an ended task stays in Stop without a confirmation.
const stopListed = 24 * time.Hour

// Allocation returns the cluster's best-effort allocation as it stands (Step
// decides first when an agent polls). ENOTFOUND for an unknown cluster.
func (s *Service) Allocation(ctx context.Context, cluster string) (Allocation, error) {
	db := s.db.Read.WithContext(ctx)
	if err := exists(db, "clusters", cluster, "cluster: no cluster %q", cluster); err != nil {
		return Allocation{}, err
	}
	var ts []Task
	err := db.Where("cluster_id = ? AND (status = ? OR (status IN ? AND stop_acked_at IS NULL AND ended_at > ?))", cluster, TaskRunning,
		[]TaskStatus{TaskPreempted, TaskCancelled, TaskFailed, TaskRequeued}, s.now().Add(-stopListed)).Order("id").Find(&ts).Error
	if err != nil {
		return Allocation{}, err
	}
	jobs, err := jobsByID(db, ts)
	if err != nil {
		return Allocation{}, err
	}
	out := Allocation{Run: []AgentTask{}, Stop: []AgentTask{}, Quotas: []OwnerUsage{}}
	qs, err := fleet.Quotas(db)
	if err != nil {
		return Allocation{}, err
	}
	for _, q := range qs {
		if strings.HasPrefix(q.PoolID, cluster+"/") && q.Quota > 0 {
			out.Quotas = append(out.Quotas, OwnerUsage{Team: q.TeamID, Pool: q.PoolID, Units: q.Quota})
		}
	}
	for _, t := range ts {
		j := jobs[t.JobID]
		bt := AgentTask{Task: t.ID, Job: t.JobID, Team: t.TeamID, Configuration: j.Config(), Started: t.StartedAt,
			MaxTaskDuration: time.Duration(j.MaxTaskDuration) * time.Second, Reason: t.Reason, JobWaiting: j.Queued, Abacus: j.Budget > 0, Workload: j.WorkloadSpec()}
		if t.Status == TaskRunning {
			out.Run = append(out.Run, bt)
		} else {
			out.Stop = append(out.Stop, bt)
		}
	}
	return out, nil
}

// TaskEvent is what an agent reports of one best-effort task: "started" (it runs),
// "done", "failed", or "stopped" (it stopped a task it was told to stop), at At.
type TaskEvent struct {
	Task  int64
	Event string
	At    time.Time
}

// OwnerUsage is what a team's own work (not best-effort) uses of a pool now.
type OwnerUsage struct {
	Team  string
	Pool  string
	Units int64
}

// Report is the best-effort part of an agent's report.
type Report struct {
	Tasks    []TaskEvent
	Usage    []OwnerUsage
	Measured []JobMeasurement // finished abacus jobs' measured utilities (learn.go)
}

// Empty reports whether the report says nothing.
func (r Report) Empty() bool {
	return len(r.Tasks) == 0 && len(r.Usage) == 0 && len(r.Measured) == 0
}

// validate checks a report against the database without writing anything.
// EINVALID names the field at fault.
func (s *Service) validate(tx *gorm.DB, cluster string, r Report, now time.Time) (map[int64]Task, error) {
	bad := func(field string, i int, format string, args ...any) error {
		return clearhouse.Errorf(clearhouse.EINVALID, "%s[%d]: %s", field, i, fmt.Sprintf(format, args...))
	}
	if len(r.Tasks) > fleet.MaxReportRows || len(r.Usage) > fleet.MaxReportRows || len(r.Measured) > fleet.MaxReportRows {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "best_effort: at most %d rows per list in a report", fleet.MaxReportRows)
	}
	ids := make([]int64, len(r.Tasks))
	for i, e := range r.Tasks {
		ids[i] = e.Task
	}
	tasks := map[int64]Task{}
	if len(ids) > 0 {
		var ts []Task
		if err := tx.Where("id IN ? AND cluster_id = ?", ids, cluster).Find(&ts).Error; err != nil {
			return nil, err
		}
		for _, t := range ts {
			tasks[t.ID] = t
		}
	}
	for i, e := range r.Tasks {
		t, ok := tasks[e.Task]
		switch {
		case !ok:
			return nil, bad("best_effort", i, "cluster %s has no best-effort task %d", cluster, e.Task)
		case e.Event != "started" && e.Event != "done" && e.Event != "failed" && e.Event != "stopped":
			return nil, bad("best_effort", i, "event: %q is not started, done, failed or stopped", e.Event)
		case e.At.IsZero():
			return nil, bad("best_effort", i, "at: required (RFC 3339)")
		case e.At.After(now.Add(time.Minute)):
			return nil, bad("best_effort", i, "at: %s is in the future", e.At.UTC().Format(time.RFC3339))
		case e.At.Before(t.StartedAt.Add(-time.Hour)):
			return nil, bad("best_effort", i, "at: %s is before the task was started", e.At.UTC().Format(time.RFC3339))
		}
	}
	for i, u := range r.Usage {
		var p struct {
			ClusterID string
			Capacity  int64
		}
		if err := tx.Table("pools").Select("cluster_id, capacity").Where("id = ?", u.Pool).Limit(1).Scan(&p).Error; err != nil {
			return nil, err
		}
		switch {
		case p.ClusterID != cluster:
			return nil, bad("owner_usage", i, "pool %q is not a pool of cluster %s", u.Pool, cluster)
		case u.Units < 0 || u.Units > fleet.MaxCapacityFactor*max(p.Capacity, 1):
			return nil, bad("owner_usage", i, "units: must be from 0 to %d times the pool's capacity", fleet.MaxCapacityFactor)
		}
		if err := exists(tx, "teams", u.Team, "owner_usage[%d]: no team %q", i, u.Team); err != nil {
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "%s", clearhouse.ErrorMessage(err))
		}
	}
	if err := validateMeasurements(tx, cluster, r.Measured); err != nil {
		return nil, err
	}
	return tasks, nil
}

// ValidateReport checks a report without applying it, so the web layer can refuse
// a whole agent report before any part of it is applied.
func (s *Service) ValidateReport(ctx context.Context, cluster string, r Report) error {
	db := s.db.Read.WithContext(ctx)
	usage, err := knownUsage(db, r.Usage)
	if err != nil {
		return err
	}
	r.Usage = usage
	_, err = s.validate(db, cluster, r, s.now())
	return err
}

// knownUsage is usage less the rows of 0 units of teams the market does not know: an
// agent lists every team its config maps, 0 where it runs nothing (so a team's last
// pod ending takes its usage to 0), and a team in the config but not yet in the market
// has nothing to record. Any other row of an unknown team is left for validate to
// refuse.
func knownUsage(tx *gorm.DB, usage []OwnerUsage) ([]OwnerUsage, error) {
	var names []string
	for _, u := range usage {
		if u.Units == 0 {
			names = append(names, u.Team)
		}
	}
	if len(names) == 0 {
		return usage, nil
	}
	var known []string
	if err := tx.Table("teams").Where("id IN ?", names).Pluck("id", &known).Error; err != nil {
		return nil, err
	}
	return slices.DeleteFunc(slices.Clone(usage), func(u OwnerUsage) bool { return u.Units == 0 && !slices.Contains(known, u.Team) }), nil
}

// Report applies what cluster's agent reports of best-effort work, in one
// transaction: owners' usage (what the next decision lends around), and task
// events: started confirms a start; done and failed end a running task (its
// accounts count it up to now, when the service learns of it) and stopped puts a
// running task the agent stopped on its own back in the queue; any event on a task
// the service already ended confirms its stop. A bad report changes nothing.
func (s *Service) Report(ctx context.Context, cluster string, r Report) error {
	if r.Empty() {
		return nil
	}
	return s.db.Write.WithContext(ctx).Transaction(s.ReportWithin(ctx, cluster, r))
}

// ReportWithin is Report as one step of a caller's transaction, so that an agent's
// whole report (its reservations' part and this one) applies in one transaction:
// the caller runs the step after its own writes and rolls everything back when it
// fails. An empty report is a step that does nothing.
func (s *Service) ReportWithin(ctx context.Context, cluster string, r Report) func(tx *gorm.DB) error {
	return func(tx *gorm.DB) error {
		if r.Empty() {
			return nil
		}
		now := s.now()
		ic, err := lockIdleCluster(tx, cluster, now)
		if err != nil {
			return err
		}
		if r.Usage, err = knownUsage(tx, r.Usage); err != nil {
			return err
		}
		tasks, err := s.validate(tx, cluster, r, now)
		if err != nil {
			return err
		}
		acc, _, err := advance(tx, &ic, now)
		if err != nil {
			return err
		}
		now = ic.AsOf
		ic.AgentSeenAt = &now
		if err := saveUsage(tx, cluster, r.Usage, now); err != nil {
			return err
		}
		for _, e := range r.Tasks {
			t := tasks[e.Task]
			switch {
			case e.Event == "started":
				if err := tx.Model(&Task{}).Where("id = ? AND confirmed_at IS NULL", t.ID).Update("confirmed_at", e.At.UTC()).Error; err != nil {
					return err
				}
			case t.Status != TaskRunning: // a stop (or an end) of a task already ended
				if err := tx.Model(&Task{}).Where("id = ? AND stop_acked_at IS NULL", t.ID).Update("stop_acked_at", now).Error; err != nil {
					return err
				}
			default:
				status, why := TaskDone, ""
				switch e.Event {
				case "failed":
					status, why = TaskFailed, "the agent reported a failure"
				case "stopped":
					status, why = TaskRequeued, "the agent stopped it"
				}
				if err := s.endTask(ctx, tx, t, status, why, now); err != nil {
					return err
				}
				if err := tx.Model(&Task{}).Where("id = ?", t.ID).Update("stop_acked_at", now).Error; err != nil {
					return err
				}
			}
		}
		for _, m := range r.Measured {
			if err := recordMeasurement(tx, m, now); err != nil {
				return err
			}
		}
		return saveAccounts(tx, &ic, acc, nil, nil, now)
	}
}

// saveUsage stores owners' usage as reported at now, carrying each row's integral
// over the time its previous units held. The caller holds the cluster's lock, so
// reports of one cluster's pools apply one at a time.
func saveUsage(tx *gorm.DB, cluster string, usage []OwnerUsage, now time.Time) error {
	if len(usage) == 0 {
		return nil
	}
	var old []IdleUsage
	if err := tx.Where("pool_id IN (SELECT id FROM pools WHERE cluster_id = ?)", cluster).Find(&old).Error; err != nil {
		return err
	}
	prev := map[[2]string]IdleUsage{}
	for _, u := range old {
		prev[[2]string{u.PoolID, u.TeamID}] = u
	}
	for _, u := range usage {
		row := IdleUsage{PoolID: u.Pool, TeamID: u.Team, Units: u.Units, ReportedAt: now}
		if p, ok := prev[[2]string{u.Pool, u.Team}]; ok {
			row.UnitSeconds = p.integralAt(now)
		}
		prev[[2]string{u.Pool, u.Team}] = row // a report naming a pair twice: the last holds, for no time
		if err := tx.Save(&row).Error; err != nil {
			return err
		}
	}
	return nil
}

// TickResult says what one Tick did.
type TickResult struct {
	Requeued map[string]int // cluster -> tasks requeued because its agent went silent
}

// Tick is the best-effort scheduled job: it brings every cluster's accounts up to
// now (so pages show current contribution and utility) and requeues the running
// tasks of clusters whose agents have not reported for the agent timeout. Its state
// is in the database: a repeat changes nothing new.
func (s *Service) Tick(ctx context.Context) (TickResult, error) {
	rep := TickResult{Requeued: map[string]int{}}
	var clusters []string
	if err := s.db.Read.WithContext(ctx).Model(&IdleCluster{}).Order("cluster_id").Pluck("cluster_id", &clusters).Error; err != nil {
		return rep, err
	}
	for _, cluster := range clusters {
		err := s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			now := s.now()
			ic, err := lockIdleCluster(tx, cluster, now)
			if err != nil {
				return err
			}
			acc, open, err := advance(tx, &ic, now)
			if err != nil {
				return err
			}
			now = ic.AsOf
			silent := ic.AgentSeenAt == nil || now.Sub(*ic.AgentSeenAt) >= s.cfg.AgentTimeout
			if silent {
				for _, t := range open {
					why := fmt.Sprintf("the agent of %s has not reported for %s", cluster, s.cfg.AgentTimeout)
					if err := s.endTask(ctx, tx, t.Task, TaskRequeued, why, now); err != nil {
						return err
					}
					rep.Requeued[cluster]++
				}
			}
			return saveAccounts(tx, &ic, acc, nil, nil, now)
		})
		if err != nil {
			return rep, fmt.Errorf("cluster %s: %w", cluster, err)
		}
	}
	return rep, nil
}

// Verify checks the best-effort invariants on the database and returns every
// violation (none when sound): a job's running count equals its running task rows;
// what an abacus job captured and released equals its hold's parts and never
// exceeds its budget; a done or cancelled job holds nothing; only a done job was
// charged; a job whose SLO was missed was charged nothing, one whose SLO was met
// its whole budget.
func (s *Service) Verify(ctx context.Context) ([]ledger.Violation, error) {
	return ledger.RunChecks(ctx, s.db.Read, []ledger.Check{
		{Name: "best-effort job counts its running tasks", Query: `SELECT j.id, j.running, (SELECT COUNT(*) FROM best_effort_tasks t
			WHERE t.job_id = j.id AND t.status = 'running') AS rows FROM best_effort_jobs j
			WHERE j.running <> (SELECT COUNT(*) FROM best_effort_tasks t WHERE t.job_id = j.id AND t.status = 'running') ORDER BY j.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("best-effort job %v counts %v running tasks, but %v task rows run", r["id"], r["running"], r["rows"])
			}},
		{Name: "best-effort charge matches its hold", Query: `SELECT j.id, j.captured, j.released, h.captured AS hold_captured, h.released AS hold_released
			FROM best_effort_jobs j JOIN ledger_holds h ON h.id = j.hold_id
			WHERE j.captured <> h.captured OR j.released <> h.released OR j.captured + j.released > j.budget ORDER BY j.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("best-effort job %v charged %v and released %v, but its hold captured %v and released %v",
					r["id"], r["captured"], r["released"], r["hold_captured"], r["hold_released"])
			}},
		{Name: "finished best-effort job holds nothing", Query: `SELECT j.id, j.status FROM best_effort_jobs j JOIN ledger_holds h ON h.id = j.hold_id
			WHERE (j.status = 'done' OR (j.status = 'cancelled' AND j.running = 0)) AND h.status = 'active' ORDER BY j.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("best-effort job %v is %v but its hold is still active", r["id"], r["status"])
			}},
		{Name: "only a done best-effort job is charged", Query: `SELECT j.id, j.status, j.captured FROM best_effort_jobs j
			WHERE j.captured > 0 AND j.status <> 'done' ORDER BY j.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("best-effort job %v is %v but was charged %v", r["id"], r["status"], r["captured"])
			}},
		{Name: "a best-effort job pays only if its SLO was met", Query: `SELECT j.id, j.slo, j.captured, j.budget FROM best_effort_jobs j
			WHERE (j.slo = 'missed' AND j.captured > 0) OR (j.slo = 'met' AND j.captured <> j.budget) ORDER BY j.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("best-effort job %v's SLO was %v but it was charged %v of its budget %v", r["id"], r["slo"], r["captured"], r["budget"])
			}},
	})
}
