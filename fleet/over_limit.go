package fleet

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/notify"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The over-limit policy's actions: report the excess only, or take it back (the
// agent's backend evicts the newest pods, requeues the newest jobs) once it has
// lasted the grace period.
const (
	OverLimitReport = "report"
	OverLimitEvict  = "evict"
)

// MaxOverLimitGrace is the longest grace period operators may set.
const MaxOverLimitGrace = 7 * 24 * time.Hour

// DefaultOverLimitPolicy is the policy until operators set one: report only, with a
// grace period of 10 minutes should they turn eviction on.
var DefaultOverLimitPolicy = OverLimitPolicy{Action: OverLimitReport, Grace: 10 * time.Minute}

// Notification kinds of work beyond a team's limit.
const (
	NoticeOverLimit = "over_limit"           // ref "over_limit:POOL:SINCE": the team runs above its limit
	NoticeReclaimed = "over_limit_reclaimed" // ref "reclaim:N": what an agent took back
)

// OverLimitPolicy is what happens to a team's own work beyond its limit: Action
// (OverLimitReport or OverLimitEvict) once the excess has lasted Grace.
type OverLimitPolicy struct {
	Action string
	Grace  time.Duration
}

// Validate checks a policy: an action of report or evict, a grace of whole seconds
// from 0 to 7 days. EINVALID names the field.
func (p OverLimitPolicy) Validate() error {
	switch {
	case p.Action != OverLimitReport && p.Action != OverLimitEvict:
		return clearhouse.Errorf(clearhouse.EINVALID, "action: must be %s or %s", OverLimitReport, OverLimitEvict)
	case p.Grace < 0 || p.Grace > MaxOverLimitGrace || p.Grace%time.Second != 0:
		return clearhouse.Errorf(clearhouse.EINVALID, "grace: whole seconds from 0 to %d", int64(MaxOverLimitGrace/time.Second))
	}
	return nil
}

// ActsAt is when the policy takes back an excess that began at since; false when it
// only reports.
func (p OverLimitPolicy) ActsAt(since time.Time) (time.Time, bool) {
	if p.Action != OverLimitEvict {
		return time.Time{}, false
	}
	return since.Add(p.Grace), true
}

// overLimitPolicyRow is the policy as stored: one row, id 1.
type overLimitPolicyRow struct {
	ID           int64 `gorm:"primaryKey"`
	Action       string
	GraceSeconds int64
	UpdatedAt    time.Time
}

func (overLimitPolicyRow) TableName() string { return "over_limit_policies" }

// OverLimitPolicy returns the operators' policy, DefaultOverLimitPolicy until set.
func (s *Reservations) OverLimitPolicy(ctx context.Context) (OverLimitPolicy, error) {
	var rows []overLimitPolicyRow
	if err := s.db.Read.WithContext(ctx).Where("id = 1").Find(&rows).Error; err != nil || len(rows) == 0 {
		return DefaultOverLimitPolicy, err
	}
	return OverLimitPolicy{Action: rows[0].Action, Grace: time.Duration(rows[0].GraceSeconds) * time.Second}, nil
}

// SetOverLimitPolicy sets the operators' policy. EINVALID (nothing changed) for a
// policy Validate refuses.
func (s *Reservations) SetOverLimitPolicy(ctx context.Context, p OverLimitPolicy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	row := overLimitPolicyRow{ID: 1, Action: p.Action, GraceSeconds: int64(p.Grace / time.Second), UpdatedAt: s.now()}
	return s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		before, err := s.overLimitPolicy(tx)
		if err != nil {
			return err
		}
		if err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}},
			DoUpdates: clause.AssignmentColumns([]string{"action", "grace_seconds", "updated_at"})}).Create(&row).Error; err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Event{Action: "over_limit.policy", Object: "over-limit policy", At: s.now(),
			Before: overLimitState(before), After: overLimitState(OverLimitPolicy{Action: p.Action, Grace: time.Duration(row.GraceSeconds) * time.Second})})
	})
}

