package fleet

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// RefreshReport says what one run of the utilization job did.
type RefreshReport struct {
	From, To     time.Time // slots filled from the plan, and hours aggregated, in [From, To)
	PlanSamples  int       // samples written from the reservation plan
	Hours        int       // hourly aggregates written
	PrunedRaw    int64     // samples older than the raw retention, deleted
	PrunedHourly int64     // hourly aggregates older than a year, deleted
	Measured     int       // pools with usage data in their window
	NoData       []string  // pools without: their psi falls back to held/capacity
}

// usageJob is the job's one row: how far it has filled and aggregated.
type usageJob struct {
	ID          int64
	FilledUntil *time.Time
	RefreshedAt *time.Time
}

func (usageJob) TableName() string { return "usage_job" }

// Refresh is the utilization job: it fills the slots that passed since its last
// run from the reservation plan for pools no agent reports on, aggregates them
// into hours, deletes samples past their retention, and measures every pool's psi
// with its percentile and window. Each step is idempotent (samples and hours are
// keyed by pool and time), so a restart catches up and two servers running it at
// once write the same rows.
func (u *Utilization) Refresh(ctx context.Context) (RefreshReport, error) {
	now := u.now()
	to := now.Truncate(u.cfg.Slot) // slots before this one are complete
	var job usageJob
	if err := u.db.Read.WithContext(ctx).Take(&job, "id = 1").Error; err != nil {
		return RefreshReport{}, errf("utilization: reading the job's state: %w", err)
	}
	from := to.Add(-MaxWindowDays * 24 * time.Hour)
	if job.FilledUntil != nil && job.FilledUntil.After(from) {
		from = *job.FilledUntil
	}
	rep := RefreshReport{From: from, To: to}
	var err error
	if rep.PlanSamples, err = u.fillFromPlan(ctx, from, to, now); err != nil {
		return rep, errf("utilization: filling from the plan: %w", err)
	}
	if rep.Hours, err = u.downsample(ctx, from.Truncate(time.Hour), to.Truncate(time.Hour)); err != nil {
		return rep, errf("utilization: hourly aggregates: %w", err)
	}
	if rep.PrunedRaw, rep.PrunedHourly, err = u.prune(ctx, now); err != nil {
		return rep, errf("utilization: retention: %w", err)
	}
	if rep.Measured, rep.NoData, err = u.measureAll(ctx, now); err != nil {
		return rep, errf("utilization: measuring: %w", err)
	}
	err = u.db.Write.WithContext(ctx).Exec(`UPDATE usage_job SET filled_until = ?, refreshed_at = ?
		WHERE id = 1 AND (filled_until IS NULL OR filled_until < ?)`, to, now, to).Error
	return rep, err
}

// LastRefresh is when the job last ran (zero when never).
func (u *Utilization) LastRefresh(ctx context.Context) (time.Time, error) {
	var job usageJob
	if err := u.db.Read.WithContext(ctx).Take(&job, "id = 1").Error; err != nil || job.RefreshedAt == nil {
		return time.Time{}, err
	}
	return *job.RefreshedAt, nil
}

