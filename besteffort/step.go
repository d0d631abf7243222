package besteffort

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/sharing"
	"gorm.io/gorm"
)

// capacityNow is each pool's capacity at now: the latest capacity change an agent
// reported that covers now, else the pool's configured capacity.
func capacityNow(tx *gorm.DB, pools []exchange.Pool, now time.Time) (map[string]int64, error) {
	out := map[string]int64{}
	ids := make([]string, len(pools))
	for i, p := range pools {
		out[p.ID], ids[i] = p.Capacity, p.ID
	}
	var cs []fleet.CapacityChange
	if err := tx.Where("pool_id IN ? AND from_at <= ? AND to_at > ?", ids, now, now).Order("id").Find(&cs).Error; err != nil {
		return nil, err
	}
	for _, c := range cs {
		out[c.PoolID] = c.Units
	}
	return out, nil
}

// reservedNow is, per team and pool of the cluster, the units its accepted
// reservations hold at now (requests started and not ended).
func reservedNow(tx *gorm.DB, cluster string, now time.Time) (map[[2]string]int64, error) {
	spans, err := reservedSpans(tx, cluster, now, now)
	if err != nil {
		return nil, err
	}
	var out map[[2]string]int64
	for _, r := range spans {
		if !now.Before(r.Start) && now.Before(r.End) {
			if out == nil {
				out = map[[2]string]int64{}
			}
			out[[2]string{r.Team, r.Pool}] += r.Units
		}
	}
	return out, nil
}

// reservedSpan is what one request of an accepted reservation holds of a pool while
// it runs, from Start until End (its planned end, or when it ended if earlier).
type reservedSpan struct {
	Team, Pool string
	Start, End time.Time
	Units      int64
}

// reservedSpans lists the requests of the cluster's accepted reservations that
// started by to and had not ended at from, per pool of their configuration.
func reservedSpans(tx *gorm.DB, cluster string, from, to time.Time) ([]reservedSpan, error) {
	var reqs []fleet.ReservationRequest
	err := tx.Where(`reservation_id IN (SELECT id FROM reservations WHERE status = ? AND cluster_id = ?)
		AND start_at IS NOT NULL AND start_at <= ?`, fleet.ReservationAccepted, cluster, to).Find(&reqs).Error
	if err != nil || len(reqs) == 0 {
		return nil, err
	}
	ids := map[int64]bool{}
	var list []int64
	for _, q := range reqs {
		if !ids[q.ReservationID] {
			ids[q.ReservationID] = true
			list = append(list, q.ReservationID)
		}
	}
	var rs []fleet.Reservation
	if err := tx.Where("id IN ?", list).Find(&rs).Error; err != nil {
		return nil, err
	}
	team := map[int64]string{}
	for _, r := range rs {
		team[r.ID] = r.TeamID
	}
	var out []reservedSpan
	for _, q := range reqs {
		if !from.Before(q.End()) {
			continue
		}
		for pool, units := range q.Config() {
			out = append(out, reservedSpan{Team: team[q.ReservationID], Pool: pool, Start: *q.StartAt, End: q.End(), Units: units * q.Count})
		}
	}
	return out, nil
}

