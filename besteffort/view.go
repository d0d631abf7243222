package besteffort

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/sharing"
)

// JobView is a best-effort job as pages and the API show it: the job, its place in
// its cluster's queue (1 is next; 0 when no task waits), an estimated start for its
// next waiting task (nil when there is no estimate), the policy that orders its
// cluster's queue (the one policy all its pools follow, or PolicyPerPool when they
// follow different ones), the policy each pool of its configuration follows, and
// its latest task runs (newest first, at most 50).
type JobView struct {
	Job
	Position       int64
	EstimatedStart *time.Time
	Policy         string
	PoolPolicies   map[string]string
	Runs           []Task
}

// PolicyPerPool is JobView.Policy for a job whose cluster's pools follow different
// policies: its queue is ordered by the rule of sharing/perpool.go, and
// JobView.PoolPolicies says which policy ranks the teams in each of the job's pools.
const PolicyPerPool = "per-pool"

// Job returns one best-effort job. ENOTFOUND when there is none.
func (s *Service) Job(ctx context.Context, id int64) (JobView, error) {
	db := s.db.Read.WithContext(ctx)
	var j Job
	if err := db.Limit(1).Find(&j, "id = ?", id).Error; err != nil {
		return JobView{}, err
	}
	if j.ID == 0 {
		return JobView{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "best-effort job: no job %d", id)
	}
	vs, err := s.views(db, []Job{j})
	if err != nil {
		return JobView{}, err
	}
	v := vs[0]
	if err := db.Where("job_id = ?", id).Order("id DESC").Limit(50).Find(&v.Runs).Error; err != nil {
		return JobView{}, err
	}
	return v, nil
}

// JobFilter selects best-effort jobs: of one team (empty: every team), one cluster
// (empty: every cluster), with some statuses (none: all), older than Before (0: the
// newest), at most Limit (at most 1,000).
type JobFilter struct {
	Team, Cluster string
	Statuses      []JobStatus
	Before        int64
	Limit         int
}

// Jobs lists the newest jobs the filter selects, newest first.
func (s *Service) Jobs(ctx context.Context, f JobFilter) ([]JobView, error) {
	db := s.db.Read.WithContext(ctx)
	q := db.Model(&Job{})
	if f.Team != "" {
		q = q.Where("team_id = ?", f.Team)
	}
	if f.Cluster != "" {
		q = q.Where("cluster_id = ?", f.Cluster)
	}
	if len(f.Statuses) > 0 {
		q = q.Where("status IN ?", f.Statuses)
	}
	if f.Before > 0 {
		q = q.Where("id < ?", f.Before)
	}
	limit := f.Limit
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	var js []Job
	if err := q.Order("id DESC").Limit(limit).Find(&js).Error; err != nil {
		return nil, err
	}
	return s.views(db, js)
}

// views adds queue positions and estimated starts. A cluster's queue is ordered as
// its policies would serve it now. When all its pools follow one policy: teams by
// their priority at the last decision (highest first), then jobs by release. When
// its pools follow different policies, by the rule decisions follow then
// (sharing.QueueByStanding, see orderByStanding): each pool's policy ranks the
// teams by the accounts brought up to now (equal priorities sharing a rank), a job
// stands at its team's worst rank among the pools it needs, the best standing
// first, then jobs by release, then by team. Either order assumes every task fits.
// A job's position counts the waiting tasks ahead of it. The next job's estimate is
// now (it starts when units free up); a later job's spreads the tasks ahead over the
// best-effort tasks running in the cluster, each taking the mean run time of the
// cluster's tasks that ended in the last week (or the job's maximum task duration
// when none did). With no task running there is no pace to go by, and no estimate.
func (s *Service) views(db *gorm.DB, js []Job) ([]JobView, error) {
	out := make([]JobView, len(js))
	clusters := map[string]*clusterQueue{}
	now := s.now()
	for i, j := range js {
		out[i] = JobView{Job: j}
		q := clusters[j.ClusterID]
		if q == nil {
			var err error
			if q, err = s.loadQueue(db, j.ClusterID, now); err != nil {
				return nil, err
			}
			clusters[j.ClusterID] = q
		}
		out[i].Policy = q.policy
		out[i].PoolPolicies = map[string]string{}
		for pool := range j.Config() {
			out[i].PoolPolicies[pool] = q.pools[pool]
		}
		if j.Queued == 0 || (j.Status != JobQueued && j.Status != JobRunning) {
			continue
		}
		ahead := q.ahead(j.ID)
		out[i].Position = ahead + 1
		mean := q.meanRun
		if mean == 0 && j.MaxTaskDuration > 0 {
			mean = time.Duration(j.MaxTaskDuration) * time.Second
		}
		switch {
		case ahead == 0: // next: it starts when units free up
			out[i].EstimatedStart = &now
		case mean > 0 && q.running > 0:
			at := now.Add(time.Duration(ahead/q.running) * mean)
			out[i].EstimatedStart = &at
		}
	}
	return out, nil
}