// overLimitState is the over-limit policy in the audit trail.
func overLimitState(p OverLimitPolicy) map[string]any {
	return map[string]any{"action": p.Action, "grace_seconds": int64(p.Grace / time.Second)}
}

// OverLimitUsage is a team whose own work in Pool uses Used units, above its Limit,
// as a cluster's agent measured it.
type OverLimitUsage struct {
	Team, Pool  string
	Used, Limit int64
}

// ReclaimedReport is one object an agent stopped to take back a team's excess.
type ReclaimedReport struct {
	Team, Pool, Object string
	Units              int64
}

// OverLimitRow is a team's work beyond its limit in a pool, as stored: since when,
// and the last report's figures.
type OverLimitRow struct {
	TeamID     string `gorm:"primaryKey"`
	PoolID     string `gorm:"primaryKey"`
	ClusterID  string
	Used       int64
	LimitUnits int64
	Since      time.Time
	ReportedAt time.Time
}

func (OverLimitRow) TableName() string { return "over_limits" }

// ReclaimRow is one object an agent reported it stopped, as stored.
type ReclaimRow struct {
	ID        int64 `gorm:"primaryKey"`
	ClusterID string
	TeamID    string
	PoolID    string
	Object    string
	Units     int64
	At        time.Time
}

func (ReclaimRow) TableName() string { return "over_limit_reclaims" }

// OverLimit is a team running beyond its limit in a pool now: by Excess() units,
// since Since, as last reported at ReportedAt.
type OverLimit struct {
	Cluster, Team, Pool string
	Used, Limit         int64
	Since, ReportedAt   time.Time
}

// Excess is the units used beyond the limit.
func (o OverLimit) Excess() int64 { return o.Used - o.Limit }

// Reclaimed is one object an agent stopped to take back a team's excess.
type Reclaimed struct {
	Cluster, Team, Pool, Object string
	Units                       int64
	At                          time.Time
}

// maxObjectText bounds the name of an object an agent reclaimed.
const maxObjectText = 500

// ValidateOverLimit checks a report's over-limit and reclaimed rows without
// applying them, so that the web layer can refuse a whole report first.
func (s *Reservations) ValidateOverLimit(ctx context.Context, cluster string, over []OverLimitUsage, reclaimed []ReclaimedReport) error {
	return validateOverLimit(s.db.Read.WithContext(ctx), cluster, over, reclaimed)
}

