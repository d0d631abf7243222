package fleet

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// UtilizationConfig is how usage is kept: samples at Slot resolution for Raw,
// hourly aggregates for Hourly.
type UtilizationConfig struct {
	Slot   time.Duration
	Raw    time.Duration
	Hourly time.Duration
}

// DefaultUtilizationConfig keeps 5-minute samples for 14 days and hourly
// aggregates for a year.
var DefaultUtilizationConfig = UtilizationConfig{Slot: 5 * time.Minute, Raw: 14 * 24 * time.Hour, Hourly: 365 * 24 * time.Hour}

// Utilization is the service for measured utilization (DESIGN.md, "Measured
// utilization"): each pool's usage over time from cluster agents' reports (and
// the reservation plan's allocations for pools no agent reports on), the job that
// fills, downsamples, prunes and measures it, and each pool's psi: the chosen
// percentile of used/capacity over a trailing window, an operator's override
// until it expires, or held/capacity for a pool with no usage data (capacity: the
// effective one, exchange.PoolCapacities). It implements
// exchange.MeasuredUtilization.
type Utilization struct {
	db  *store.DB
	now func() time.Time
	cfg UtilizationConfig
}

// NewUtilization returns the utilization service on db.
func NewUtilization(db *store.DB, now func() time.Time, cfg UtilizationConfig) *Utilization {
	if cfg.Slot <= 0 {
		cfg.Slot = DefaultUtilizationConfig.Slot
	}
	if cfg.Raw < MaxWindowDays*24*time.Hour {
		cfg.Raw = DefaultUtilizationConfig.Raw
	}
	if cfg.Hourly < cfg.Raw {
		cfg.Hourly = DefaultUtilizationConfig.Hourly
	}
	return &Utilization{db: db, now: func() time.Time { return now().UTC() }, cfg: cfg}
}

// Config is how usage is kept.
func (u *Utilization) Config() UtilizationConfig { return u.cfg }

// PoolSetting is a row of pool_utilization: a pool's percentile and window, the
// psi the job last measured with them, and an operator's override.
type PoolSetting struct {
	PoolID          string `gorm:"primaryKey"`
	Percentile      int
	WindowDays      int
	Measured        *float64
	Samples         int64
	MeasuredAt      *time.Time
	Override        *float64
	OverrideReason  string
	OverrideBy      string
	OverrideExpires *time.Time
	UpdatedAt       time.Time
}

func (PoolSetting) TableName() string { return "pool_utilization" }

// Where a pool's psi comes from.
const (
	PsiOverride = "override" // an operator's override, until it expires
	PsiMeasured = "measured" // the percentile of measured usage
	PsiHeld     = "held"     // no usage data: quota held over capacity
)

// PoolPsi is a pool's utilization as reserve prices use it, with everything it
// comes from, for pages and the command line.
type PoolPsi struct {
	Pool, Resource, Unit string
	Capacity, Held       int64
	Percentile           int
	WindowDays           int
	Measured             *float64 // nil: no usage data in the window
	Samples              int64
	MeasuredAt           *time.Time
	Override             *float64 // nil: none, or expired
	OverrideReason       string
	OverrideBy           string
	OverrideExpires      *time.Time
	Fallback             float64 // held/capacity
	Psi                  float64
	Source               string // PsiOverride, PsiMeasured or PsiHeld
}

// psiOf works out a pool's psi from its setting at now; capacity is its effective
// capacity (exchange.PoolCapacities), the held fallback's denominator.
func psiOf(p exchange.Pool, capacity, held int64, s PoolSetting, now time.Time) PoolPsi {
	v := PoolPsi{Pool: p.ID, Resource: p.Resource, Unit: p.Unit, Capacity: capacity, Held: held,
		Percentile: DefaultPercentile, WindowDays: DefaultWindowDays}
	if s.PoolID != "" {
		v.Percentile, v.WindowDays = s.Percentile, s.WindowDays
		v.Samples, v.MeasuredAt = s.Samples, s.MeasuredAt
		if s.Measured != nil && s.Samples > 0 {
			v.Measured = s.Measured
		}
		if s.Override != nil && s.OverrideExpires != nil && s.OverrideExpires.After(now) {
			v.Override, v.OverrideReason, v.OverrideBy, v.OverrideExpires = s.Override, s.OverrideReason, s.OverrideBy, s.OverrideExpires
		}
	}
	if r, ok := ratio(held, capacity); ok {
		v.Fallback = r
	}
	switch {
	case v.Override != nil:
		v.Psi, v.Source = *v.Override, PsiOverride
	case v.Measured != nil:
		v.Psi, v.Source = *v.Measured, PsiMeasured
	default:
		v.Psi, v.Source = v.Fallback, PsiHeld
	}
	return v
}

