package fleet

import (
	"context"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/clearhouse/clearhouse"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Bounds of what an agent may say of itself in one report.
const (
	// KeptCorrections is how many of each cluster's latest corrections are kept.
	KeptCorrections      = 20
	maxStatusCorrections = 100
	maxStatusErrors      = 20
	maxStatusText        = 500
)

// AgentStatus is what a cluster's agent says of itself in a report: the backend it
// drives and its version, the drift it corrected (a value someone else changed in the
// cluster, which the agent set back) and the errors it met since its last report.
type AgentStatus struct {
	Backend     string
	Version     string
	Corrections []Correction
	Errors      []string
}

// Correction is one value an agent set back in its cluster: Object as the cluster
// names it ("ResourceQuota ads/clearhouse"), what it Was and what it is Now.
type Correction struct {
	At                           time.Time
	Team, Pool, Object, Was, Now string
}

// Validate checks a status's sizes: a backend name of 1 to 40 characters, a version of
// at most 40, at most 100 corrections each naming its object, at most 20 errors, and
// no text longer than 500 characters. EINVALID names the field.
func (st AgentStatus) Validate() error {
	switch {
	case st.Backend == "" || utf8.RuneCountInString(st.Backend) > 40:
		return clearhouse.Errorf(clearhouse.EINVALID, "agent.backend: must be 1 to 40 characters")
	case utf8.RuneCountInString(st.Version) > 40:
		return clearhouse.Errorf(clearhouse.EINVALID, "agent.version: must be at most 40 characters")
	case len(st.Corrections) > maxStatusCorrections:
		return clearhouse.Errorf(clearhouse.EINVALID, "agent.corrections: at most %d in one report", maxStatusCorrections)
	case len(st.Errors) > maxStatusErrors:
		return clearhouse.Errorf(clearhouse.EINVALID, "agent.errors: at most %d in one report", maxStatusErrors)
	}
	for i, c := range st.Corrections {
		if c.Object == "" {
			return clearhouse.Errorf(clearhouse.EINVALID, "agent.corrections[%d].object: required", i)
		}
		for _, s := range []string{c.Team, c.Pool, c.Object, c.Was, c.Now} {
			if utf8.RuneCountInString(s) > maxStatusText {
				return clearhouse.Errorf(clearhouse.EINVALID, "agent.corrections[%d]: each field at most %d characters", i, maxStatusText)
			}
		}
	}
	for i, e := range st.Errors {
		if utf8.RuneCountInString(e) > maxStatusText {
			return clearhouse.Errorf(clearhouse.EINVALID, "agent.errors[%d]: at most %d characters", i, maxStatusText)
		}
	}
	return nil
}

// AgentStatusRow is a cluster's agent status as stored: one row per cluster.
type AgentStatusRow struct {
	ClusterID   string `gorm:"primaryKey"`
	Backend     string
	Version     string
	ReportedAt  time.Time
	Reports     int64
	Corrections int64
	Errors      string // a JSON array of the last errors reported
	ErrorsAt    *time.Time
}

func (AgentStatusRow) TableName() string { return "agent_statuses" }

// AgentCorrectionRow is one correction an agent reported, as stored.
type AgentCorrectionRow struct {
	ID        int64 `gorm:"primaryKey"`
	ClusterID string
	At        time.Time
	Team      string
	Pool      string
	Object    string
	Was       string
	NowValue  string
}

func (AgentCorrectionRow) TableName() string { return "agent_corrections" }

// AgentView is a cluster's agent as operators see it.
type AgentView struct {
	Cluster     string
	Backend     string // "" when the agent never named one (an agent older than statuses)
	Version     string
	ReportedAt  time.Time
	Reports     int64
	Corrections int64        // drift corrections reported in all
	Recent      []Correction // the latest, newest first (KeptCorrections at most)
	Errors      []string     // the last errors reported
	ErrorsAt    *time.Time   // when (nil: never)
}

// RecordAgentStatus notes that cluster's agent reported at now, with its status (nil:
// an agent that sends none; only the time and count of reports change). In one
// transaction it counts the corrections, keeps the KeptCorrections latest, and
// replaces the last errors when the report carries some. Concurrent reports of one
// cluster each count: the counters are incremented in the database. ENOTFOUND for an
// unknown cluster; EINVALID (and nothing stored) for a status Validate refuses.
func (s *Reservations) RecordAgentStatus(ctx context.Context, cluster string, st *AgentStatus) error {
	if st != nil {
		if err := st.Validate(); err != nil {
			return err
		}
	}
	now := s.now().UTC()
	return s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := exists(tx, "clusters", cluster, "cluster: no cluster %q", cluster); err != nil {
			return err
		}
		row := AgentStatusRow{ClusterID: cluster, ReportedAt: now, Reports: 1, Errors: "[]"}
		set := map[string]any{"reported_at": now, "reports": gorm.Expr("agent_statuses.reports + 1")}
		if st != nil {
			row.Backend, row.Version, row.Corrections = st.Backend, st.Version, int64(len(st.Corrections))
			set["backend"], set["version"] = st.Backend, st.Version
			set["corrections"] = gorm.Expr("agent_statuses.corrections + ?", len(st.Corrections))
			if len(st.Errors) > 0 {
				b, err := json.Marshal(st.Errors)
				if err != nil {
					return err
				}
				row.Errors, row.ErrorsAt = string(b), &now
				set["errors"], set["errors_at"] = string(b), now
			}
		}
		if err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "cluster_id"}}, DoUpdates: clause.Assignments(set)}).
			Create(&row).Error; err != nil {
			return err
		}
		if st == nil || len(st.Corrections) == 0 {
			return nil
		}
		rows := make([]AgentCorrectionRow, 0, len(st.Corrections))
		for _, c := range st.Corrections {
			rows = append(rows, AgentCorrectionRow{ClusterID: cluster, At: now, Team: c.Team, Pool: c.Pool, Object: c.Object, Was: c.Was, NowValue: c.Now})
		}
		if err := tx.Create(&rows).Error; err != nil {
			return err
		}
		return tx.Exec(`DELETE FROM agent_corrections WHERE cluster_id = ? AND id NOT IN
			(SELECT id FROM agent_corrections WHERE cluster_id = ? ORDER BY id DESC LIMIT ?)`, cluster, cluster, KeptCorrections).Error
	})
}

