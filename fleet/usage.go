package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"gorm.io/gorm"
)

// UsageSample is a row of usage_samples: what a pool used in one slot, and its
// capacity then. Source is "agent" (reported by the cluster's agent) or "plan"
// (the reservation plan's allocations, for pools no agent reports on); an agent's
// sample replaces the plan's.
type UsageSample struct {
	PoolID   string    `gorm:"primaryKey"`
	SlotAt   time.Time `gorm:"primaryKey"`
	Used     int64
	Capacity int64
	Source   string
}

func (UsageSample) TableName() string { return "usage_samples" }

// UsageHour is a row of usage_hourly: a pool's used/capacity over one hour, the
// mean and the highest of its samples.
type UsageHour struct {
	PoolID    string    `gorm:"primaryKey"`
	HourAt    time.Time `gorm:"primaryKey"`
	Samples   int64
	MeanRatio float64
	MaxRatio  float64
}

func (UsageHour) TableName() string { return "usage_hourly" }

// PoolUsageReport is what all the work in one pool uses now (reservations and
// the quota teams hold alike), as the cluster's agent measures it.
type PoolUsageReport struct {
	Pool string
	Used int64
	// Capacity is the pool's capacity as the agent measured it (nil: not measured),
	// at most MaxCapacityFactor times the configured one. The latest is the pool's
	// effective capacity unless an operator overrides it (exchange.PoolCapacities):
	// supply and reserve prices use it, and the sample's used/capacity is over it.
	Capacity *int64
}

// MeasuredCapacity is a pool's last capacity as its agent measured it, and when.
type MeasuredCapacity struct {
	PoolID     string `gorm:"primaryKey"`
	Capacity   int64
	MeasuredAt time.Time
}

func (MeasuredCapacity) TableName() string { return "pool_measured_capacity" }

// Sample sources.
const (
	SourceAgent = "agent"
	SourcePlan  = "plan"
)

// recordPoolUsage validates and stores an agent's pool usage for the current
// slot, inside the report's tx. A second report in the same slot replaces the
// first. EINVALID names the row at fault. It returns, as capacity changes for the
// plan, the pools whose plan capacity (planCapacity) the measured capacity moved:
// from now (or the end of an override in force) to the horizon.
func (s *Reservations) recordPoolUsage(tx *gorm.DB, p *plan, cluster string, reps []PoolUsageReport, now time.Time) ([]CapacityReport, error) {
	if len(reps) > MaxReportRows {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "pools: at most %d rows per report, got %d", MaxReportRows, len(reps))
	}
	seen := map[string]bool{}
	rows := make([][]any, 0, len(reps))
	var measured [][]any
	slotAt := now.Truncate(s.cfg.Slot)
	for i, r := range reps {
		pl, ok := p.pools[r.Pool]
		switch {
		case !ok || pl.ClusterID != cluster:
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "pools[%d]: pool %q is not a pool of cluster %s", i, r.Pool, cluster)
		case seen[r.Pool]:
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "pools[%d]: pool %s is reported twice", i, r.Pool)
		case r.Used < 0:
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "pools[%d]: used must not be negative", i)
		case r.Used > MaxCapacityFactor*max(pl.Capacity, 1):
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "pools[%d]: used: %d is more than %d times the pool's configured capacity of %d",
				i, r.Used, MaxCapacityFactor, pl.Capacity)
		case r.Capacity == nil:
		case *r.Capacity < 0:
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "pools[%d]: capacity must not be negative", i)
		case *r.Capacity > MaxCapacityFactor*max(pl.Capacity, 1):
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "pools[%d]: capacity: %d is more than %d times the pool's configured capacity of %d; have an operator raise the configured capacity first",
				i, *r.Capacity, MaxCapacityFactor, pl.Capacity)
		case r.Used > MaxCapacityFactor*max(*r.Capacity, 1):
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "pools[%d]: used: %d is more than %d times the capacity of %d measured with it",
				i, r.Used, MaxCapacityFactor, *r.Capacity)
		}
		seen[r.Pool] = true
		capacity := p.eng.Capacity(r.Pool, p.slot(now)) // with the capacity changes agents reported
		if r.Capacity != nil {
			measured = append(measured, []any{r.Pool, *r.Capacity, now.UTC()})
			capacity = *r.Capacity // used over what the cluster has, as reserve prices weigh it
		}
		rows = append(rows, []any{r.Pool, slotAt, r.Used, capacity, SourceAgent})
	}
	var moved []CapacityReport
	if len(measured) > 0 {
		var err error
		if moved, err = planCapacityMoves(tx, p, measured, now); err != nil {
			return nil, err
		}
		if err := insertMany(tx, "INSERT INTO pool_measured_capacity (pool_id, capacity, measured_at) VALUES ", 3, measured,
			" ON CONFLICT (pool_id) DO UPDATE SET capacity = excluded.capacity, measured_at = excluded.measured_at"); err != nil {
			return nil, err
		}
	}
	return moved, upsertSamples(tx, rows, true)
}

