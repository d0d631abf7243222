package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
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
}

// Sample sources.
const (
	SourceAgent = "agent"
	SourcePlan  = "plan"
)

// recordPoolUsage validates and stores an agent's pool usage for the current
// slot, inside the report's tx. A second report in the same slot replaces the
// first. EINVALID names the row at fault.
func (s *Reservations) recordPoolUsage(tx *gorm.DB, p *plan, cluster string, reps []PoolUsageReport, now time.Time) error {
	if len(reps) > MaxReportRows {
		return clearhouse.Errorf(clearhouse.EINVALID, "pools: at most %d rows per report, got %d", MaxReportRows, len(reps))
	}
	seen := map[string]bool{}
	rows := make([][]any, 0, len(reps))
	slotAt := now.Truncate(s.cfg.Slot)
	for i, r := range reps {
		pl, ok := p.pools[r.Pool]
		switch {
		case !ok || pl.ClusterID != cluster:
			return clearhouse.Errorf(clearhouse.EINVALID, "pools[%d]: pool %q is not a pool of cluster %s", i, r.Pool, cluster)
		case seen[r.Pool]:
			return clearhouse.Errorf(clearhouse.EINVALID, "pools[%d]: pool %s is reported twice", i, r.Pool)
		case r.Used < 0:
			return clearhouse.Errorf(clearhouse.EINVALID, "pools[%d]: used must not be negative", i)
		case r.Used > MaxCapacityFactor*max(pl.Capacity, 1):
			return clearhouse.Errorf(clearhouse.EINVALID, "pools[%d]: used: %d is more than %d times the pool's configured capacity of %d",
				i, r.Used, MaxCapacityFactor, pl.Capacity)
		}
		seen[r.Pool] = true
		capacity := p.eng.Capacity(r.Pool, p.slot(now)) // with the capacity changes agents reported
		rows = append(rows, []any{r.Pool, slotAt, r.Used, capacity, SourceAgent})
	}
	return upsertSamples(tx, rows, true)
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
