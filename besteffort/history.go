package besteffort

import (
	"context"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// History of idle capacity (issue 13): the accounts keep only their running sums, so
// a scheduled job records, every HistoryInterval, each team's contribution, utility
// and priority in each pool, with the units it lends and borrows at that moment.
// A point is stamped with the start of its interval and keyed by team, pool and
// time, so servers that take the same snapshot store it once. Retention keeps every
// point for HistoryFine, then the hourly points (minute 0) up to HistoryHourly, then
// the daily points (00:00 UTC) up to HistoryDaily; older points are deleted. The
// same job records owners' own usage (idle_usage_history, IdleUsagePoint) under the
// same keys and retention, for the fairness report's replay.
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

// IdleUsagePoint is a team's own usage of a pool as recorded at one time: a row of
// idle_usage_history. UnitSeconds is the usage's integral up to ReadAt (see
// IdleUsage), so the mean usage between two points of a team and pool is the
// difference of their integrals over the time between their reads.
type IdleUsagePoint struct {
	At          time.Time `gorm:"primaryKey"`
	PoolID      string    `gorm:"primaryKey"`
	TeamID      string    `gorm:"primaryKey"`
	ClusterID   string
	Units       int64
	UnitSeconds float64
	ReadAt      time.Time
}

// TableName implements gorm's tabler.
func (IdleUsagePoint) TableName() string { return "idle_usage_history" }

// HistoryReport says what one RecordHistory did.
type HistoryReport struct {
	At       time.Time // the interval the points are stamped with
	Recorded int       // points inserted (0 when another server took this snapshot)
	Usage    int       // owners' usage points inserted (likewise)
	Pruned   int64     // points deleted by the retention rule
}

// RecordHistory is the history job: it records every team's account in every pool
// (as TeamPools gives it) at the start of the current interval, ignoring points
// already recorded for it, then applies the retention rule. A repeat within the
// same interval changes nothing.
func (s *Service) RecordHistory(ctx context.Context) (HistoryReport, error) {
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
	n, err := recordUsage(db, rep.At, now)
	if err != nil {
		return rep, err
	}
	rep.Usage = n
	for _, table := range []any{&IdleHistory{}, &IdleUsagePoint{}} {
		n, err := pruneHistory(db, table, now)
		if err != nil {
			return rep, err
		}
		rep.Pruned += n
	}
	return rep, nil
}

// recordUsage copies every idle_usage row into the usage history, stamped at, its
// integral carried to now.
func recordUsage(db *gorm.DB, at, now time.Time) (int, error) {
	var usage []IdleUsage
	if err := db.Order("pool_id, team_id").Find(&usage).Error; err != nil {
		return 0, err
	}
	if len(usage) == 0 {
		return 0, nil
	}
	rows := make([]IdleUsagePoint, len(usage))
	for i, u := range usage {
		cluster, _, _ := strings.Cut(u.PoolID, "/")
		rows[i] = IdleUsagePoint{At: at, PoolID: u.PoolID, TeamID: u.TeamID, ClusterID: cluster, Units: u.Units,
			UnitSeconds: u.integralAt(now), ReadAt: now}
	}
	res := db.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(&rows, 200)
	return int(res.RowsAffected), res.Error
}

// pruneHistory deletes the points of table (a history model stamped by at) that the
// retention rule no longer keeps.
func pruneHistory(db *gorm.DB, table any, now time.Time) (int64, error) {
	var stamps []time.Time
	if err := db.Model(table).Distinct("at").Where("at < ?", now.Add(-HistoryFine)).Pluck("at", &stamps).Error; err != nil {
		return 0, err
	}
	var drop []time.Time
	for _, at := range stamps {
		if !keepHistory(at, now) {
			drop = append(drop, at)
		}
	}
	var pruned int64
	for chunk := range slices.Chunk(drop, 500) {
		res := db.Where("at IN ?", chunk).Delete(table)
		if res.Error != nil {
			return pruned, res.Error
		}
		pruned += res.RowsAffected
	}
	return pruned, nil
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
func (s *Service) TeamHistory(ctx context.Context, team string, since time.Time) (map[string][]HistoryPoint, error) {
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