// snapshot builds the engine's view of the cluster at now from the database.
func (s *Service) snapshot(tx *gorm.DB, ic IdleCluster, open []openTask, now time.Time) (sharing.Snapshot, error) {
	snap := sharing.Snapshot{Now: now}
	var pools []exchange.Pool
	if err := tx.Where("cluster_id = ?", ic.ClusterID).Order("id").Find(&pools).Error; err != nil {
		return snap, err
	}
	capacity, err := capacityNow(tx, pools, now)
	if err != nil {
		return snap, err
	}
	var settings []IdlePool
	if err := tx.Where("pool_id IN (SELECT id FROM pools WHERE cluster_id = ?)", ic.ClusterID).Find(&settings).Error; err != nil {
		return snap, err
	}
	set := map[string]IdlePool{}
	for _, p := range settings {
		set[p.PoolID] = p
	}
	holdings := map[string]map[string]*sharing.Holding{} // pool -> team
	hold := func(pool, team string) *sharing.Holding {
		if holdings[pool] == nil {
			holdings[pool] = map[string]*sharing.Holding{}
		}
		h := holdings[pool][team]
		if h == nil {
			h = &sharing.Holding{Team: team}
			holdings[pool][team] = h
		}
		return h
	}
	qs, err := fleet.Quotas(tx)
	if err != nil {
		return snap, err
	}
	inCluster := map[string]bool{}
	for _, p := range pools {
		inCluster[p.ID] = true
	}
	for _, q := range qs {
		if inCluster[q.PoolID] && q.Quota > 0 {
			hold(q.PoolID, q.TeamID).Quota = q.Quota
		}
	}
	var usage []IdleUsage
	if err := tx.Where("pool_id IN (SELECT id FROM pools WHERE cluster_id = ?)", ic.ClusterID).Find(&usage).Error; err != nil {
		return snap, err
	}
	for _, u := range usage {
		if u.Units > 0 {
			hold(u.PoolID, u.TeamID).Used = u.Units
		}
	}
	reserved, err := reservedNow(tx, ic.ClusterID, now)
	if err != nil {
		return snap, err
	}
	for k, units := range reserved {
		if inCluster[k[1]] && units > 0 {
			hold(k[1], k[0]).Reserved = units
		}
	}
	for _, t := range open { // a lender that no longer holds quota is still listed
		for _, sh := range t.Shares() {
			if sh.Lender != sharing.Operator && inCluster[sh.Pool] {
				hold(sh.Pool, sh.Lender)
			}
		}
	}
	for _, p := range pools {
		ps := sharing.Pool{Name: p.ID, Capacity: capacity[p.ID], MinRuntime: DefaultMinRuntime, Exposure: sharing.DefaultExposure}
		if st, ok := set[p.ID]; ok {
			ps.MinRuntime, ps.Exposure = time.Duration(st.MinRuntime)*time.Second, st.Exposure
			if ic.Policy != PolicyAbacus {
				ps.Policy = st.Policy
			}
		}
		for _, team := range sortedPools(holdings[p.ID]) {
			ps.Teams = append(ps.Teams, *holdings[p.ID][team])
		}
		snap.Pools = append(snap.Pools, ps)
	}
	var jobs []Job
	if err := tx.Where("cluster_id = ? AND status IN ? AND queued > 0", ic.ClusterID, []JobStatus{JobQueued, JobRunning}).Order("id").Find(&jobs).Error; err != nil {
		return snap, err
	}
	for _, j := range jobs {
		snap.Jobs = append(snap.Jobs, sharing.Job{ID: strconv.FormatInt(j.ID, 10), Team: j.TeamID, Configuration: j.Config(),
			Waiting: int(j.Queued), Enqueued: j.EnqueuedAt, MaxTaskDuration: time.Duration(j.MaxTaskDuration) * time.Second,
			Budget: j.Budget.Dollars(), Utility: j.Utility, Weights: j.WeightsByPool()})
	}
	for _, t := range open {
		snap.Running = append(snap.Running, t.engine())
	}
	return snap, nil
}

// StepResult is what one decision did in a cluster.
type StepResult struct {
	Started   int      // tasks started
	Preempted []int64  // tasks stopped to give units back
	Overran   []int64  // tasks stopped at their job's maximum task duration
	Blocked   []string // pools that need units back but cannot free them yet (minimum runtime)
}