// clusterQueue is one cluster's waiting jobs in the order its policies serve them.
type clusterQueue struct {
	policy  string            // the cluster's one policy, or PolicyPerPool
	pools   map[string]string // pool -> the policy it follows
	order   []Job
	running int64
	meanRun time.Duration
}

func (s *Service) loadQueue(db *gorm.DB, cluster string, now time.Time) (*clusterQueue, error) {
	ic := IdleCluster{ClusterID: cluster}
	if err := db.Limit(1).Find(&ic, "cluster_id = ?", cluster).Error; err != nil {
		return nil, err
	}
	if ic.Policy == "" {
		ic.Policy = DefaultPolicy
	}
	q := &clusterQueue{policy: ic.Policy}
	mixed, err := q.poolPolicies(db, ic)
	if err != nil {
		return nil, err
	}
	if err := db.Where("cluster_id = ? AND status IN ? AND queued > 0", cluster, []JobStatus{JobQueued, JobRunning}).Order("id").Find(&q.order).Error; err != nil {
		return nil, err
	}
	if mixed {
		q.policy = PolicyPerPool
		if err := s.orderByStanding(db, ic, q, now); err != nil {
			return nil, err
		}
	} else if err := q.orderByPriority(db, cluster); err != nil {
		return nil, err
	}
	var ended []Task
	if err := db.Where("cluster_id = ? AND status = ? AND ended_at > ?", cluster, TaskDone, now.Add(-7*24*time.Hour)).
		Order("id DESC").Limit(1000).Find(&ended).Error; err != nil {
		return nil, err
	}
	var total time.Duration
	for _, t := range ended {
		total += t.EndedAt.Sub(t.StartedAt)
	}
	if len(ended) > 0 {
		q.meanRun = total / time.Duration(len(ended))
	}
	return q, nil
}

// poolPolicies sets the policy each of the cluster's pools follows (its own, else
// the cluster's; abacus covers the whole cluster), and q.policy to the one they
// all follow; it reports whether they differ.
func (q *clusterQueue) poolPolicies(db *gorm.DB, ic IdleCluster) (mixed bool, err error) {
	var pools []exchange.Pool
	if err := db.Where("cluster_id = ?", ic.ClusterID).Find(&pools).Error; err != nil {
		return false, err
	}
	var settings []IdlePool
	if err := db.Where("pool_id IN (SELECT id FROM pools WHERE cluster_id = ?)", ic.ClusterID).Find(&settings).Error; err != nil {
		return false, err
	}
	own := map[string]string{}
	for _, st := range settings {
		own[st.PoolID] = st.Policy
	}
	q.pools = map[string]string{}
	for i, p := range pools {
		q.pools[p.ID] = ic.Policy
		if own[p.ID] != "" && ic.Policy != PolicyAbacus {
			q.pools[p.ID] = own[p.ID]
		}
		if i == 0 {
			q.policy = q.pools[p.ID] // every pool may follow one policy of its own
		}
		mixed = mixed || q.pools[p.ID] != q.pools[pools[0].ID]
	}
	return mixed, nil
}

// orderByPriority orders a cluster under one policy: teams by their priority at
// the last decision (idle_teams), highest first, then jobs by release.
func (q *clusterQueue) orderByPriority(db *gorm.DB, cluster string) error {
	var teams []IdleTeam
	if err := db.Where("cluster_id = ?", cluster).Find(&teams).Error; err != nil {
		return err
	}
	prio := map[string]float64{}
	for _, t := range teams {
		prio[t.TeamID] = t.Priority
	}
	slices.SortStableFunc(q.order, func(a, b Job) int {
		if pa, pb := prio[a.TeamID], prio[b.TeamID]; pa != pb {
			if pa > pb {
				return -1
			}
			return 1
		}
		return a.EnqueuedAt.Compare(b.EnqueuedAt)
	})
	var agg struct {
		Running int64
	}
	if err := db.Model(&Task{}).Select("COUNT(*) AS running").Where("cluster_id = ? AND status = ?", cluster, TaskRunning).Scan(&agg).Error; err != nil {
		return err
	}
	q.running = agg.Running
	return nil
}