// poolsIn returns every pool's psi at now, read inside tx, by pool id.
func poolsIn(tx *gorm.DB, now time.Time) ([]PoolPsi, error) {
	var pools []exchange.Pool
	if err := tx.Order("id").Find(&pools).Error; err != nil {
		return nil, err
	}
	var settings []PoolSetting
	if err := tx.Find(&settings).Error; err != nil {
		return nil, err
	}
	caps, err := exchange.PoolCapacities(tx, now)
	if err != nil {
		return nil, err
	}
	bySetting := make(map[string]PoolSetting, len(settings))
	for _, s := range settings {
		bySetting[s.PoolID] = s
	}
	byCap := make(map[string]exchange.PoolCapacity, len(caps))
	for _, c := range caps {
		byCap[c.Pool] = c
	}
	out := make([]PoolPsi, len(pools))
	for i, p := range pools {
		c := byCap[p.ID]
		out[i] = psiOf(p, c.Effective, c.Held, bySetting[p.ID], now)
	}
	return out, nil
}

// PoolUtilization returns each pool's psi at now, read inside tx (the market's
// transaction): exchange.MeasuredUtilization.
func (u *Utilization) PoolUtilization(tx *gorm.DB, now time.Time) (map[string]float64, error) {
	ps, err := poolsIn(tx, now)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(ps))
	for _, p := range ps {
		out[p.Pool] = p.Psi
	}
	return out, nil
}

// Pools returns every pool's psi now, by pool id.
func (u *Utilization) Pools(ctx context.Context) ([]PoolPsi, error) {
	return poolsIn(u.db.Read.WithContext(ctx), u.now())
}

// Pool returns one pool's psi now, or ENOTFOUND.
func (u *Utilization) Pool(ctx context.Context, id string) (PoolPsi, error) {
	ps, err := u.Pools(ctx)
	if err != nil {
		return PoolPsi{}, err
	}
	i := slices.IndexFunc(ps, func(p PoolPsi) bool { return p.Pool == id })
	if i < 0 {
		return PoolPsi{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "pool: no pool %q", id)
	}
	return ps[i], nil
}

// lockSetting makes sure pool has a settings row and locks it until tx ends.
// ENOTFOUND for an unknown pool.
func (u *Utilization) lockSetting(tx *gorm.DB, pool string) (PoolSetting, error) {
	if err := exists(tx, "pools", pool, "pool: no pool %q", pool); err != nil {
		return PoolSetting{}, err
	}
	if err := tx.Exec(`INSERT INTO pool_utilization (pool_id, percentile, window_days, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (pool_id) DO NOTHING`, pool, DefaultPercentile, DefaultWindowDays, u.now()).Error; err != nil {
		return PoolSetting{}, err
	}
	var s PoolSetting
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&s, "pool_id = ?", pool).Error
	return s, err
}

