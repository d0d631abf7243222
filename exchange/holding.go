package exchange

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"gorm.io/gorm"
)

// Holding charges (issues 24 and 31). An operator may set a pool's holding charge: a
// rate per unit of quota and month, 0 (off) by default. Every team holding quota in
// the pool is charged the units it holds at the moment of charging times the rate,
// in advance for the month. A rate set on a pool that had none applies from the day
// it is set (UTC): that month is charged pro rata, for the days from that day to the
// month's end, units x rate x days / days in the month, rounded down to the
// micro-dollar; a changed rate applies from the next month. The scheduled job
// charges the month under way every hour (so a new rate's first charge lands within
// the hour, and a month in its first hour), and `clearhouse charge holding --month
// YYYY-MM` charges any month that has begun.
// A (pool, team, month) is charged at most once (holding_charges' primary key and
// the ledger entry's idempotency key), in one transaction with its ledger entry,
// which moves the money from the team's budget to the treasury.

// MaxHoldingRate bounds a pool's holding charge: $1,000,000 per unit and month.
const MaxHoldingRate = 1_000_000 * ledger.Dollar

// HoldingRate is a pool's holding charge: Rate micro-dollars per unit held per
// month, charged for the months from AppliesFrom (the first day of a month, UTC).
type HoldingRate struct {
	PoolID      string `gorm:"primaryKey"`
	Rate        ledger.Money
	AppliesFrom time.Time
	UpdatedAt   time.Time
}

// TableName is the pool_holding_charges table.
func (HoldingRate) TableName() string { return "pool_holding_charges" }

// HoldingCharge is one team's holding charge for one pool and month: Amount is
// Units x Rate for a whole month, Units x Rate x Days / MonthDays (rounded down)
// for part of one.
type HoldingCharge struct {
	PoolID    string
	TeamID    string
	Month     string // "2026-11"
	Units     int64
	Rate      ledger.Money
	Amount    ledger.Money
	EntryID   int64
	ChargedAt time.Time
	// Days is how many days of the month the charge covers, from the day the rate
	// was set to the month's end, of MonthDays; both 0 for a whole month (migration
	// 00032).
	Days, MonthDays int64
}

// Whole says whether the charge covers the whole month.
func (c HoldingCharge) Whole() bool { return c.Days == 0 || c.Days == c.MonthDays }

// Period is the part of its month the charge covers: [start, end), UTC.
func (c HoldingCharge) Period() (start, end time.Time) {
	m, _ := ParseMonth(c.Month)
	end = m.AddDate(0, 1, 0)
	if c.Whole() {
		return m, end
	}
	return end.AddDate(0, 0, -int(c.Days)), end
}

// HoldingAmount is units x rate for days of a month of monthDays days (a whole
// month when days == monthDays), rounded down to the micro-dollar: exact integer
// arithmetic. Returns EINVALID when the product overflows.
func HoldingAmount(units int64, rate ledger.Money, days, monthDays int64) (ledger.Money, error) {
	whole, err := rate.MulInt(units)
	if err != nil || days == monthDays {
		return whole, err
	}
	part, err := whole.MulInt(days)
	if err != nil {
		return 0, err
	}
	return part / ledger.Money(monthDays), nil
}

// daysIn is the number of days of the month that begins at start.
func daysIn(start time.Time) int64 { return int64(start.AddDate(0, 1, -1).Day()) }

// TableName is the holding_charges table.
func (HoldingCharge) TableName() string { return "holding_charges" }

// HoldingShortfall is a charge that could not be made because the team's
// available budget is less than it; the next run tries again.
type HoldingShortfall struct {
	PoolID, TeamID string
	Amount         ledger.Money
}

// HoldingRun is what one charging of a month did.
type HoldingRun struct {
	Month     string
	Charged   []HoldingCharge    // made by this run
	Already   int                // (pool, team) pairs charged for the month before
	Shortfall []HoldingShortfall // teams that could not pay; retried by the next run
}

// dayStart is the first instant of t's day, UTC.
func dayStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// monthStart is the first instant of t's month, UTC.
func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// ParseMonth reads a month as YYYY-MM and returns its first instant (UTC), or
// EINVALID naming the field month.
func ParseMonth(s string) (time.Time, error) {
	t, err := time.Parse("2006-01", strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, clearhouse.Errorf(clearhouse.EINVALID, "month: give a month as YYYY-MM, e.g. 2026-11")
	}
	return t.UTC(), nil
}