// validateOverLimit: at most MaxReportRows of each; each row names a team and a pool
// of cluster once; used above a limit of 0 or more, both within MaxCapacityFactor
// times the pool's capacity; each reclaimed object named (at most 500 characters)
// with units of 0 or more. EINVALID names the row and the field.
func validateOverLimit(tx *gorm.DB, cluster string, over []OverLimitUsage, reclaimed []ReclaimedReport) error {
	if len(over) > MaxReportRows || len(reclaimed) > MaxReportRows {
		return clearhouse.Errorf(clearhouse.EINVALID, "over_limit, reclaimed: at most %d rows per report", MaxReportRows)
	}
	if len(over)+len(reclaimed) == 0 {
		return nil
	}
	var pools []struct {
		ID       string
		Capacity int64
	}
	if err := tx.Table("pools").Select("id, capacity").Where("cluster_id = ?", cluster).Scan(&pools).Error; err != nil {
		return err
	}
	capacity := map[string]int64{}
	for _, p := range pools {
		capacity[p.ID] = p.Capacity
	}
	var teams []string
	if err := tx.Table("teams").Pluck("id", &teams).Error; err != nil {
		return err
	}
	team := func(field string, i int, id string) error {
		if !slices.Contains(teams, id) {
			return clearhouse.Errorf(clearhouse.EINVALID, "%s[%d].team: no team %q", field, i, id)
		}
		return nil
	}
	pool := func(field string, i int, id string, units ...int64) error {
		c, ok := capacity[id]
		if !ok {
			return clearhouse.Errorf(clearhouse.EINVALID, "%s[%d].pool: %q is not a pool of cluster %s", field, i, id, cluster)
		}
		for _, u := range units {
			if u < 0 || u > MaxCapacityFactor*max(c, 1) {
				return clearhouse.Errorf(clearhouse.EINVALID, "%s[%d]: units from 0 to %d times the pool's capacity", field, i, MaxCapacityFactor)
			}
		}
		return nil
	}
	seen := map[[2]string]bool{}
	for i, o := range over {
		if err := cmp.Or(team("over_limit", i, o.Team), pool("over_limit", i, o.Pool, o.Used, o.Limit)); err != nil {
			return err
		}
		if o.Used <= o.Limit {
			return clearhouse.Errorf(clearhouse.EINVALID, "over_limit[%d].used: %d is not above the limit %d", i, o.Used, o.Limit)
		}
		if k := [2]string{o.Team, o.Pool}; seen[k] {
			return clearhouse.Errorf(clearhouse.EINVALID, "over_limit[%d]: %s in %s is listed twice", i, o.Team, o.Pool)
		} else {
			seen[k] = true
		}
	}
	for i, r := range reclaimed {
		if err := cmp.Or(team("reclaimed", i, r.Team), pool("reclaimed", i, r.Pool, r.Units)); err != nil {
			return err
		}
		if r.Object == "" || utf8.RuneCountInString(r.Object) > maxObjectText {
			return clearhouse.Errorf(clearhouse.EINVALID, "reclaimed[%d].object: 1 to %d characters", i, maxObjectText)
		}
	}
	return nil
}

// RecordOverLimit applies what cluster's agent reports of work beyond limits, in one
// transaction: each listed team and pool is over since its first report in a row
// (kept), with the latest figures; a team and pool of the cluster the report no
// longer lists is back under its limit and cleared; each reclaimed object is kept.
// A team that goes over, and a team whose work was taken back, is told (its members
// and owners). ENOTFOUND for an unknown cluster; EINVALID (nothing changed) for rows
// ValidateOverLimit refuses.
func (s *Reservations) RecordOverLimit(ctx context.Context, cluster string, over []OverLimitUsage, reclaimed []ReclaimedReport) error {
	if len(over)+len(reclaimed) == 0 { // every team of the cluster is under its limit
		// Most reports say so of a cluster with nothing recorded: read before writing,
		// so they take no write lock (one cluster's reports come one at a time).
		var n int64
		if err := s.db.Read.WithContext(ctx).Model(&OverLimitRow{}).Where("cluster_id = ?", cluster).Limit(1).Count(&n).Error; err != nil || n == 0 {
			return err
		}
		return s.db.Write.WithContext(ctx).Where("cluster_id = ?", cluster).Delete(&OverLimitRow{}).Error
	}
	return s.db.Write.WithContext(ctx).Transaction(s.RecordOverLimitWithin(cluster, over, reclaimed))
}

