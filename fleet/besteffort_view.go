package fleet

import (
	"context"
	"slices"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"gorm.io/gorm"
)

// JobView is a best-effort job as pages and the API show it: the job, its place in
// its cluster's queue (1 is next; 0 when no task waits), an estimated start for its
// next waiting task (nil when there is no estimate), the policy of its cluster and
// its latest task runs (newest first, at most 50).
type JobView struct {
	Job
	Position       int64
	EstimatedStart *time.Time
	Policy         string
	Runs           []Task
}

// Job returns one best-effort job. ENOTFOUND when there is none.
func (s *BestEffort) Job(ctx context.Context, id int64) (JobView, error) {
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
func (s *BestEffort) Jobs(ctx context.Context, f JobFilter) ([]JobView, error) {
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
// its policy would serve it now: teams by their last priority (highest first), then
// jobs by release; a job's position counts the waiting tasks ahead of it. The
// estimate spreads those tasks over the best-effort tasks running in the cluster,
// each taking the mean run time of the cluster's tasks that ended in the last week
// (or the job's maximum task duration when none did).
func (s *BestEffort) views(db *gorm.DB, js []Job) ([]JobView, error) {
	out := make([]JobView, len(js))
	clusters := map[string]*clusterQueue{}
	now := s.now()
	for i, j := range js {
		out[i] = JobView{Job: j}
		q := clusters[j.ClusterID]
		if q == nil {
			var err error
			if q, err = loadQueue(db, j.ClusterID, now); err != nil {
				return nil, err
			}
			clusters[j.ClusterID] = q
		}
		out[i].Policy = q.policy
		if j.Queued == 0 || (j.Status != JobQueued && j.Status != JobRunning) {
			continue
		}
		ahead := q.ahead(j.ID)
		out[i].Position = ahead + 1
		mean := q.meanRun
		if mean == 0 && j.MaxTaskDuration > 0 {
			mean = time.Duration(j.MaxTaskDuration) * time.Second
		}
		if mean > 0 {
			waves := ahead / max(q.running, 1)
			at := now.Add(time.Duration(waves) * mean)
			out[i].EstimatedStart = &at
		}
	}
	return out, nil
}

// clusterQueue is one cluster's waiting jobs in the order the policy serves them.
type clusterQueue struct {
	policy  string
	order   []Job
	running int64
	meanRun time.Duration
}

func loadQueue(db *gorm.DB, cluster string, now time.Time) (*clusterQueue, error) {
	q := &clusterQueue{policy: DefaultPolicy}
	var ic IdleCluster
	if err := db.Limit(1).Find(&ic, "cluster_id = ?", cluster).Error; err != nil {
		return nil, err
	}
	if ic.Policy != "" {
		q.policy = ic.Policy
	}
	var teams []IdleTeam
	if err := db.Where("cluster_id = ?", cluster).Find(&teams).Error; err != nil {
		return nil, err
	}
	prio := map[string]float64{}
	for _, t := range teams {
		prio[t.TeamID] = t.Priority
	}
	if err := db.Where("cluster_id = ? AND status IN ? AND queued > 0", cluster, []JobStatus{JobQueued, JobRunning}).Order("id").Find(&q.order).Error; err != nil {
		return nil, err
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
		return nil, err
	}
	q.running = agg.Running
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
func (s *BestEffort) Cancel(ctx context.Context, by exchange.User, id int64) (JobView, error) {
	var j Job
	if err := s.db.Read.WithContext(ctx).Limit(1).Find(&j, "id = ?", id).Error; err != nil {
		return JobView{}, err
	}
	if j.ID == 0 || actFor(by, j.TeamID) != nil {
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