// HoldingRates returns every pool's holding charge that was ever set, by pool; a
// pool missing from it charges nothing.
func (m *Market) HoldingRates(ctx context.Context) (map[string]HoldingRate, error) {
	var rs []HoldingRate
	if err := m.db.Read.WithContext(ctx).Find(&rs).Error; err != nil {
		return nil, err
	}
	out := make(map[string]HoldingRate, len(rs))
	for _, r := range rs {
		r.AppliesFrom, r.UpdatedAt = r.AppliesFrom.UTC(), r.UpdatedAt.UTC()
		out[r.PoolID] = r
	}
	return out, nil
}

// SetHoldingCharge sets a pool's holding charge to rate micro-dollars per unit and
// month (0 turns it off). A rate on a pool that had none (or had 0) applies from
// the start of today (UTC), so this month is charged pro rata from today; a changed
// rate applies from the month after this one: the month under way may already have
// been charged at the old rate. Setting the rate a pool already has changes nothing. Returns EINVALID for a negative rate or
// one above MaxHoldingRate and ENOTFOUND for an unknown pool.
func (m *Market) SetHoldingCharge(ctx context.Context, pool string, rate ledger.Money) (HoldingRate, error) {
	if rate < 0 {
		return HoldingRate{}, clearhouse.Errorf(clearhouse.EINVALID, "holding charge: must not be negative; enter 0 to charge nothing")
	}
	if rate > MaxHoldingRate {
		return HoldingRate{}, clearhouse.Errorf(clearhouse.EINVALID, "holding charge: at most %s per unit and month", moneyfmt.Cents(int64(MaxHoldingRate)))
	}
	var out HoldingRate
	err := m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if _, err := lockPool(tx, pool); err != nil {
			return err
		}
		var cur HoldingRate
		err := tx.Take(&cur, "pool_id = ?", pool).Error
		switch {
		case err == nil && cur.Rate == rate:
			out = cur
			return nil
		case err != nil && !errors.Is(err, gorm.ErrRecordNotFound):
			return err
		case err != nil && rate == 0:
			out = HoldingRate{PoolID: pool}
			return nil
		}
		now := m.now()
		from := monthStart(now).AddDate(0, 1, 0)
		if rate > 0 && (err != nil || cur.Rate == 0) {
			from = dayStart(now)
		}
		out = HoldingRate{PoolID: pool, Rate: rate, AppliesFrom: from, UpdatedAt: now}
		if err := tx.Save(&out).Error; err != nil {
			return err
		}
		return m.record(ctx, tx, "pool.holding_charge", "pool:"+pool, map[string]any{"rate": cur.Rate}, map[string]any{"rate": rate, "applies_from": out.AppliesFrom})
	})
	return out, err
}

// ChargeHolding charges every team holding quota in a pool with a holding charge
// for month (any instant in it) that has not been charged yet, pro rata when the
// rate applies from a day inside the month (HoldingAmount). Each charge is one
// transaction: the ledger entry (team to treasury, reason holding) and its
// holding_charges row, whose primary key (pool, team, month) makes a second run,
// on this server or another, charge nothing. A team whose available budget cannot
// pay is listed in Shortfall and not charged. Returns EINVALID for a month that
// has not begun.
func (m *Market) ChargeHolding(ctx context.Context, month time.Time) (HoldingRun, error) {
	start := monthStart(month)
	label := start.Format("2006-01")
	run := HoldingRun{Month: label}
	if start.After(m.now()) {
		return run, clearhouse.Errorf(clearhouse.EINVALID, "month: %s has not begun; a month is charged once it has", label)
	}
	rates, err := m.HoldingRates(ctx)
	if err != nil {
		return run, err
	}
	pools, err := m.Pools(ctx)
	if err != nil {
		return run, err
	}
	for _, p := range pools {
		r, ok := rates[p.ID]
		if !ok || r.Rate <= 0 || !r.AppliesFrom.Before(start.AddDate(0, 1, 0)) {
			continue
		}
		days, monthDays := daysIn(start), daysIn(start)
		if r.AppliesFrom.After(start) {
			days -= int64(r.AppliesFrom.Day() - 1)
		}
		var hs []Holding
		if err := m.db.Read.WithContext(ctx).Where("pool_id = ? AND quantity > 0", p.ID).Order("team_id").Find(&hs).Error; err != nil {
			return run, err
		}
		for _, h := range hs {
			c, done, err := m.chargeOne(ctx, p, r.Rate, h.TeamID, start, days, monthDays)
			switch {
			case clearhouse.ErrorCode(err) == clearhouse.EUNPROCESSABLE:
				amount, _ := HoldingAmount(h.Quantity, r.Rate, days, monthDays)
				run.Shortfall = append(run.Shortfall, HoldingShortfall{PoolID: p.ID, TeamID: h.TeamID, Amount: amount})
			case err != nil:
				return run, fmt.Errorf("holding charge of %s for team %s: %w", p.ID, h.TeamID, err)
			case done:
				run.Already++
			default:
				run.Charged = append(run.Charged, c)
			}
		}
	}
	return run, nil
}