// RecordOverLimitWithin is RecordOverLimit as a step of a caller's transaction (an
// agent's whole report applies in one, with its reservations' and best-effort parts).
func (s *Reservations) RecordOverLimitWithin(cluster string, over []OverLimitUsage, reclaimed []ReclaimedReport) func(tx *gorm.DB) error {
	return func(tx *gorm.DB) error {
		if err := exists(tx, "clusters", cluster, "cluster: no cluster %q", cluster); err != nil {
			return err
		}
		if err := validateOverLimit(tx, cluster, over, reclaimed); err != nil {
			return err
		}
		now := s.now()
		var old []OverLimitRow
		if err := tx.Where("cluster_id = ?", cluster).Find(&old).Error; err != nil {
			return err
		}
		since := map[[2]string]time.Time{}
		for _, r := range old {
			since[[2]string{r.TeamID, r.PoolID}] = r.Since
		}
		policy, err := s.overLimitPolicy(tx)
		if err != nil {
			return err
		}
		listed := map[[2]string]bool{}
		for _, o := range over {
			k := [2]string{o.Team, o.Pool}
			row := OverLimitRow{TeamID: o.Team, PoolID: o.Pool, ClusterID: cluster, Used: o.Used, LimitUnits: o.Limit, Since: now, ReportedAt: now}
			if t, ok := since[k]; ok {
				row.Since = t
			} else if err := s.tellOverLimit(tx, OverLimit{Cluster: cluster, Team: o.Team, Pool: o.Pool, Used: o.Used, Limit: o.Limit, Since: now}, policy); err != nil {
				return err
			}
			if err := tx.Save(&row).Error; err != nil {
				return err
			}
			listed[k] = true
		}
		for _, r := range old { // back under its limit: cleared
			if !listed[[2]string{r.TeamID, r.PoolID}] {
				if err := tx.Where("team_id = ? AND pool_id = ?", r.TeamID, r.PoolID).Delete(&OverLimitRow{}).Error; err != nil {
					return err
				}
			}
		}
		return s.keepReclaimed(tx, cluster, reclaimed, now)
	}
}

// overLimitPolicy reads the policy inside tx.
func (s *Reservations) overLimitPolicy(tx *gorm.DB) (OverLimitPolicy, error) {
	var rows []overLimitPolicyRow
	if err := tx.Where("id = 1").Find(&rows).Error; err != nil || len(rows) == 0 {
		return DefaultOverLimitPolicy, err
	}
	return OverLimitPolicy{Action: rows[0].Action, Grace: time.Duration(rows[0].GraceSeconds) * time.Second}, nil
}

// keepReclaimed stores what an agent stopped and tells each team once per report.
func (s *Reservations) keepReclaimed(tx *gorm.DB, cluster string, reclaimed []ReclaimedReport, now time.Time) error {
	if len(reclaimed) == 0 {
		return nil
	}
	rows := make([]ReclaimRow, 0, len(reclaimed))
	for _, r := range reclaimed {
		rows = append(rows, ReclaimRow{ClusterID: cluster, TeamID: r.Team, PoolID: r.Pool, Object: r.Object, Units: r.Units, At: now})
	}
	if err := tx.Create(&rows).Error; err != nil {
		return err
	}
	byTeam := map[string][]ReclaimRow{}
	for _, r := range rows {
		byTeam[r.TeamID] = append(byTeam[r.TeamID], r)
	}
	for _, team := range slices.Sorted(maps.Keys(byTeam)) {
		rs := byTeam[team]
		var lines []string
		for _, r := range rs {
			lines = append(lines, fmt.Sprintf("- %s (%d units of %s)", r.Object, r.Units, r.PoolID))
		}
		body := fmt.Sprintf("Team %s's own work ran above its limit past the grace period, and the operators' policy takes the excess back. "+
			"The agent of %s stopped:\n%s\nThe limit is what the team holds (quota on offer included, until a sale settles) plus its reservations running beyond its own quota.",
			team, cluster, strings.Join(lines, "\n"))
		msg := notify.Message{Kind: NoticeReclaimed, Ref: fmt.Sprintf("reclaim:%d", rs[0].ID),
			Subject: fmt.Sprintf("Work of team %s above its limit was stopped in %s", team, cluster), Body: body, Link: "/team"}
		if err := s.tellTeam(tx, team, msg); err != nil {
			return err
		}
	}
	return nil
}

