package fleet

import (
	"context"
	"slices"
	"time"

	"gorm.io/gorm"
)

// quotaInUse is the most of quota units of a pool that a team's accepted
// reservations take in any moment from now on: the part of its quota it cannot
// sell. Reservations use the team's own quota first, so at each moment they take
// the smaller of the quota and all they run there.
func quotaInUse(tx *gorm.DB, team, pool string, quota int64, now time.Time) (int64, error) {
	if quota <= 0 {
		return 0, nil
	}
	var reqs []ReservationRequest
	err := tx.Where(`reservation_id IN (SELECT id FROM reservations WHERE team_id = ? AND status = ?)
		AND start_at IS NOT NULL AND (configuration LIKE ? OR overhead LIKE ?)`, team, ReservationAccepted, "%\""+pool+"\"%", "%\""+pool+"\"%").Find(&reqs).Error
	if err != nil {
		return 0, err
	}
	type event struct {
		at    time.Time
		units int64
	}
	var evs []event
	for _, q := range reqs {
		units := q.Config()[pool]*q.Count + q.OverheadByPool()[pool]
		end := q.End()
		if units <= 0 || !end.After(now) {
			continue
		}
		start := *q.StartAt
		if start.Before(now) {
			start = now
		}
		evs = append(evs, event{start, units}, event{end, -units})
	}
	// Ends before starts at the same instant: a slot is not used twice.
	slices.SortFunc(evs, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return int(a.units - b.units)
	})
	var load, most int64
	for _, e := range evs {
		load += e.units
		most = max(most, min(load, quota))
	}
	return most, nil
}

// CommittedQuota implements exchange.QuotaCommitments: the most of quota units of
// pool that team's accepted reservations take at any moment from now on, read
// inside the market's transaction tx.
func (s *Reservations) CommittedQuota(tx *gorm.DB, team, pool string, quota int64, now time.Time) (int64, error) {
	return quotaInUse(tx, team, pool, quota, now)
}

// QuotaNeeded returns, per pool a team holds quota in, the most of it the team's
// accepted reservations use from now on: quota it cannot offer for sale.
func (s *Reservations) QuotaNeeded(ctx context.Context, team string) (map[string]int64, error) {
	db := s.db.Read.WithContext(ctx)
	qs, err := Quotas(db)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, q := range qs {
		if q.TeamID != team {
			continue
		}
		n, err := quotaInUse(db, team, q.PoolID, q.Quota, s.now())
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out[q.PoolID] = n
		}
	}
	return out, nil
}
