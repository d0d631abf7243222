package besteffort

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/sharing"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Lock order of best-effort writes (it extends exchange/locks.go's): the cluster's
// idle_clusters row first (FOR UPDATE, through an UPDATE of the row), then job and
// task rows, then the ledger's rows (an abacus budget's hold). Every write that
// changes a job's task counts, a task or the accounts takes the cluster's row, so
// on PostgreSQL the writers of one cluster run one after another and never
// deadlock; on SQLite the single writer serializes them anyway.

// lockIdleCluster creates the cluster's row if it has none, locks it until tx ends
// and returns it. ENOTFOUND for an unknown cluster.
func lockIdleCluster(tx *gorm.DB, cluster string, now time.Time) (IdleCluster, error) {
	if err := exists(tx, "clusters", cluster, "cluster: no cluster %q", cluster); err != nil {
		return IdleCluster{}, err
	}
	if err := ensureIdleCluster(tx, cluster, now); err != nil {
		return IdleCluster{}, err
	}
	var ic IdleCluster
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&ic, "cluster_id = ?", cluster).Error
	return ic, err
}

// openTask is a running task with what the engine needs of its job.
type openTask struct {
	Task
	job Job
}

func (t openTask) engine() sharing.Task {
	return sharing.Task{ID: strconv.FormatInt(t.ID, 10), Job: strconv.FormatInt(t.JobID, 10), Team: t.TeamID,
		Configuration: t.job.Config(), Started: t.StartedAt, Enqueued: t.job.EnqueuedAt, Lenders: t.Shares()}
}

// runningTasks lists the cluster's running tasks with their jobs, oldest first.
func runningTasks(tx *gorm.DB, cluster string) ([]openTask, error) {
	var ts []Task
	if err := tx.Where("cluster_id = ? AND status = ?", cluster, TaskRunning).Order("id").Find(&ts).Error; err != nil {
		return nil, err
	}
	jobs, err := jobsByID(tx, ts)
	if err != nil {
		return nil, err
	}
	out := make([]openTask, len(ts))
	for i, t := range ts {
		out[i] = openTask{Task: t, job: jobs[t.JobID]}
	}
	return out, nil
}

func jobsByID(tx *gorm.DB, ts []Task) (map[int64]Job, error) {
	ids := map[int64]bool{}
	var list []int64
	for _, t := range ts {
		if !ids[t.JobID] {
			ids[t.JobID] = true
			list = append(list, t.JobID)
		}
	}
	out := map[int64]Job{}
	if len(list) == 0 {
		return out, nil
	}
	var js []Job
	if err := tx.Where("id IN ?", list).Find(&js).Error; err != nil {
		return nil, err
	}
	for _, j := range js {
		out[j.ID] = j
	}
	return out, nil
}

// loadAccounts restores the cluster's accounts as stored (up to ic.AsOf).
func loadAccounts(tx *gorm.DB, ic IdleCluster) (*sharing.Accounts, error) {
	var bs []IdleBalance
	if err := tx.Where("cluster_id = ?", ic.ClusterID).Order("team_id, pool_id").Find(&bs).Error; err != nil {
		return nil, err
	}
	var ts []IdleTeam
	if err := tx.Where("cluster_id = ?", ic.ClusterID).Order("team_id").Find(&ts).Error; err != nil {
		return nil, err
	}
	st := sharing.State{AsOf: ic.AsOf, Seq: ic.Seq}
	for _, b := range bs {
		st.Balances = append(st.Balances, sharing.Balance{Team: b.TeamID, Pool: b.PoolID, Surface: b.Surface, Orig: b.Orig, Rel: b.Rel,
			LentSurface: b.LentSurface, LentOrig: b.LentOrig, LentRel: b.LentRel})
	}
	for _, t := range ts {
		if t.Served > 0 {
			st.Served = append(st.Served, sharing.Served{Team: t.TeamID, Seq: t.Served})
		}
	}
	acc, err := sharing.Restore(st)
	if err != nil {
		return nil, clearhouse.Errorf(clearhouse.EINTERNAL, "cluster %s: stored accounts: %v", ic.ClusterID, err)
	}
	return acc, nil
}