// tellOverLimit tells a team it runs above its limit, and what will happen.
func (s *Reservations) tellOverLimit(tx *gorm.DB, o OverLimit, p OverLimitPolicy) error {
	what := "The operators' policy only reports it: nothing is stopped."
	if at, ok := p.ActsAt(o.Since); ok {
		what = fmt.Sprintf("Unless the team's usage is back under its limit by %s, the agent takes the excess back (the newest pods are evicted, the newest jobs requeued).",
			at.UTC().Format("2006-01-02 15:04 UTC"))
	}
	body := fmt.Sprintf("Team %s's own work uses %d units of %s, %d above its limit of %d, since %s. %s\n"+
		"The limit is what the team holds (quota on offer included, until a sale settles) plus its reservations running beyond its own quota; "+
		"best-effort tasks run apart.", o.Team, o.Used, o.Pool, o.Excess(), o.Limit, o.Since.UTC().Format("2006-01-02 15:04 UTC"), what)
	return s.tellTeam(tx, o.Team, notify.Message{Kind: NoticeOverLimit, Ref: fmt.Sprintf("over_limit:%s:%d", o.Pool, o.Since.Unix()),
		Subject: fmt.Sprintf("Team %s runs above its limit in %s", o.Team, o.Pool), Body: body, Link: "/team"})
}

// tellTeam sends msg to every member and owner of team.
func (s *Reservations) tellTeam(tx *gorm.DB, team string, msg notify.Message) error {
	var users []identity.User
	if err := tx.Where("team_id = ? AND role IN ?", team, []identity.Role{identity.RoleMember, identity.RoleOwner}).Order("id").Find(&users).Error; err != nil {
		return err
	}
	return s.notices.Send(tx, users, func(identity.User) notify.Message { return msg })
}

// OverLimits lists the teams running beyond their limits now, by cluster, team and
// pool: team's only when team is not "".
func (s *Reservations) OverLimits(ctx context.Context, team string) ([]OverLimit, error) {
	q := s.db.Read.WithContext(ctx).Order("cluster_id, team_id, pool_id")
	if team != "" {
		q = q.Where("team_id = ?", team)
	}
	return overLimits(q)
}

func overLimits(q *gorm.DB) ([]OverLimit, error) {
	var rows []OverLimitRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]OverLimit, 0, len(rows))
	for _, r := range rows {
		out = append(out, OverLimit{Cluster: r.ClusterID, Team: r.TeamID, Pool: r.PoolID, Used: r.Used, Limit: r.LimitUnits,
			Since: r.Since.UTC(), ReportedAt: r.ReportedAt.UTC()})
	}
	return out, nil
}

// Reclaims returns the policy and what cluster's agent is to take back now: each
// excess that has lasted the grace period, when the policy evicts (none when it only
// reports).
func (s *Reservations) Reclaims(ctx context.Context, cluster string) (OverLimitPolicy, []OverLimit, error) {
	db := s.db.Read.WithContext(ctx)
	p, err := s.overLimitPolicy(db)
	if err != nil {
		return p, nil, err
	}
	over, err := overLimits(db.Where("cluster_id = ?", cluster).Order("team_id, pool_id"))
	if err != nil {
		return p, nil, err
	}
	now := s.now()
	return p, slices.DeleteFunc(over, func(o OverLimit) bool {
		at, ok := p.ActsAt(o.Since)
		return !ok || at.After(now) || o.Excess() <= 0
	}), nil
}

// RecentlyReclaimed lists the newest objects agents stopped of team's work (every
// team's when team is ""), at most limit.
func (s *Reservations) RecentlyReclaimed(ctx context.Context, team string, limit int) ([]Reclaimed, error) {
	q := s.db.Read.WithContext(ctx).Order("id DESC").Limit(limit)
	if team != "" {
		q = q.Where("team_id = ?", team)
	}
	var rows []ReclaimRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]Reclaimed, 0, len(rows))
	for _, r := range rows {
		out = append(out, Reclaimed{Cluster: r.ClusterID, Team: r.TeamID, Pool: r.PoolID, Object: r.Object, Units: r.Units, At: r.At.UTC()})
	}
	return out, nil
}
