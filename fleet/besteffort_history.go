package fleet

import (
	"context"
	"slices"
	"time"

	"gorm.io/gorm/clause"
)

// History of idle capacity (issue 13): the accounts keep only their running sums, so
// a scheduled job records, every HistoryInterval, each team's contribution, utility
// and priority in each pool, with the units it lends and borrows at that moment.
// A point is stamped with the start of its interval and keyed by team, pool and
// time, so servers that take the same snapshot store it once. Retention keeps every
// point for HistoryFine, then the hourly points (minute 0) up to HistoryHourly, then
// the daily points (00:00 UTC) up to HistoryDaily; older points are deleted.
const (
	HistoryInterval = 15 * time.Minute
	HistoryFine     = 2 * 24 * time.Hour
	HistoryHourly   = 30 * 24 * time.Hour
	HistoryDaily    = 400 * 24 * time.Hour
)

// IdleHistory is one team's account in one pool at one time: a row of idle_history.
type IdleHistory struct {
	At           time.Time `gorm:"primaryKey"`
	TeamID       string    `gorm:"primaryKey"`
	PoolID       string    `gorm:"primaryKey"`
	ClusterID    string
	Policy       string
	Contribution float64
	Utility      float64
	Priority     float64
	Lent         float64
	Borrowed     float64
}

// TableName implements gorm's tabler.
func (IdleHistory) TableName() string { return "idle_history" }

// HistoryReport says what one RecordHistory did.
type HistoryReport struct {
	At       time.Time // the interval the points are stamped with
	Recorded int       // points inserted (0 when another server took this snapshot)
	Pruned   int64     // points deleted by the retention rule
}

// RecordHistory is the history job: it records every team's account in every pool
// (as TeamPools gives it) at the start of the current interval, ignoring points
// already recorded for it, then applies the retention rule. A repeat within the
// same interval changes nothing.
func (s *BestEffort) RecordHistory(ctx context.Context) (HistoryReport, error) {
	now := s.now().UTC()
	rep := HistoryReport{At: now.Truncate(HistoryInterval)}
	all, err := s.accounts(ctx, "")
	if err != nil {
		return rep, err
	}
	var rows []IdleHistory
	for _, team := range sortedPools(all) {
		for _, a := range all[team] {
			rows = append(rows, IdleHistory{At: rep.At, TeamID: team, PoolID: a.Pool, ClusterID: a.Cluster, Policy: a.Policy,
				Contribution: a.Contribution, Utility: a.Utility, Priority: a.Priority, Lent: a.Lent, Borrowed: a.Borrowed})
		}
	}
	db := s.db.Write.WithContext(ctx)
	if len(rows) > 0 {
		res := db.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(&rows, 200)
		if res.Error != nil {
			return rep, res.Error
		}
		rep.Recorded = int(res.RowsAffected)
	}
	var stamps []time.Time
	if err := db.Model(&IdleHistory{}).Distinct("at").Where("at < ?", now.Add(-HistoryFine)).Pluck("at", &stamps).Error; err != nil {
		return rep, err
	}
	var drop []time.Time
	for _, at := range stamps {
		if !keepHistory(at, now) {
			drop = append(drop, at)
		}
	}
	for chunk := range slices.Chunk(drop, 500) {
		res := db.Where("at IN ?", chunk).Delete(&IdleHistory{})
		if res.Error != nil {
			return rep, res.Error
		}
		rep.Pruned += res.RowsAffected
	}
	return rep, nil
}

// keepHistory is the retention rule for a point stamped at, at now.
func keepHistory(at, now time.Time) bool {
	at = at.UTC()
	age := now.Sub(at)
	switch {
	case age < HistoryFine:
		return true
	case age < HistoryHourly:
		return at.Minute() == 0
	case age < HistoryDaily:
		return at.Hour() == 0 && at.Minute() == 0
	}
	return false
}

// HistoryPoint is a team's account in one pool at one time.
type HistoryPoint struct {
	At                    time.Time
	Policy                string
	Contribution, Utility float64
	Priority              float64
	Lent, Borrowed        float64
}

// TeamHistory returns team's recorded points since since, by pool then time.
func (s *BestEffort) TeamHistory(ctx context.Context, team string, since time.Time) (map[string][]HistoryPoint, error) {
	var rows []IdleHistory
	if err := s.db.Read.WithContext(ctx).Where("team_id = ? AND at >= ?", team, since).Order("pool_id, at").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := map[string][]HistoryPoint{}
	for _, r := range rows {
		out[r.PoolID] = append(out[r.PoolID], HistoryPoint{At: r.At, Policy: r.Policy, Contribution: r.Contribution, Utility: r.Utility,
			Priority: r.Priority, Lent: r.Lent, Borrowed: r.Borrowed})
	}
	return out, nil
}