// advance brings the cluster's accounts up to now with the tasks running now (every
// task that ended did so at or before the accounts' time: each end is recorded
// after an advance, at its time). A task of a job with a maximum task duration
// counts at most that long, however late the next decision stops it.
func advance(tx *gorm.DB, ic *IdleCluster, now time.Time) (*sharing.Accounts, []openTask, error) {
	acc, err := loadAccounts(tx, *ic)
	if err != nil {
		return nil, nil, err
	}
	open, err := runningTasks(tx, ic.ClusterID)
	if err != nil {
		return nil, nil, err
	}
	if now.Before(ic.AsOf) {
		now = ic.AsOf // another server's clock ran ahead: time stands still here
	}
	runs := make([]sharing.Run, len(open))
	for i, t := range open {
		runs[i] = sharing.Run{Task: t.engine()}
		if d := t.job.MaxTaskDuration; d > 0 { // it is stopped then: never count it longer
			runs[i].Ended = t.StartedAt.Add(time.Duration(d) * time.Second)
		}
	}
	if err := acc.Advance(runs, now); err != nil {
		return nil, nil, err
	}
	ic.AsOf = acc.AsOf()
	return acc, open, nil
}

// upsertBalances inserts rows (each team and pool once) or updates cols of those
// that exist, in multi-row statements.
func upsertBalances(tx *gorm.DB, rows []IdleBalance, cols ...string) error {
	if len(rows) == 0 {
		return nil
	}
	return tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "team_id"}, {Name: "pool_id"}},
		DoUpdates: clause.AssignmentColumns(cols)}).CreateInBatches(rows, 200).Error
}

// saveAccounts writes the accounts and the cluster's clock and sequence back, and
// the priorities of a decision: priority per team in the cluster, poolPriority per
// pool and team (nil after a report or tick: the last decision's stay).
func saveAccounts(tx *gorm.DB, ic *IdleCluster, acc *sharing.Accounts, priority map[string]float64, poolPriority map[string]map[string]float64, now time.Time) error {
	st := acc.Export()
	rows := make([]IdleBalance, 0, len(st.Balances))
	for _, b := range st.Balances {
		rows = append(rows, IdleBalance{ClusterID: ic.ClusterID, TeamID: b.Team, PoolID: b.Pool, Surface: b.Surface, Orig: b.Orig, Rel: b.Rel,
			LentSurface: b.LentSurface, LentOrig: b.LentOrig, LentRel: b.LentRel})
	}
	if err := upsertBalances(tx, rows, "cluster_id", "surface", "orig", "rel", "lent_surface", "lent_orig", "lent_rel"); err != nil {
		return err
	}
	rows = rows[:0]
	for _, pool := range sortedPools(poolPriority) {
		for _, team := range sortedPools(poolPriority[pool]) {
			rows = append(rows, IdleBalance{ClusterID: ic.ClusterID, TeamID: team, PoolID: pool, Priority: poolPriority[pool][team]})
		}
	}
	if err := upsertBalances(tx, rows, "priority"); err != nil {
		return err
	}
	teams := map[string]*IdleTeam{}
	for _, m := range st.Served {
		teams[m.Team] = &IdleTeam{ClusterID: ic.ClusterID, TeamID: m.Team, Served: m.Seq}
	}
	for team, p := range priority {
		t := teams[team]
		if t == nil {
			t = &IdleTeam{ClusterID: ic.ClusterID, TeamID: team}
			var prior IdleTeam
			if err := tx.Where("cluster_id = ? AND team_id = ?", ic.ClusterID, team).Limit(1).Find(&prior).Error; err != nil {
				return err
			}
			t.Served = prior.Served
			teams[team] = t
		}
		t.Priority = p
	}
	for _, t := range teams {
		cols := []string{"served"}
		if _, ok := priority[t.TeamID]; ok {
			cols = append(cols, "priority")
		}
		if err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "cluster_id"}, {Name: "team_id"}},
			DoUpdates: clause.AssignmentColumns(cols)}).Create(t).Error; err != nil {
			return err
		}
	}
	ic.Seq, ic.UpdatedAt = st.Seq, now
	return tx.Model(&IdleCluster{}).Where("cluster_id = ?", ic.ClusterID).Updates(map[string]any{
		"as_of": ic.AsOf, "seq": ic.Seq, "decisions": ic.Decisions, "agent_seen_at": ic.AgentSeenAt, "auction": ic.Auction, "updated_at": now}).Error
}

func lendersJSON(s []sharing.Share) string {
	if s == nil {
		s = []sharing.Share{}
	}
	b, _ := json.Marshal(s)
	return string(b)
}
