package fleet

import (
	"context"
	"fmt"
	"math/bits"
	"time"

	"github.com/clearhouse/clearhouse/ledger"
	"gorm.io/gorm"
)

// How a reservation is charged. Its price, set when it was accepted, is held on the
// team's budget and split between its requests by the unit-slots each takes from
// shared capacity (units from the team's own quota cost nothing). A request's share
// is earned evenly over its planned slots: each slot that passes is captured to the
// treasury, and the share of slots it will not use (it ended early, was
// cancelled, or could not be honoured) is released as soon as that is known.

// splitCharge divides price between requests in proportion to weights, exactly:
// the shares sum to price (largest remainders get the leftover micro-dollars).
func splitCharge(price ledger.Money, weights []int64) []ledger.Money {
	out := make([]ledger.Money, len(weights))
	var total int64
	for _, w := range weights {
		total += w
	}
	if total <= 0 || price <= 0 {
		if len(out) > 0 && price > 0 {
			out[0] = price
		}
		return out
	}
	var given ledger.Money
	rem := make([]uint64, len(weights))
	for i, w := range weights {
		q, r := mulDiv(int64(price), w, total)
		out[i], rem[i] = ledger.Money(q), r
		given += out[i]
	}
	for left := price - given; left > 0; left-- {
		best := 0
		for i := range rem {
			if rem[i] > rem[best] {
				best = i
			}
		}
		out[best]++
		rem[best] = 0
	}
	return out
}

// mulDiv is a*b/c rounded down and its remainder, for non-negative a, b and
// positive c, without overflow in a*b.
func mulDiv(a, b, c int64) (int64, uint64) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return 1<<63 - 1, 0 // cannot happen for money times slots
	}
	q, r := bits.Div64(hi, lo, uint64(c))
	return int64(q), r
}

// earned is what a reservation's requests have earned by now (due) and what they
// will have earned when they end (expected); done says every request has ended.
func (s *Reservations) earned(v ReservationView, now time.Time, final bool) (due, expected ledger.Money, done bool) {
	done = true
	slot := s.cfg.Slot
	for _, q := range v.Requests {
		if q.StartAt == nil {
			continue
		}
		dur := ceilDiv(time.Duration(q.Duration)*time.Second, slot)
		used := min(max(ceilDiv(q.End().Sub(*q.StartAt), slot), 0), dur)
		passed := min(max(int64(now.Sub(*q.StartAt)/slot), 0), used)
		if final {
			passed = used
		}
		d, _ := mulDiv(int64(q.Charge), passed, dur)
		e, _ := mulDiv(int64(q.Charge), used, dur)
		due, expected = due+ledger.Money(d), expected+ledger.Money(e)
		if now.Before(q.End()) {
			done = false
		}
	}
	return due, expected, done || final
}

// settleCharges captures what a reservation has earned by now and releases what it
// will never earn, inside tx; final settles it whole (it was cancelled or failed).
// It returns whether every request has ended. Each part has its own idempotency
// key, made of the running totals, so a repeat changes nothing.
func (s *Reservations) settleCharges(ctx context.Context, tx *gorm.DB, v *ReservationView, now time.Time, final bool) (bool, error) {
	due, expected, done := s.earned(*v, now, final)
	capture := max(due-v.Captured, 0)
	release := max(v.Price-expected-v.Released, 0)
	if v.HoldID == nil || capture+release == 0 {
		return done, nil
	}
	key := fmt.Sprintf("reservation/%d/hold/%d/part/%d/%d", v.ID, *v.HoldID, v.Captured+capture, v.Released+release)
	if _, err := s.ledger.WithTx(tx).SettleHoldPart(ctx, key, *v.HoldID, capture, release, ledger.Treasury,
		ledger.ReasonReservation, fmt.Sprintf("reservation:%d", v.ID)); err != nil {
		return false, fmt.Errorf("reservation %d: charge: %w", v.ID, err)
	}
	v.Captured += capture
	v.Released += release
	return done, tx.Model(&Reservation{}).Where("id = ?", v.ID).
		Updates(map[string]any{"captured": v.Captured, "released": v.Released, "updated_at": now}).Error
}

// endRequests marks every request of v that has not ended by the cut as ended
// there (requests that had not started end at their start: they use nothing).
func endRequests(tx *gorm.DB, v *ReservationView, cut time.Time) error {
	for i := range v.Requests {
		q := &v.Requests[i]
		if q.StartAt == nil || !cut.Before(q.End()) {
			continue
		}
		at := cut
		if at.Before(*q.StartAt) {
			at = *q.StartAt
		}
		q.EndedAt = &at
		if err := tx.Model(&ReservationRequest{}).Where("reservation_id = ? AND idx = ?", v.ID, q.Idx).Update("ended_at", at).Error; err != nil {
			return err
		}
	}
	return nil
}

// finish ends a reservation with status (cancelled, failed) at the next slot
// boundary after now: running requests are charged up to it, the rest of the hold
// is released.
func (s *Reservations) finish(ctx context.Context, tx *gorm.DB, v *ReservationView, now time.Time, status ReservationStatus, note string) error {
	if err := endRequests(tx, v, ceilTime(now, s.cfg.Slot)); err != nil {
		return err
	}
	if _, err := s.settleCharges(ctx, tx, v, now, true); err != nil {
		return err
	}
	v.Status, v.Note = status, note
	s.observeUse(*v)
	return tx.Model(&Reservation{}).Where("id = ?", v.ID).
		Updates(map[string]any{"status": status, "note": note, "updated_at": now}).Error
}
