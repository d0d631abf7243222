package fleet

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/scheduler"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// LostValue is value a pool's capacity could not serve (ERA section 2.1): the
// part, in one pool, of a bid refused (no room in its windows, or its value did
// not cover the price) or of a reservation that could not be honoured after
// capacity fell. At is when the request would have started. Summed per pool and
// day, it is the money the company would gain from more capacity there.
type LostValue struct {
	ID            int64
	ReservationID *int64
	TeamID        string
	PoolID        string
	At            time.Time
	Value         ledger.Money
	Reason        string // scheduler.LostNoRoom, LostPricedOut or LostNotHonoured
	CreatedAt     time.Time
}

// TableName is the lost_value table.
func (LostValue) TableName() string { return "lost_value" }

// storeLost stores the value the engine lost during a write, inside its transaction.
func (s *Reservations) storeLost(tx *gorm.DB, p *plan, now time.Time) error {
	if p == nil {
		return nil
	}
	var rows [][]any
	for _, l := range p.eng.TakeLostValue() {
		value := moneyOf(l.Value)
		if _, known := p.pools[l.Pool]; !known || value == 0 {
			continue
		}
		var reservation *int64
		if l.Reservation > 0 {
			id := l.Reservation
			reservation = &id
		}
		rows = append(rows, []any{reservation, l.Owner, l.Pool, p.at(l.Slot), int64(value), l.Reason, now})
	}
	_, err := store.Insert(tx, "lost_value", []string{"reservation_id", "team_id", "pool_id", "at", "value", "reason", "created_at"}, rows, "")
	return err
}

// loseReservation records an accepted reservation the plan could no longer hold
// when it was rebuilt as not honoured: its value split between its pools by the
// unit-slots its requests take there, at their planned starts.
func loseReservation(tx *gorm.DB, v ReservationView, now time.Time) error {
	if v.Value == nil {
		return nil
	}
	weights := map[string]int64{}
	at := map[string]time.Time{}
	var total int64
	for _, q := range v.Requests {
		if q.StartAt == nil {
			continue
		}
		units := map[string]int64{}
		for p, u := range q.Config() {
			units[p] += u * q.Count
		}
		for p, u := range q.OverheadByPool() {
			units[p] += u
		}
		for p, u := range units {
			weights[p] += u * q.Duration
			total += u * q.Duration
			if t, ok := at[p]; !ok || q.StartAt.Before(t) {
				at[p] = *q.StartAt
			}
		}
	}
	if total <= 0 {
		return nil
	}
	pools := slices.Sorted(maps.Keys(weights))
	ws := make([]int64, len(pools))
	for i, p := range pools {
		ws[i] = weights[p]
	}
	for i, part := range splitCharge(*v.Value, ws) {
		id := v.ID
		row := LostValue{ReservationID: &id, TeamID: v.TeamID, PoolID: pools[i], At: at[pools[i]], Value: part,
			Reason: scheduler.LostNotHonoured, CreatedAt: now}
		if part == 0 {
			continue
		}
		if err := tx.Omit("ID").Create(&row).Error; err != nil {
			return err
		}
	}
	return nil
}

// LostDay is the value one pool lost on one day (UTC), by reason, in micro-dollars.
type LostDay struct {
	Pool        string
	Day         time.Time
	NoRoom      ledger.Money
	PricedOut   ledger.Money
	NotHonoured ledger.Money
	Bids        int // distinct bids and reservations
}

// Total is the day's lost value.
func (d LostDay) Total() ledger.Money { return d.NoRoom + d.PricedOut + d.NotHonoured }

// MaxLostDays is the longest span LostByDay reports.
const MaxLostDays = 366

// LostByDay sums the value lost per pool and day over the days [from, to) (UTC
// days; at most MaxLostDays), ordered by day, then pool. EINVALID for a bad span.
func (s *Reservations) LostByDay(ctx context.Context, from, to time.Time) ([]LostDay, error) {
	from, to = from.UTC().Truncate(24*time.Hour), to.UTC().Truncate(24*time.Hour)
	if !to.After(from) || to.Sub(from) > MaxLostDays*24*time.Hour {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "to: must be after from, and at most %d days after it", MaxLostDays)
	}
	// SQLite keeps times as text, where the end of a period to 9999-12-31 (year
	// 10000) sorts before every date: past ledger.Latest, the bound is inclusive of it.
	q := s.db.Read.WithContext(ctx).Where("at >= ?", from)
	if to.After(ledger.Latest) {
		q = q.Where("at <= ?", ledger.Latest)
	} else {
		q = q.Where("at < ?", to)
	}
	var rows []LostValue
	if err := q.Order("at, id").Find(&rows).Error; err != nil {
		return nil, err
	}
	type key struct {
		day  time.Time
		pool string
	}
	sums := map[key]*LostDay{}
	seen := map[key]map[int64]bool{}
	var keys []key
	for _, r := range rows {
		k := key{r.At.UTC().Truncate(24 * time.Hour), r.PoolID}
		d := sums[k]
		if d == nil {
			d = &LostDay{Pool: r.PoolID, Day: k.day}
			sums[k], seen[k] = d, map[int64]bool{}
			keys = append(keys, k)
		}
		switch r.Reason {
		case scheduler.LostNoRoom:
			d.NoRoom += r.Value
		case scheduler.LostPricedOut:
			d.PricedOut += r.Value
		default:
			d.NotHonoured += r.Value
		}
		id := -r.ID
		if r.ReservationID != nil {
			id = *r.ReservationID
		}
		if !seen[k][id] {
			seen[k][id] = true
			d.Bids++
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := a.day.Compare(b.day); c != 0 {
			return c
		}
		if a.pool < b.pool {
			return -1
		}
		if a.pool > b.pool {
			return 1
		}
		return 0
	})
	out := make([]LostDay, len(keys))
	for i, k := range keys {
		out[i] = *sums[k]
	}
	return out, nil
}