// SetPolicy sets the percentile (50, 90, 95 or 99) and trailing window (1 to 14
// days) a pool's psi is measured with, and measures it again at once. EINVALID
// names the field at fault and changes nothing; ENOTFOUND for an unknown pool.
func (u *Utilization) SetPolicy(ctx context.Context, pool string, percentile, windowDays int) error {
	if !slices.Contains(Percentiles, percentile) {
		return clearhouse.Errorf(clearhouse.EINVALID, "percentile: must be one of 50, 90, 95 or 99, got %d", percentile)
	}
	if windowDays < 1 || windowDays > MaxWindowDays {
		return clearhouse.Errorf(clearhouse.EINVALID, "window: must be 1 to %d days (raw usage is kept %d days), got %d", MaxWindowDays, MaxWindowDays, windowDays)
	}
	return u.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		s, err := u.lockSetting(tx, pool)
		if err != nil {
			return err
		}
		before := map[string]int{"percentile": s.Percentile, "window_days": s.WindowDays}
		s.Percentile, s.WindowDays, s.UpdatedAt = percentile, windowDays, u.now()
		m, err := u.measure(tx, []PoolSetting{s}, u.now())
		if err != nil {
			return err
		}
		s.Measured, s.Samples, s.MeasuredAt = m[0].Measured, m[0].Samples, m[0].MeasuredAt
		if err := tx.Save(&s).Error; err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Event{Action: "pool.utilization_policy", Object: "pool:" + pool, At: u.now(),
			Before: before, After: map[string]int{"percentile": percentile, "window_days": windowDays}})
	})
}

// MaxOverride is how far ahead an override may expire.
const MaxOverride = 366 * 24 * time.Hour

// Override sets a pool's psi to psi (0 to 1) until expires, for reason, by whom.
// Reserve prices use it instead of the measured value until it expires. EINVALID
// names the field at fault and changes nothing; ENOTFOUND for an unknown pool.
func (u *Utilization) Override(ctx context.Context, pool string, psi float64, reason string, expires time.Time, by string) error {
	reason = strings.TrimSpace(reason)
	now := u.now()
	switch {
	case math.IsNaN(psi) || psi < 0 || psi > 1:
		return clearhouse.Errorf(clearhouse.EINVALID, "psi: must be between 0 and 1 (0%% to 100%%)")
	case reason == "":
		return clearhouse.Errorf(clearhouse.EINVALID, "reason: say why the measured value is overridden")
	case len(reason) > 200:
		return clearhouse.Errorf(clearhouse.EINVALID, "reason: at most 200 characters")
	case !expires.After(now):
		return clearhouse.Errorf(clearhouse.EINVALID, "expires: must be in the future")
	case expires.After(now.Add(MaxOverride)):
		return clearhouse.Errorf(clearhouse.EINVALID, "expires: an override lasts at most a year, until %s", now.Add(MaxOverride).Format("2006-01-02"))
	}
	exp := expires.UTC().Truncate(time.Second)
	return u.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		s, err := u.lockSetting(tx, pool)
		if err != nil {
			return err
		}
		before := psiOverrideState(s)
		s.Override, s.OverrideReason, s.OverrideBy, s.OverrideExpires, s.UpdatedAt = &psi, reason, by, &exp, now
		if err := tx.Save(&s).Error; err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Event{Action: "pool.utilization_override", Object: "pool:" + pool, At: now,
			Before: before, After: psiOverrideState(s)})
	})
}

// ClearOverride removes a pool's override: its psi is measured again. ENOTFOUND
// for an unknown pool.
func (u *Utilization) ClearOverride(ctx context.Context, pool string) error {
	return u.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		s, err := u.lockSetting(tx, pool)
		if err != nil {
			return err
		}
		before := psiOverrideState(s)
		s.Override, s.OverrideReason, s.OverrideBy, s.OverrideExpires, s.UpdatedAt = nil, "", "", nil, u.now()
		if err := tx.Save(&s).Error; err != nil || before == nil { // no override: nothing to record
			return err
		}
		return audit.Record(ctx, tx, audit.Event{Action: "pool.utilization_clear", Object: "pool:" + pool, At: u.now(), Before: before})
	})
}

// psiOverrideState is a pool's utilization override in the audit trail; nil for none.
func psiOverrideState(s PoolSetting) any {
	if s.Override == nil {
		return nil
	}
	st := map[string]any{"psi": *s.Override, "reason": s.OverrideReason}
	if s.OverrideExpires != nil {
		st["expires"] = s.OverrideExpires.UTC()
	}
	return st
}
