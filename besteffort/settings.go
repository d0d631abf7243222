package besteffort

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/sharing"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Policies lists the policies a cluster may share idle capacity by.
func Policies() []string { return append(sharing.Names(), PolicyAbacus) }

// IdleSettings is what operators set for one pool's idle capacity: its policy,
// minimum runtime and exposure threshold are the pool's own (pools of one cluster
// under different policies follow the rule of sharing/perpool.go). Abacus is the
// exception: its budgets and auction cover a whole cluster, so choosing abacus for
// one pool chooses it for every pool of the cluster, and choosing another policy
// for a pool of an abacus cluster moves every pool of it to that policy. Alpha,
// Abacus's, is the cluster's.
type IdleSettings struct {
	Pool       string
	Policy     string
	Alpha      float64
	MinRuntime time.Duration
	Exposure   float64
}

// Validate returns EINVALID naming the field at fault.
func (st IdleSettings) Validate() error {
	bad := func(format string, args ...any) error { return clearhouse.Errorf(clearhouse.EINVALID, format, args...) }
	switch {
	case !slices.Contains(Policies(), st.Policy):
		return bad("policy: %q is not one of %s", st.Policy, strings.Join(Policies(), ", "))
	case !(st.Alpha >= 0 && st.Alpha <= 1):
		return bad("alpha: must be from 0 to 1")
	case st.MinRuntime < 0 || st.MinRuntime > 7*24*time.Hour:
		return bad("min_runtime: must be from 0 to 168h")
	case !(st.Exposure >= 0 && st.Exposure < 1) || math.IsNaN(st.Exposure):
		return bad("exposure: must be at least 0 and below 1 (a share of the pool kept free)")
	}
	return nil
}

// Settings returns the idle settings of every pool (defaults where none were set),
// by pool.
func (s *Service) Settings(ctx context.Context) ([]IdleSettings, error) {
	db := s.db.Read.WithContext(ctx)
	var pools []exchange.Pool
	if err := db.Order("id").Find(&pools).Error; err != nil {
		return nil, err
	}
	var ics []IdleCluster
	if err := db.Find(&ics).Error; err != nil {
		return nil, err
	}
	var ips []IdlePool
	if err := db.Find(&ips).Error; err != nil {
		return nil, err
	}
	cl := map[string]IdleCluster{}
	for _, c := range ics {
		cl[c.ClusterID] = c
	}
	ps := map[string]IdlePool{}
	for _, p := range ips {
		ps[p.PoolID] = p
	}
	out := make([]IdleSettings, len(pools))
	for i, p := range pools {
		st := IdleSettings{Pool: p.ID, Policy: DefaultPolicy, Alpha: DefaultAlpha, MinRuntime: DefaultMinRuntime, Exposure: sharing.DefaultExposure}
		if c, ok := cl[p.ClusterID]; ok {
			st.Policy, st.Alpha = c.Policy, c.Alpha
		}
		if q, ok := ps[p.ID]; ok {
			st.MinRuntime, st.Exposure = time.Duration(q.MinRuntime)*time.Second, q.Exposure
			if q.Policy != "" {
				st.Policy = q.Policy
			}
		}
		out[i] = st
	}
	return out, nil
}

// SetSettings saves a pool's idle settings and its cluster's alpha (and, to or from
// abacus, the cluster's policy, clearing its pools' own).
// EINVALID for a bad field, ENOTFOUND for an unknown pool; ECONFLICT when moving a
// cluster to or from the abacus policy while jobs wait or run there (their budgets
// were held, or not, under the other rule).
func (s *Service) SetSettings(ctx context.Context, st IdleSettings) error {
	if err := st.Validate(); err != nil {
		return err
	}
	return s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var p exchange.Pool
		if err := tx.Limit(1).Find(&p, "id = ?", st.Pool).Error; err != nil {
			return err
		}
		if p.ID == "" {
			return clearhouse.Errorf(clearhouse.ENOTFOUND, "pool: no pool %q", st.Pool)
		}
		now := s.now()
		ic, err := lockIdleCluster(tx, p.ClusterID, now)
		if err != nil {
			return err
		}
		if (ic.Policy == PolicyAbacus) != (st.Policy == PolicyAbacus) {
			var live int64
			if err := tx.Model(&Job{}).Where("cluster_id = ? AND status IN ?", p.ClusterID, []JobStatus{JobQueued, JobRunning}).Count(&live).Error; err != nil {
				return err
			}
			if live > 0 {
				return clearhouse.Errorf(clearhouse.ECONFLICT, "policy: cluster %s has %d best-effort jobs queued or running; switch to or from abacus once they end", p.ClusterID, live)
			}
		}
		before, err := settingsState(tx, ic, p.ID)
		if err != nil {
			return err
		}
		clusterWide := st.Policy == PolicyAbacus || ic.Policy == PolicyAbacus
		updates := map[string]any{"alpha": st.Alpha, "updated_at": now}
		own := st.Policy
		if clusterWide { // the cluster's policy; its pools follow it
			updates["policy"], own = st.Policy, ""
			if err := tx.Model(&IdlePool{}).Where("pool_id IN (SELECT id FROM pools WHERE cluster_id = ?)", p.ClusterID).
				Updates(map[string]any{"policy": "", "updated_at": now}).Error; err != nil {
				return err
			}
		}
		if err := tx.Model(&IdleCluster{}).Where("cluster_id = ?", p.ClusterID).Updates(updates).Error; err != nil {
			return err
		}
		row := IdlePool{PoolID: p.ID, Policy: own, MinRuntime: int64(st.MinRuntime / time.Second), Exposure: st.Exposure, UpdatedAt: now}
		if err := tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error; err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Event{Action: "best_effort.settings", Object: "pool:" + p.ID, At: now, Before: before,
			After: map[string]any{"policy": st.Policy, "alpha": st.Alpha, "min_runtime_seconds": row.MinRuntime, "exposure": st.Exposure}})
	})
}

// settingsState is a pool's best-effort settings in the audit trail, as in force
// before a change: the pool's own policy, else its cluster's.
func settingsState(tx *gorm.DB, ic IdleCluster, pool string) (map[string]any, error) {
	var rows []IdlePool
	if err := tx.Where("pool_id = ?", pool).Limit(1).Find(&rows).Error; err != nil {
		return nil, err
	}
	st := map[string]any{"policy": ic.Policy, "alpha": ic.Alpha}
	if len(rows) == 1 {
		if rows[0].Policy != "" {
			st["policy"] = rows[0].Policy
		}
		st["min_runtime_seconds"], st["exposure"] = rows[0].MinRuntime, rows[0].Exposure
	}
	return st, nil
}
