package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/notify"
)

// UnplaceableReport is a booked request its cluster refused to reserve (Slurm:
// "Requested nodes are busy"), with the cluster's reason.
type UnplaceableReport struct {
	Reservation int64
	Request     int
	Reason      string
}

// maxUnplaceableReason bounds the reason an agent gives, in characters.
const maxUnplaceableReason = 500

// NoticeReservationUnplaceable is the notification a team gets when its cluster
// refused a reservation it had booked (ref "reservation:N").
const NoticeReservationUnplaceable = "reservation_unplaceable"

// upcoming is every accepted request of cluster whose planned start is after now and
// within the plan's horizon, as assignments with no units yet, by start.
func (s *Reservations) upcoming(ctx context.Context, cluster string, now time.Time) ([]Assignment, error) {
	db := s.db.Read.WithContext(ctx)
	horizon := now.Add(s.cfg.Horizon)
	ahead := db.Model(&ReservationRequest{}).Select("reservation_id").Where("start_at > ? AND start_at <= ?", now, horizon)
	vs, err := s.views(db, db.Where("cluster_id = ? AND status = ? AND id IN (?)", cluster, ReservationAccepted, ahead), now)
	if err != nil {
		return nil, err
	}
	var out []Assignment
	for _, v := range vs {
		for _, q := range v.Requests {
			if q.StartAt == nil || !q.StartAt.After(now) || q.StartAt.After(horizon) {
				continue
			}
			out = append(out, Assignment{Reservation: v.ID, Request: q.Idx, Team: v.TeamID, Configuration: q.Config(),
				Count: q.Count, Start: *q.StartAt, End: q.End(), Arrival: q.Arrival, Deadline: q.Deadline})
		}
	}
	slices.SortStableFunc(out, func(a, b Assignment) int { return a.Start.Compare(b.Start) })
	return out, nil
}

// refuseUnplaceable ends each accepted reservation a request of which its cluster
// refused to reserve, inside the report's transaction: it leaves the plan, its status
// is failed ("could not be honoured", never running) with the cluster's reason as its
// note, its requests end at their start (they used nothing) and the whole uncaptured
// hold goes back to the team in one ledger posting (settleCharges, whose key makes a
// repeat a no-op); every member and owner of the team is told. A reservation that is
// no longer accepted is left as it is, so a report repeated changes nothing. Money
// already captured (a request that ran in its cluster before it was refused) is kept:
// then only the rest is refunded.
func (s *Reservations) refuseUnplaceable(ctx context.Context, tx *gorm.DB, p *plan, rows []UnplaceableReport, now time.Time) error {
	done := map[int64]bool{}
	for _, u := range rows {
		if done[u.Reservation] {
			continue
		}
		done[u.Reservation] = true
		vs, err := s.views(tx, tx.Where("id = ? AND status = ?", u.Reservation, ReservationAccepted), now)
		if err != nil {
			return err
		}
		if len(vs) == 0 {
			continue // ended already: a repeat, or it ended otherwise
		}
		v := vs[0]
		if err := p.cancel(p.ceil(now), v.ID); err != nil && clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			return err
		}
		cut := ceilTime(now, s.cfg.Slot)
		if v.Captured == 0 {
			for _, q := range v.Requests {
				if q.StartAt != nil && q.StartAt.Before(cut) {
					cut = *q.StartAt
				}
			}
		}
		reason := strings.TrimSpace(u.Reason)
		if reason == "" {
			reason = "no reason given"
		}
		note := fmt.Sprintf("its cluster refused to reserve request %d: %s", u.Request, reason)
		if err := endRequests(tx, &v, cut); err != nil {
			return err
		}
		if _, err := s.settleCharges(ctx, tx, &v, now, true); err != nil {
			return err
		}
		if err := tx.Model(&Reservation{}).Where("id = ?", v.ID).
			Updates(map[string]any{"status": ReservationFailed, "note": note, "updated_at": now}).Error; err != nil {
			return err
		}
		if err := s.tellUnplaceable(tx, v, note); err != nil {
			return err
		}
	}
	return nil
}

// tellUnplaceable tells the members and owners of v's team that its cluster refused
// v and what came back to them.
func (s *Reservations) tellUnplaceable(tx *gorm.DB, v ReservationView, note string) error {
	if s.notices == nil {
		return nil
	}
	var users []identity.User
	if err := tx.Where("team_id = ?", v.TeamID).Order("id").Find(&users).Error; err != nil {
		return err
	}
	refund := v.Price - v.Captured
	return s.notices.Send(tx, users, func(identity.User) notify.Message {
		return notify.Message{Kind: NoticeReservationUnplaceable, Ref: fmt.Sprintf("reservation:%d", v.ID),
			Subject: fmt.Sprintf("Reservation #%d could not be reserved in its cluster", v.ID),
			Body:    fmt.Sprintf("Reservation #%d will not run: %s. %s of its price came back to your team's budget.", v.ID, note, refund),
			Link:    "/reservations"}
	})
}