// fillFromPlan writes, for pools no agent reported on in the last day, a sample
// per slot in [from, to) of what the plan's reservations used there: pools with
// an allocation in the range (from its first allocation on), and pools already
// measured from the plan (their idle slots count as zero). It never replaces an
// agent's sample.
func (u *Utilization) fillFromPlan(ctx context.Context, from, to, now time.Time) (int, error) {
	if !from.Before(to) {
		return 0, nil
	}
	db := u.db.Read.WithContext(ctx)
	type poolRow struct {
		ID       string
		Capacity int64
		Agent    bool
		Plan     bool
	}
	var pools []poolRow
	if err := db.Raw(`SELECT p.id, p.capacity,
		EXISTS (SELECT 1 FROM usage_samples s WHERE s.pool_id = p.id AND s.slot_at >= ? AND s.source = ?) AS agent,
		EXISTS (SELECT 1 FROM usage_samples s WHERE s.pool_id = p.id AND s.slot_at >= ? AND s.source = ?) AS plan
		FROM pools p ORDER BY p.id`, from.Add(-24*time.Hour), SourceAgent, now.Add(-u.cfg.Raw), SourcePlan).Scan(&pools).Error; err != nil {
		return 0, err
	}
	var reqs []ReservationRequest
	if err := db.Raw(`SELECT q.* FROM reservation_requests q JOIN reservations r ON r.id = q.reservation_id
		WHERE q.start_at IS NOT NULL AND q.start_at < ? AND q.start_at >= ? AND r.status IN ?`,
		to, from.Add(-u.cfg.Raw), []ReservationStatus{ReservationAccepted, ReservationDone, ReservationFailed, ReservationCancelled}).
		Scan(&reqs).Error; err != nil {
		return 0, err
	}
	slot := u.cfg.Slot
	n := int(to.Sub(from) / slot)
	used := map[string][]int64{} // pool -> units per slot of [from, to)
	for _, q := range reqs {
		start, end := q.StartAt.UTC(), q.End().UTC()
		if !end.After(from) {
			continue
		}
		for pool, per := range q.Config() {
			if used[pool] == nil {
				used[pool] = make([]int64, n)
			}
			for i := max(0, int(start.Sub(from)/slot)); i < n; i++ {
				at := from.Add(time.Duration(i) * slot)
				if at.Before(start) {
					continue
				}
				if !at.Before(end) {
					break
				}
				used[pool][i] += per * q.Count
			}
		}
	}
	var rows [][]any
	for _, p := range pools {
		units, allocated := used[p.ID]
		if p.Agent || (!allocated && !p.Plan) {
			continue
		}
		first := 0 // a pool new to the plan is measured from its first allocation on
		for !p.Plan && first < n && units[first] == 0 {
			first++
		}
		for i := first; i < n; i++ {
			var x int64
			if units != nil {
				x = units[i]
			}
			rows = append(rows, []any{p.ID, from.Add(time.Duration(i) * slot), x, p.Capacity, SourcePlan})
		}
	}
	if len(rows) == 0 {
		return 0, nil
	}
	return len(rows), u.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return upsertSamples(tx, rows, false)
	})
}

// downsample writes the hourly aggregates of every hour in [from, to) from the
// raw samples (replacing what an earlier run wrote for the same hour).
func (u *Utilization) downsample(ctx context.Context, from, to time.Time) (int, error) {
	if !from.Before(to) {
		return 0, nil
	}
	rows, err := u.db.Read.WithContext(ctx).Raw(`SELECT pool_id, slot_at, used, capacity FROM usage_samples
		WHERE slot_at >= ? AND slot_at < ? ORDER BY pool_id, slot_at`, from, to).Rows()
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var out [][]any
	var cur UsageHour
	var sum float64
	flush := func() {
		if cur.Samples > 0 {
			out = append(out, []any{cur.PoolID, cur.HourAt, cur.Samples, sum / float64(cur.Samples), cur.MaxRatio})
		}
	}
	for rows.Next() {
		var s UsageSample
		if err := rows.Scan(&s.PoolID, &s.SlotAt, &s.Used, &s.Capacity); err != nil {
			return 0, err
		}
		x, ok := ratio(s.Used, s.Capacity)
		if !ok {
			continue
		}
		h := s.SlotAt.UTC().Truncate(time.Hour)
		if s.PoolID != cur.PoolID || !h.Equal(cur.HourAt) {
			flush()
			cur, sum = UsageHour{PoolID: s.PoolID, HourAt: h}, 0
		}
		cur.Samples++
		sum += x
		cur.MaxRatio = max(cur.MaxRatio, x)
	}
	flush()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(out) == 0 {
		return 0, nil
	}
	return len(out), u.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return insertMany(tx, "INSERT INTO usage_hourly (pool_id, hour_at, samples, mean_ratio, max_ratio) VALUES ", 5, out,
			" ON CONFLICT (pool_id, hour_at) DO UPDATE SET samples = excluded.samples, mean_ratio = excluded.mean_ratio, max_ratio = excluded.max_ratio")
	})
}

