package fleet

import (
	"fmt"
	"time"
)

// EndNote is the server's answer about one reported end it did not apply: when the
// request ended by the record (At; for a refused end, the end reported) and why the
// report changed nothing of it.
type EndNote struct {
	Reservation int64
	Request     int
	At          time.Time
	Reason      string
}

// endOnRecord is when request q of v ended by the record, and whether it has: its
// recorded end (an agent's early end, or the cut of a cancel or failure), else its
// planned end once the reservation is over.
func endOnRecord(v ReservationView, q ReservationRequest) (time.Time, bool) {
	if q.EndedAt != nil {
		return *q.EndedAt, true
	}
	switch v.Status {
	case ReservationDone, ReservationCancelled, ReservationFailed:
		if q.StartAt == nil {
			return v.UpdatedAt, true
		}
		return q.End(), true
	}
	return time.Time{}, false
}

// judgeEnd says what to do with an agent's end of request e.Request of v, given the
// ends earlier rows of the same report applied (taken): apply it (ok), or answer it
// with a note and change nothing. Already ended: the report was sent again, or the
// end comes at or after the end on record (or the planned end): the request is over.
// Refused: the end contradicts the record: the request never ran, or the end is
// earlier than the one on record, whose slots are charged (out of order). An end
// before the request's planned start counts from the start, as applying it does.
// Times are compared to the second (the databases keep less than Go's nanoseconds).
func judgeEnd(v ReservationView, e EndReport, taken map[JobRef]time.Time) (ok bool, already, refused *EndNote) {
	q := v.Requests[e.Request]
	note := func(at time.Time, format string, args ...any) *EndNote {
		return &EndNote{Reservation: v.ID, Request: e.Request, At: at.UTC(), Reason: fmt.Sprintf(format, args...)}
	}
	if v.Status == ReservationNew || v.Status == ReservationRejected || (v.Status == ReservationAccepted && q.StartAt == nil) {
		return false, nil, note(e.At, "reservation %d request %d never ran (the reservation is %s and the request has no planned start): it has no end to report", v.ID, e.Request, v.Status)
	}
	at := e.At.UTC()
	if q.StartAt != nil && at.Before(*q.StartAt) {
		at = *q.StartAt
	}
	end, over := endOnRecord(v, q)
	if t, ok := taken[JobRef{v.ID, e.Request}]; ok && (!over || t.Before(end)) {
		end, over = t, true
	}
	if !over && !at.Before(q.End()) {
		end, over = q.End(), true // at or after its planned end: it ran to the end
	}
	if !over {
		return true, nil, nil
	}
	if at.Truncate(time.Second).Before(end.Truncate(time.Second)) {
		return false, nil, note(e.At, "reservation %d request %d already ended at %s; an end at the earlier %s is out of order and cannot move it back (its slots up to then are charged)",
			v.ID, e.Request, end.UTC().Format(time.RFC3339), at.Format(time.RFC3339))
	}
	return false, note(end, "already ended at %s", end.UTC().Format(time.RFC3339)), nil
}