// AgentViews returns the status of every cluster's agent that has reported, by
// cluster.
func (s *Reservations) AgentViews(ctx context.Context) ([]AgentView, error) {
	db := s.db.Read.WithContext(ctx)
	var rows []AgentStatusRow
	if err := db.Order("cluster_id").Find(&rows).Error; err != nil {
		return nil, err
	}
	var corr []AgentCorrectionRow
	if err := db.Order("cluster_id, id DESC").Find(&corr).Error; err != nil {
		return nil, err
	}
	recent := map[string][]Correction{}
	for _, c := range corr {
		if len(recent[c.ClusterID]) < KeptCorrections {
			recent[c.ClusterID] = append(recent[c.ClusterID], Correction{At: c.At.UTC(), Team: c.Team, Pool: c.Pool, Object: c.Object, Was: c.Was, Now: c.NowValue})
		}
	}
	out := make([]AgentView, 0, len(rows))
	for _, r := range rows {
		v := AgentView{Cluster: r.ClusterID, Backend: r.Backend, Version: r.Version, ReportedAt: r.ReportedAt.UTC(), Reports: r.Reports,
			Corrections: r.Corrections, Recent: recent[r.ClusterID], ErrorsAt: r.ErrorsAt}
		if err := json.Unmarshal([]byte(r.Errors), &v.Errors); err != nil {
			return nil, clearhouse.Errorf(clearhouse.EINTERNAL, "agent status of %s: errors: %v", r.ClusterID, err)
		}
		out = append(out, v)
	}
	return out, nil
}
