package exchange

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Where a pool's effective capacity comes from.
const (
	CapacityFromOverride   = "override"   // an operator's override, until it expires
	CapacityFromMeasured   = "measured"   // the capacity the cluster's agent last measured
	CapacityFromConfigured = "configured" // no measurement: the pool's configured capacity
)

// MaxCapacity is the most units any capacity may have: configured, measured or
// overridden.
const MaxCapacity = 1_000_000_000_000

// MaxCapacityFactor bounds a measured or overridden capacity: at most this many
// times the pool's configured capacity (of at least 1 unit). Hardware added faster
// than operators record it is fine; 2^63 cores is a bug. It also bounds holdings
// (Verify), since supply never goes beyond the effective capacity.
const MaxCapacityFactor = 4

// MaxCapacityOverride is how far ahead a capacity override may expire.
const MaxCapacityOverride = 366 * 24 * time.Hour

// PoolCapacity is a pool's capacity as the market sells it, with everything it
// comes from. Effective is the operator's override while it is in force, else the
// capacity the cluster's agent last measured, else the configured one: operator
// supply never lets the quota teams hold (Held) exceed it.
type PoolCapacity struct {
	Pool, Unit      string
	Configured      int64
	Measured        *int64 // nil: no agent has measured it
	MeasuredAt      *time.Time
	Override        *int64 // nil: none, or expired
	OverrideReason  string
	OverrideBy      string
	OverrideSetAt   *time.Time
	OverrideExpires *time.Time
	Effective       int64
	Source          string // CapacityFromOverride, CapacityFromMeasured or CapacityFromConfigured
	Held            int64  // all quota teams hold in the pool
}

// Oversold is how far the quota teams hold exceeds the effective capacity (0 when
// it does not): quota the cluster cannot run at once.
func (c PoolCapacity) Oversold() int64 { return max(c.Held-c.Effective, 0) }

// Unsold is the effective capacity no team holds: what operator supply may sell.
func (c PoolCapacity) Unsold() int64 { return max(c.Effective-c.Held, 0) }

// capacityOverride is a row of pool_capacity_overrides.
type capacityOverride struct {
	PoolID    string `gorm:"primaryKey"`
	Units     int64
	Reason    string
	SetBy     string
	SetAt     time.Time
	ExpiresAt time.Time
}

func (capacityOverride) TableName() string { return "pool_capacity_overrides" }

// CapacityOverrideEvent is a row of capacity_override_log: one override set or
// cleared, append-only.
type CapacityOverrideEvent struct {
	ID        int64
	PoolID    string
	Action    string // "set" or "clear"
	Units     *int64
	Reason    string
	ByWhom    string
	ExpiresAt *time.Time
	At        time.Time
}

func (CapacityOverrideEvent) TableName() string { return "capacity_override_log" }

// PoolCapacities returns every pool's capacity at now, by pool id, read with db
// (a transaction or a read pool): the one rule of effective capacity, for the
// market's supply, reserve prices, pages and metrics alike.
func PoolCapacities(db *gorm.DB, now time.Time) ([]PoolCapacity, error) {
	var pools []Pool
	if err := db.Order("id").Find(&pools).Error; err != nil {
		return nil, err
	}
	var measured []struct {
		PoolID     string
		Capacity   int64
		MeasuredAt time.Time
	}
	if err := db.Raw("SELECT pool_id, capacity, measured_at FROM pool_measured_capacity").Scan(&measured).Error; err != nil {
		return nil, err
	}
	var overrides []capacityOverride
	if err := db.Where("expires_at > ?", now).Find(&overrides).Error; err != nil {
		return nil, err
	}
	var held []struct {
		PoolID string
		Q      int64
	}
	if err := db.Raw("SELECT pool_id, SUM(quantity) AS q FROM holdings GROUP BY pool_id").Scan(&held).Error; err != nil {
		return nil, err
	}
	out := make([]PoolCapacity, len(pools))
	index := make(map[string]int, len(pools))
	for i, p := range pools {
		out[i] = PoolCapacity{Pool: p.ID, Unit: p.Unit, Configured: p.Capacity, Effective: p.Capacity, Source: CapacityFromConfigured}
		index[p.ID] = i
	}
	for _, m := range measured {
		if i, ok := index[m.PoolID]; ok {
			at := m.MeasuredAt.UTC()
			c := &out[i]
			c.Measured, c.MeasuredAt = &m.Capacity, &at
			c.Effective, c.Source = m.Capacity, CapacityFromMeasured
		}
	}
	for _, o := range overrides {
		if i, ok := index[o.PoolID]; ok {
			setAt, exp := o.SetAt.UTC(), o.ExpiresAt.UTC()
			c := &out[i]
			c.Override, c.OverrideReason, c.OverrideBy, c.OverrideSetAt, c.OverrideExpires = &o.Units, o.Reason, o.SetBy, &setAt, &exp
			c.Effective, c.Source = o.Units, CapacityFromOverride
		}
	}
	for _, h := range held {
		if i, ok := index[h.PoolID]; ok {
			out[i].Held = h.Q
		}
	}
	return out, nil
}

// capacitiesIn is PoolCapacities by pool id.
func capacitiesIn(db *gorm.DB, now time.Time) (map[string]PoolCapacity, error) {
	cs, err := PoolCapacities(db, now)
	if err != nil {
		return nil, err
	}
	out := make(map[string]PoolCapacity, len(cs))
	for _, c := range cs {
		out[c.Pool] = c
	}
	return out, nil
}

// Capacities returns every pool's capacity now, by pool id.
func (m *Market) Capacities(ctx context.Context) ([]PoolCapacity, error) {
	return PoolCapacities(m.db.Read.WithContext(ctx), m.now())
}