// Step is the decision a cluster's agent triggers on every poll of its allocation:
// in one transaction it brings the cluster's accounts up to now, stops tasks that
// overran their job's maximum task duration, and applies sharing.Decide under the
// cluster's policy: tasks preempted (back in their jobs' queues), re-attributed and
// started. It records that the agent was seen. ENOTFOUND for an unknown cluster.
func (s *Service) Step(ctx context.Context, cluster string) (StepResult, error) {
	var res StepResult
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
		ic.AgentSeenAt = &now
		kept := open[:0]
		for _, t := range open {
			if d := t.job.MaxTaskDuration; d > 0 && !now.Before(t.StartedAt.Add(time.Duration(d)*time.Second)) {
				if err := s.endTask(ctx, tx, t.Task, TaskFailed, "ran past the job's maximum task duration", now); err != nil {
					return err
				}
				res.Overran = append(res.Overran, t.ID)
				continue
			}
			kept = append(kept, t)
		}
		snap, err := s.snapshot(tx, ic, kept, now)
		if err != nil {
			return err
		}
		policy, err := s.policyFor(tx, &ic, snap)
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(s.cfg.Seed, uint64(ic.Decisions)))
		ic.Decisions++
		d, err := sharing.Decide(&snap, acc, policy, rng)
		if err != nil {
			return err
		}
		if err := s.apply(ctx, tx, ic.ClusterID, kept, d, now, &res); err != nil {
			return err
		}
		return saveAccounts(tx, &ic, acc, d.Priority, poolPriorities(snap, d), now)
	})
	return res, err
}

// apply records a decision: preemptions, re-attributions and starts.
func (s *Service) apply(ctx context.Context, tx *gorm.DB, cluster string, open []openTask, d sharing.Decision, now time.Time, res *StepResult) error {
	byID := map[string]openTask{}
	for _, t := range open {
		byID[strconv.FormatInt(t.ID, 10)] = t
	}
	for _, id := range d.Preempt {
		t := byID[id]
		if err := s.endTask(ctx, tx, t.Task, TaskPreempted, "owners or reservations needed the units back", now); err != nil {
			return err
		}
		res.Preempted = append(res.Preempted, t.ID)
	}
	for _, r := range d.Reattributed {
		if err := tx.Model(&Task{}).Where("id = ?", byID[r.Task].ID).Update("lenders", lendersJSON(r.Lenders)).Error; err != nil {
			return err
		}
	}
	for _, b := range d.Blocked {
		res.Blocked = append(res.Blocked, fmt.Sprintf("%s: %d units", b.Pool, b.Units))
	}
	for _, st := range d.Starts {
		job, _ := strconv.ParseInt(st.Job, 10, 64)
		per := make([]sharing.Share, len(st.Lenders))
		for i, l := range st.Lenders {
			per[i] = sharing.Share{Pool: l.Pool, Lender: l.Lender, Units: l.Units / float64(st.Tasks)}
		}
		lenders := lendersJSON(per)
		rows := make([]Task, st.Tasks)
		for i := range rows {
			rows[i] = Task{JobID: job, ClusterID: cluster, TeamID: st.Team, Status: TaskRunning, Lenders: lenders, StartedAt: now}
		}
		if err := tx.Omit("ID").Create(&rows).Error; err != nil {
			return err
		}
		if err := moveTasks(tx, job, counts{queued: -int64(st.Tasks), running: int64(st.Tasks)}, now); err != nil {
			return err
		}
		res.Started += st.Tasks
	}
	return nil
}

// counts are changes to a job's task counts.
type counts struct{ queued, running, done, failed, cancelled, preempted int64 }

// moveTasks changes a job's task counts and sets its status from them (a cancelled
// job stays cancelled), in one statement. The table's checks refuse counts that
// would go negative or stop adding up to the job's tasks.
func moveTasks(tx *gorm.DB, job int64, c counts, now time.Time) error {
	return tx.Exec(`UPDATE best_effort_jobs SET queued = queued + ?, running = running + ?, done = done + ?,
		failed = failed + ?, cancelled = cancelled + ?, preempted = preempted + ?, updated_at = ?,
		status = CASE WHEN status = 'cancelled' THEN status WHEN running + ? > 0 THEN 'running'
			WHEN queued + ? > 0 THEN 'queued' ELSE 'done' END,
		ended_at = CASE WHEN status <> 'cancelled' AND running + ? = 0 AND queued + ? = 0 THEN ? ELSE ended_at END
		WHERE id = ?`, c.queued, c.running, c.done, c.failed, c.cancelled, c.preempted, now,
		c.running, c.queued, c.running, c.queued, now, job).Error
}