// planCapacityMoves is what newly measured capacities (rows of pool, capacity, at)
// do to the plan's capacity, read inside tx before they are stored.
func planCapacityMoves(tx *gorm.DB, p *plan, measured [][]any, now time.Time) ([]CapacityReport, error) {
	caps, err := exchange.PoolCapacities(tx, now)
	if err != nil {
		return nil, err
	}
	byPool := make(map[string]exchange.PoolCapacity, len(caps))
	for _, c := range caps {
		byPool[c.Pool] = c
	}
	end := p.at(p.eng.Horizon())
	var moved []CapacityReport
	for _, m := range measured {
		pool, units := m[0].(string), m[1].(int64)
		c := byPool[pool]
		was := planCapacity(c)
		c.Measured = &units
		if is := planCapacity(c); is != was {
			from := now
			if c.Override != nil && c.OverrideExpires.After(from) {
				from = *c.OverrideExpires
			}
			if from.Before(end) {
				moved = append(moved, CapacityReport{Pool: pool, From: from, To: end, Units: is})
			}
		}
	}
	return moved, nil
}

// MeasuredCapacity returns a pool's last measured capacity; ok is false when no
// agent has measured it.
func (u *Utilization) MeasuredCapacity(ctx context.Context, pool string) (m MeasuredCapacity, ok bool, err error) {
	var rows []MeasuredCapacity
	if err := u.db.Read.WithContext(ctx).Where("pool_id = ?", pool).Limit(1).Find(&rows).Error; err != nil || len(rows) == 0 {
		return MeasuredCapacity{}, false, err
	}
	rows[0].MeasuredAt = rows[0].MeasuredAt.UTC()
	return rows[0], true, nil
}

// upsertSamples writes usage samples (pool, slot, used, capacity, source). An
// agent's sample replaces whatever the slot had; the plan's never replaces one.
func upsertSamples(tx *gorm.DB, rows [][]any, replace bool) error {
	conflict := " ON CONFLICT (pool_id, slot_at) DO NOTHING"
	if replace {
		conflict = " ON CONFLICT (pool_id, slot_at) DO UPDATE SET used = excluded.used, capacity = excluded.capacity, source = excluded.source"
	}
	return insertMany(tx, "INSERT INTO usage_samples (pool_id, slot_at, used, capacity, source) VALUES ", 5, rows, conflict)
}

// insertMany runs head + "(?,...),(?,...)" + tail over rows in statements of at
// most 1,000 rows.
func insertMany(tx *gorm.DB, head string, width int, rows [][]any, tail string) error {
	const per = 1000
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	for len(rows) > 0 {
		n := min(len(rows), per)
		var b strings.Builder
		b.WriteString(head)
		args := make([]any, 0, n*width)
		for i, r := range rows[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(one)
			args = append(args, r...)
		}
		b.WriteString(tail)
		if err := tx.Exec(b.String(), args...).Error; err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// UsagePoint is a pool's used/capacity at one time.
type UsagePoint struct {
	At    time.Time
	Ratio float64
	Used  int64
}

// Series returns a pool's samples in [from, to), oldest first.
func (u *Utilization) Series(ctx context.Context, pool string, from, to time.Time) ([]UsagePoint, error) {
	var rows []UsageSample
	if err := u.db.Read.WithContext(ctx).Where("pool_id = ? AND slot_at >= ? AND slot_at < ?", pool, from.UTC(), to.UTC()).
		Order("slot_at").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]UsagePoint, 0, len(rows))
	for _, r := range rows {
		if x, ok := ratio(r.Used, r.Capacity); ok {
			out = append(out, UsagePoint{At: r.SlotAt, Ratio: x, Used: r.Used})
		}
	}
	return out, nil
}

// Trends returns each pool's hourly mean used/capacity since from, oldest first:
// the sparklines of the market summary.
func (u *Utilization) Trends(ctx context.Context, from time.Time) (map[string][]float64, error) {
	var rows []UsageHour
	if err := u.db.Read.WithContext(ctx).Where("hour_at >= ?", from.UTC()).Order("pool_id, hour_at").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := map[string][]float64{}
	for _, r := range rows {
		out[r.PoolID] = append(out[r.PoolID], r.MeanRatio)
	}
	return out, nil
}

// Hours returns a pool's hourly aggregates in [from, to), oldest first.
func (u *Utilization) Hours(ctx context.Context, pool string, from, to time.Time) ([]UsageHour, error) {
	var rows []UsageHour
	err := u.db.Read.WithContext(ctx).Where("pool_id = ? AND hour_at >= ? AND hour_at < ?", pool, from.UTC(), to.UTC()).
		Order("hour_at").Find(&rows).Error
	return rows, err
}

// errf is fmt.Errorf, for wrapping internal errors with the step that failed.
var errf = fmt.Errorf