// Capacity returns one pool's capacity now, or ENOTFOUND.
func (m *Market) Capacity(ctx context.Context, pool string) (PoolCapacity, error) {
	cs, err := m.Capacities(ctx)
	if err != nil {
		return PoolCapacity{}, err
	}
	i := slices.IndexFunc(cs, func(c PoolCapacity) bool { return c.Pool == pool })
	if i < 0 {
		return PoolCapacity{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "pool: no pool %q", pool)
	}
	return cs[i], nil
}

// Oversold lists the pools whose holdings exceed their effective capacity now, by
// pool id.
func (m *Market) Oversold(ctx context.Context) ([]PoolCapacity, error) {
	cs, err := m.Capacities(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(cs, func(c PoolCapacity) bool { return c.Oversold() == 0 }), nil
}

// OverrideCapacity sets a pool's effective capacity to units until expires, for
// reason, by whom: supply and reserve prices use it instead of the measured (or
// configured) capacity until it expires. units may be at most MaxCapacityFactor
// times the configured capacity. The override and its log entry commit together. EINVALID names the field at fault and changes nothing; ENOTFOUND for
// an unknown pool.
func (m *Market) OverrideCapacity(ctx context.Context, pool string, units int64, reason string, expires time.Time, by string) error {
	reason, by = strings.TrimSpace(reason), strings.TrimSpace(by)
	now := m.now()
	switch {
	case units < 0 || units > MaxCapacity:
		return clearhouse.Errorf(clearhouse.EINVALID, "units: must be a whole number from 0 to 10^12")
	case reason == "":
		return clearhouse.Errorf(clearhouse.EINVALID, "reason: say why the measured capacity is overridden")
	case len(reason) > 200:
		return clearhouse.Errorf(clearhouse.EINVALID, "reason: at most 200 characters")
	case by == "":
		return clearhouse.Errorf(clearhouse.EINVALID, "by: say who overrides the capacity")
	case !expires.After(now):
		return clearhouse.Errorf(clearhouse.EINVALID, "expires: must be in the future")
	case expires.After(now.Add(MaxCapacityOverride)):
		return clearhouse.Errorf(clearhouse.EINVALID, "expires: an override lasts at most a year, until %s", now.Add(MaxCapacityOverride).Format("2006-01-02"))
	}
	exp := expires.UTC().Truncate(time.Second)
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := lockPool(tx, pool)
		if err != nil {
			return err
		}
		if units > MaxCapacityFactor*max(p.Capacity, 1) {
			return clearhouse.Errorf(clearhouse.EINVALID, "units: %d is more than %d times the pool's configured capacity of %d; raise the configured capacity first",
				units, MaxCapacityFactor, p.Capacity)
		}
		before, err := overrideState(tx, pool)
		if err != nil {
			return err
		}
		o := capacityOverride{PoolID: pool, Units: units, Reason: reason, SetBy: by, SetAt: now, ExpiresAt: exp}
		if err := tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&o).Error; err != nil {
			return err
		}
		if err := bumpPlan(tx); err != nil { // capacity feeds the reservation plan
			return err
		}
		if err := tx.Create(&CapacityOverrideEvent{PoolID: pool, Action: "set", Units: &units, Reason: reason, ByWhom: by, ExpiresAt: &exp, At: now}).Error; err != nil {
			return err
		}
		return m.record(ctx, tx, "pool.capacity_override", "pool:"+pool, before, &capacityOverrideState{Units: units, Reason: reason, Expires: exp})
	})
}

// ClearCapacityOverride removes a pool's capacity override, by whom: the measured
// (or configured) capacity applies again. Clearing a pool with no override changes
// nothing and logs nothing. ENOTFOUND for an unknown pool.
func (m *Market) ClearCapacityOverride(ctx context.Context, pool, by string) error {
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if _, err := lockPool(tx, pool); err != nil {
			return err
		}
		before, err := overrideState(tx, pool)
		if err != nil {
			return err
		}
		res := tx.Where("pool_id = ?", pool).Delete(&capacityOverride{})
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		if err := bumpPlan(tx); err != nil {
			return err
		}
		if err := tx.Create(&CapacityOverrideEvent{PoolID: pool, Action: "clear", ByWhom: strings.TrimSpace(by), At: m.now()}).Error; err != nil {
			return err
		}
		return m.record(ctx, tx, "pool.capacity_clear", "pool:"+pool, before, nil)
	})
}

// capacityOverrideState is a pool's capacity override in the audit trail.
type capacityOverrideState struct {
	Units   int64     `json:"units"`
	Reason  string    `json:"reason"`
	Expires time.Time `json:"expires"`
}

// overrideState is pool's override in force, nil when it has none.
func overrideState(tx *gorm.DB, pool string) (*capacityOverrideState, error) {
	var o capacityOverride
	if err := tx.Take(&o, "pool_id = ?", pool).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return &capacityOverrideState{Units: o.Units, Reason: o.Reason, Expires: o.ExpiresAt.UTC()}, nil
}

// CapacityOverrideLog lists a pool's last n capacity override events, newest first.
func (m *Market) CapacityOverrideLog(ctx context.Context, pool string, n int) ([]CapacityOverrideEvent, error) {
	var out []CapacityOverrideEvent
	err := m.db.Read.WithContext(ctx).Where("pool_id = ?", pool).Order("id DESC").Limit(n).Find(&out).Error
	return out, err
}

// supplyIn is each pool's operator supply now, inside tx: the effective capacity no
// team holds, so that no sale makes holdings exceed it.
func supplyIn(tx *gorm.DB, now time.Time) (map[string]int64, error) {
	cs, err := PoolCapacities(tx, now)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(cs))
	for _, c := range cs {
		out[c.Pool] = c.Unsold()
	}
	return out, nil
}
