package scheduler

import (
	"cmp"
	"slices"
)

// overbooked lists the pools and slots from now on where commitments exceed
// capacity.
func (e *Engine) overbooked(now Slot) map[string][]Slot {
	out := map[string][]Slot{}
	for p, t := range e.free {
		if now >= e.horizon || t.minimum(int(now), int(e.horizon)) >= 0 {
			continue
		}
		for i, f := range t.values(int(now), int(e.horizon), nil) {
			if f < 0 {
				out[p] = append(out[p], now+Slot(i))
			}
		}
	}
	return out
}

// uses reports whether r holds units of a pool in any of the slots.
func uses(r *Reservation, pool string, slots []Slot) bool {
	for i, q := range r.Requests {
		if q.Units(pool) == 0 {
			continue
		}
		from, to := r.Starts[i], r.End(i)
		k, _ := slices.BinarySearch(slots, from)
		if k < len(slots) && slots[k] < to {
			return true
		}
	}
	return false
}

// replan restores capacity >= commitments from now on. Reservations touching an
// overbooked slot are lifted out of the plan; they are put back in the order
// they were accepted (by id: value-blind, so overstating a value never buys a
// better place in the queue), at their old starts when they fit, else at the
// earliest starts inside their windows that keep their language (requests
// already running stay where they are). Whatever cannot be put back is at risk,
// and its value is recorded as lost. The plan only grows while reservations are
// put back, so one that did not fit when its turn came does not fit the final
// plan either: none is dropped that the final plan could hold.
func (e *Engine) replan(now Slot) ([]Move, []Reservation) {
	over := e.overbooked(now)
	if len(over) == 0 {
		return nil, nil
	}
	var lifted []*Reservation
	for _, r := range e.res {
		for p, slots := range over {
			if uses(r, p, slots) {
				lifted = append(lifted, r)
				break
			}
		}
	}
	for _, r := range lifted {
		e.reclaimAll(r)
		e.apply(r, 0, 1)
		delete(e.res, r.ID)
	}
	slices.SortFunc(lifted, func(a, b *Reservation) int { return cmp.Compare(a.ID, b.ID) })
	var moved []Move
	var risk []Reservation
	for _, r := range lifted {
		old := slices.Clone(r.Starts)
		if !e.replace(r, now) {
			risk = append(risk, *r)
			starts := make([]Slot, len(r.Starts))
			for i, s := range r.Starts {
				starts[i] = max(s, now)
			}
			e.loseValue(r.ID, r.Owner, r.Requests, starts, r.Value, LostNotHonoured)
			continue
		}
		if !slices.Equal(old, r.Starts) {
			moved = append(moved, Move{Reservation: r.ID, From: old, To: slices.Clone(r.Starts)})
		}
		e.res[r.ID] = r
	}
	return moved, risk
}

// fixed reports whether request i of r can no longer move at now: it has
// started, or ended.
func fixed(r *Reservation, i int, now Slot) bool {
	return r.Starts[i] < now || (r.Ended != nil && r.Ended[i] >= 0)
}

// replace commits a lifted reservation on top of the current plan: requests
// that have started keep their start; the others keep theirs when it fits,
// else take the earliest feasible start from now inside their window that
// keeps the bid's language. It changes nothing and returns false when the
// reservation cannot be placed.
func (e *Engine) replace(r *Reservation, now Slot) bool {
	if e.place(r) {
		return true
	}
	old := slices.Clone(r.Starts)
	var ok bool
	if r.Language.or() == BidOrderNoGap {
		ok = e.replaceTrain(r, now)
	} else {
		ok = e.replaceEach(r, now)
	}
	if !ok {
		r.Starts = old
	}
	return ok
}

// replaceEach places r's requests one after another: fixed ones where they
// are, the others at their old start when it fits, else at their earliest
// feasible start from now (for ORDER, no earlier than the end of the request
// before and late enough for the ones after). It commits all or nothing.
func (e *Engine) replaceEach(r *Reservation, now Slot) bool {
	e.resetOwn(r)
	order := r.Language.or() == BidOrder
	latest := latestStarts(r.Requests)
	prevEnd := Slot(-1 << 30)
	for i, q := range r.Requests {
		if !fixed(r, i, now) {
			w := q
			if order {
				w = orderWindow(q, prevEnd, latest[i])
			}
			keep := r.Starts[i] >= max(w.Arrival, now) && r.Starts[i]+q.Duration <= w.Deadline
			if !keep || !e.placeRequest(r, i) {
				s, ok := earliest(e, r.Owner, w, now)
				if !ok {
					e.undo(r, i)
					return false
				}
				r.Starts[i] = s
			} else {
				prevEnd = r.End(i)
				continue
			}
		}
		if !e.placeRequest(r, i) {
			e.undo(r, i)
			return false
		}
		prevEnd = r.End(i)
	}
	return true
}

// replaceTrain moves an ORDER_NO_GAP reservation none of whose requests has
// started, as one train, to its earliest first start from now that fits.
func (e *Engine) replaceTrain(r *Reservation, now Slot) bool {
	for i := range r.Requests {
		if fixed(r, i, now) {
			return false
		}
	}
	lo, hi, off := trainStarts(r.Requests, now)
	for s := lo; s <= hi; s++ {
		for k := range r.Starts {
			r.Starts[k] = s + off[k]
		}
		if e.place(r) {
			return true
		}
	}
	return false
}