// orderByStanding orders a cluster whose pools follow different policies by
// sharing.QueueByStanding: the teams the next decision would rank (the cluster's
// snapshot now) by what they did in each pool (the accounts brought up to now, in
// memory), as a decision would. (The priorities the last decision stored are not
// enough: a team it did not rank, having then no job, quota or task there, keeps
// an older priority.)
// It reads in one transaction (repeatable read on PostgreSQL; SQLite's reads in a
// transaction see one snapshot), as decisions commit beside it.
func (s *Service) orderByStanding(db *gorm.DB, ic IdleCluster, q *clusterQueue, now time.Time) error {
	var ids []string
	err := db.Transaction(func(tx *gorm.DB) error {
		var cur IdleCluster // the accounts' clock and sequence in this transaction
		if err := tx.Limit(1).Find(&cur, "cluster_id = ?", ic.ClusterID).Error; err != nil {
			return err
		}
		ic.AsOf, ic.Seq = cur.AsOf, cur.Seq
		acc, open, err := advance(tx, &ic, now)
		if err != nil {
			return err
		}
		q.running = int64(len(open))
		snap, err := s.snapshot(tx, ic, open, ic.AsOf)
		if err != nil {
			return err
		}
		policy, err := sharing.ByName(ic.Policy)
		if err != nil {
			return err
		}
		ids, err = sharing.QueueByStanding(&snap, acc, policy)
		return err
	}, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return err
	}
	byID := map[string]Job{}
	for _, j := range q.order {
		byID[strconv.FormatInt(j.ID, 10)] = j
	}
	order := make([]Job, 0, len(q.order))
	for _, id := range ids {
		if j, ok := byID[id]; ok {
			order = append(order, j)
			delete(byID, id)
		}
	}
	for _, j := range q.order { // queued between the two reads: last
		if _, ok := byID[strconv.FormatInt(j.ID, 10)]; ok {
			order = append(order, j)
		}
	}
	q.order = order
	return nil
}

// ahead counts the waiting tasks of jobs before job id in the queue.
func (q *clusterQueue) ahead(id int64) int64 {
	var n int64
	for _, j := range q.order {
		if j.ID == id {
			return n
		}
		n += j.Queued
	}
	return n
}

// Cancel cancels a job of by's team: its waiting tasks are dropped, its running
// tasks stopped (the agent is told to stop them) and what is left of its budget
// released. Cancelling a cancelled job again changes nothing. ENOTFOUND for a job
// of another team; ECONFLICT for a job that is done.
func (s *Service) Cancel(ctx context.Context, by identity.User, id int64) (JobView, error) {
	var j Job
	if err := s.db.Read.WithContext(ctx).Limit(1).Find(&j, "id = ?", id).Error; err != nil {
		return JobView{}, err
	}
	if j.ID == 0 || fleet.ActFor(by, j.TeamID) != nil {
		return JobView{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "best-effort job: no job %d for your team", id)
	}
	err := s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		now := s.now()
		ic, err := lockIdleCluster(tx, j.ClusterID, now)
		if err != nil {
			return err
		}
		if err := tx.Take(&j, "id = ?", id).Error; err != nil {
			return err
		}
		switch j.Status {
		case JobCancelled:
			return nil
		case JobDone:
			return clearhouse.Errorf(clearhouse.ECONFLICT, "best-effort job: %d is done and cannot be cancelled", id)
		}
		acc, open, err := advance(tx, &ic, now)
		if err != nil {
			return err
		}
		now = ic.AsOf
		if err := tx.Exec(`UPDATE best_effort_jobs SET status = 'cancelled', cancelled = cancelled + queued, queued = 0,
			ended_at = ?, updated_at = ? WHERE id = ?`, now, now, id).Error; err != nil {
			return err
		}
		for _, t := range open {
			if t.JobID == id {
				if err := s.endTask(ctx, tx, t.Task, TaskCancelled, "cancelled by "+by.Email, now); err != nil {
					return err
				}
			}
		}
		if err := s.settleJob(ctx, tx, id, now); err != nil {
			return err
		}
		return saveAccounts(tx, &ic, acc, nil, nil, now)
	})
	if err != nil {
		return JobView{}, err
	}
	return s.Job(ctx, id)
}