// prune deletes samples older than the raw retention and hours older than the
// hourly one.
func (u *Utilization) prune(ctx context.Context, now time.Time) (raw, hourly int64, err error) {
	err = u.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Exec("DELETE FROM usage_samples WHERE slot_at < ?", now.Add(-u.cfg.Raw))
		if res.Error != nil {
			return res.Error
		}
		raw = res.RowsAffected
		res = tx.Exec("DELETE FROM usage_hourly WHERE hour_at < ?", now.Add(-u.cfg.Hourly))
		hourly = res.RowsAffected
		return res.Error
	})
	return raw, hourly, err
}

// measureAll measures every pool's psi with its own percentile and window and
// stores it; a setting changed meanwhile keeps the value SetPolicy measured.
func (u *Utilization) measureAll(ctx context.Context, now time.Time) (int, []string, error) {
	db := u.db.Read.WithContext(ctx)
	var ids []string
	if err := db.Table("pools").Order("id").Pluck("id", &ids).Error; err != nil {
		return 0, nil, err
	}
	var settings []PoolSetting
	if err := db.Find(&settings).Error; err != nil {
		return 0, nil, err
	}
	have := map[string]PoolSetting{}
	for _, s := range settings {
		have[s.PoolID] = s
	}
	all := make([]PoolSetting, len(ids))
	for i, id := range ids {
		s, ok := have[id]
		if !ok {
			s = PoolSetting{PoolID: id, Percentile: DefaultPercentile, WindowDays: DefaultWindowDays}
		}
		all[i] = s
	}
	measured, err := u.measure(db, all, now)
	if err != nil {
		return 0, nil, err
	}
	var n int
	var none []string
	rows := make([][]any, len(measured))
	for i, s := range measured {
		if s.Measured != nil {
			n++
		} else {
			none = append(none, s.PoolID)
		}
		rows[i] = []any{s.PoolID, s.Percentile, s.WindowDays, s.Measured, s.Samples, s.MeasuredAt, now}
	}
	err = u.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return insertMany(tx, "INSERT INTO pool_utilization (pool_id, percentile, window_days, measured, samples, measured_at, updated_at) VALUES ", 7, rows,
			` ON CONFLICT (pool_id) DO UPDATE SET measured = excluded.measured, samples = excluded.samples, measured_at = excluded.measured_at
			WHERE pool_utilization.percentile = excluded.percentile AND pool_utilization.window_days = excluded.window_days`)
	})
	return n, none, err
}

// measure works out each setting's psi from the samples in its window before now,
// read through db one pool at a time (a range of the samples' primary key),
// reading only used and capacity.
func (u *Utilization) measure(db *gorm.DB, settings []PoolSetting, now time.Time) ([]PoolSetting, error) {
	out := make([]PoolSetting, len(settings))
	at := now
	var buf []float64
	for i, s := range settings {
		out[i] = s
		out[i].Measured, out[i].Samples, out[i].MeasuredAt = nil, 0, nil
		rows, err := db.Raw(`SELECT used, capacity FROM usage_samples WHERE pool_id = ? AND slot_at >= ? AND slot_at <= ?`,
			s.PoolID, now.Add(-time.Duration(s.WindowDays)*24*time.Hour), now).Rows()
		if err != nil {
			return nil, err
		}
		buf = buf[:0]
		var used, capacity int64
		for rows.Next() {
			if err := rows.Scan(&used, &capacity); err != nil {
				rows.Close()
				return nil, err
			}
			if x, ok := ratio(used, capacity); ok {
				buf = append(buf, x)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
		if len(buf) > 0 {
			p := Percentile(buf, s.Percentile)
			out[i].Measured, out[i].Samples, out[i].MeasuredAt = &p, int64(len(buf)), &at
		}
	}
	return out, nil
}