// chargeOne charges one team for one pool and month in one transaction, or
// reports done when it was charged before (by this server or a concurrent one).
func (m *Market) chargeOne(ctx context.Context, p Pool, rate ledger.Money, team string, start time.Time, days, monthDays int64) (HoldingCharge, bool, error) {
	label := start.Format("2006-01")
	var out HoldingCharge
	done := false
	err := m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&HoldingCharge{}).Where("pool_id = ? AND team_id = ? AND month = ?", p.ID, team, label).Count(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			done = true
			return nil
		}
		var units int64
		if err := tx.Table("holdings").Where("team_id = ? AND pool_id = ?", team, p.ID).Select("COALESCE(SUM(quantity), 0)").Scan(&units).Error; err != nil {
			return err
		}
		if units <= 0 {
			done = true // sold since it was listed: nothing to charge
			return nil
		}
		amount, err := HoldingAmount(units, rate, days, monthDays)
		if err != nil {
			return clearhouse.Errorf(clearhouse.EUNPROCESSABLE, "holding charge: %d units at %s overflow", units, rate)
		}
		if amount <= 0 {
			done = true // a few units for a few days at a tiny rate: less than a micro-dollar
			return nil
		}
		memo := HoldingMemo(p.ID, p.Unit, start, units, rate)
		if days != monthDays {
			memo = HoldingPartMemo(p.ID, p.Unit, start, units, rate, days, monthDays)
		}
		e, err := m.ledger.WithTx(tx).Post(ctx, ledger.NewEntry{
			Key: fmt.Sprintf("holding/%s/%s/%s", p.ID, team, label), Reason: ledger.ReasonHolding,
			Ref: "pool:" + p.ID, Memo: memo,
			Postings: []ledger.Posting{{Account: ledger.TeamAccount(team), Amount: -amount}, {Account: ledger.Treasury, Amount: amount}},
		})
		if err != nil {
			return err
		}
		out = HoldingCharge{PoolID: p.ID, TeamID: team, Month: label, Units: units, Rate: rate, Amount: amount, EntryID: e.ID, ChargedAt: m.now()}
		if days != monthDays {
			out.Days, out.MonthDays = days, monthDays
		}
		return tx.Create(&out).Error
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		// A concurrent run charged it first (its entry's key or its row): nothing more.
		return HoldingCharge{}, true, nil
	}
	return out, done, err
}

// HoldingMemo is a holding charge's memo, as statements show it: "Holding charge,
// ap-south/cpu, November 2026: 1,600 cores x $0.10".
func HoldingMemo(pool, unit string, month time.Time, units int64, rate ledger.Money) string {
	return fmt.Sprintf("Holding charge, %s, %s: %s x %s", pool, month.Format("January 2006"), moneyfmt.Quantity(units, unit), moneyfmt.Exact(int64(rate)))
}

// HoldingPartMemo is the memo of a charge for part of a month: "Holding charge,
// ap-south/cpu, November 2026, 16 of 30 days from 15 November: 1,600 cores x $0.10 x
// 16/30".
func HoldingPartMemo(pool, unit string, month time.Time, units int64, rate ledger.Money, days, monthDays int64) string {
	from := month.AddDate(0, 1, -int(days))
	return fmt.Sprintf("Holding charge, %s, %s, %d of %d days from %s: %s x %s x %d/%d", pool, month.Format("January 2006"),
		days, monthDays, from.Format("2 January"), moneyfmt.Quantity(units, unit), moneyfmt.Exact(int64(rate)), days, monthDays)
}

// HoldingCharges lists the holding charges made to a team (every team's for ""),
// newest month first.
func (m *Market) HoldingCharges(ctx context.Context, team string) ([]HoldingCharge, error) {
	q := m.db.Read.WithContext(ctx).Order("month DESC, pool_id, team_id")
	if team != "" {
		q = q.Where("team_id = ?", team)
	}
	var out []HoldingCharge
	return out, q.Find(&out).Error
}

// HoldingChargeOf returns the holding charge that ledger entry entryID made, or
// ENOTFOUND when that entry is not a holding charge.
func (m *Market) HoldingChargeOf(ctx context.Context, entryID int64) (HoldingCharge, error) {
	var out HoldingCharge
	if err := m.db.Read.WithContext(ctx).Limit(1).Find(&out, "entry_id = ?", entryID).Error; err != nil {
		return out, err
	}
	if out.EntryID == 0 {
		return out, clearhouse.Errorf(clearhouse.ENOTFOUND, "entry %d: not a holding charge", entryID)
	}
	return out, nil
}