// endTask ends a running task with status at now: done and failed tasks count as
// such; preempted and requeued ones go back to the queue; cancelled ones count as
// cancelled. The job's budget is settled when that was its last task.
func (s *Service) endTask(ctx context.Context, tx *gorm.DB, t Task, status TaskStatus, reason string, now time.Time) error {
	res := tx.Model(&Task{}).Where("id = ? AND status = ?", t.ID, TaskRunning).
		Updates(map[string]any{"status": status, "reason": reason, "ended_at": now})
	if res.Error != nil || res.RowsAffected == 0 {
		return res.Error
	}
	c := counts{running: -1}
	switch status {
	case TaskDone:
		c.done = 1
	case TaskFailed:
		c.failed = 1
	case TaskCancelled:
		c.cancelled = 1
	case TaskPreempted:
		c.queued, c.preempted = 1, 1
	default:
		c.queued = 1
	}
	if err := moveTasks(tx, t.JobID, c, now); err != nil {
		return err
	}
	return s.settleJob(ctx, tx, t.JobID, now)
}

// settleJob captures a done job's budget once, or releases a cancelled one's
// (what is left of it), with idempotent postings.
func (s *Service) settleJob(ctx context.Context, tx *gorm.DB, id int64, now time.Time) error {
	var j Job
	if err := tx.Take(&j, "id = ?", id).Error; err != nil {
		return err
	}
	if j.HoldID == nil || j.Captured+j.Released >= j.Budget {
		return nil
	}
	var capture, release ledger.Money
	slo := ""
	switch {
	case j.Status == JobDone && j.MinUtility != nil && !sloMet(j):
		release, slo = j.Budget-j.Captured-j.Released, "missed"
	case j.Status == JobDone:
		capture = j.Budget - j.Captured - j.Released
		if j.MinUtility != nil {
			slo = "met"
		}
	case j.Status == JobCancelled && j.Running == 0:
		release = j.Budget - j.Captured - j.Released
	default:
		return nil
	}
	key := fmt.Sprintf("best-effort/%d/hold/%d/settle", j.ID, *j.HoldID)
	if _, err := s.ledger.WithTx(tx).SettleHoldPart(ctx, key, *j.HoldID, capture, release, ledger.Treasury,
		ledger.ReasonBestEffort, fmt.Sprintf("best-effort:%d", j.ID)); err != nil {
		return fmt.Errorf("best-effort job %d: charge: %w", j.ID, err)
	}
	return tx.Model(&Job{}).Where("id = ?", j.ID).Updates(map[string]any{
		"captured": j.Captured + capture, "released": j.Released + release, "slo": slo, "updated_at": now}).Error
}

// sloMet says whether a done job met its SLO: its utility at its mean share of each
// pool over the auctions it bid in reaches its minimum utility, less a relative 1e-9
// (abacus.SolveSLO's tolerance). A job that bid in no auction did not meet it.
func sloMet(j Job) bool {
	mean := j.MeanShares()
	if mean == nil {
		return false
	}
	return j.UtilityAt(mean) >= *j.MinUtility-1e-9*math.Abs(*j.MinUtility)
}

// policyFor returns the cluster's policy (running the auction under abacus).
func (s *Service) policyFor(tx *gorm.DB, ic *IdleCluster, snap sharing.Snapshot) (sharing.Policy, error) {
	if ic.Policy == PolicyAbacus {
		return abacusFor(tx, ic, snap)
	}
	return sharing.ByName(ic.Policy)
}

// poolPriorities is each team's priority in each pool of the snapshot.
func poolPriorities(snap sharing.Snapshot, d sharing.Decision) map[string]map[string]float64 {
	if d.PoolPriority != nil {
		return d.PoolPriority
	}
	out := map[string]map[string]float64{}
	for _, p := range snap.Pools {
		out[p.Name] = d.Priority
	}
	return out
}
