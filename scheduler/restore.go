package scheduler

import (
	"slices"

	"github.com/clearhouse/clearhouse"
)

// Restore puts back a reservation made earlier (read from storage at start),
// without pricing it again. It is ECONFLICT when the reservation no longer fits.
func (e *Engine) Restore(r Reservation) error {
	_, err := e.restore(0, r, false)
	return err
}

// RestoreAt is Restore at slot now, but a reservation that no longer fits at its
// stored starts is re-placed as re-planning does (requests that started before now,
// or ended, keep their start; the others take the earliest feasible start from now
// inside their windows). moved reports whether any start changed (read the new
// starts with Reservation(id)). ECONFLICT, changing nothing, when it cannot be placed.
// Like Restore it is EINVALID for a bad id or request and ECONFLICT for an id in use,
// and it does not price the reservation again.
func (e *Engine) RestoreAt(now Slot, r Reservation) (moved bool, err error) {
	return e.restore(now, r, true)
}

// restore checks r and commits a copy of it at its stored starts or, when move is
// set and they no longer fit, where replace puts it from now. It reports whether a
// start changed; on an error the plan is unchanged.
func (e *Engine) restore(now Slot, r Reservation, move bool) (bool, error) {
	if r.ID <= 0 {
		return false, clearhouse.Errorf(clearhouse.EINVALID, "id: must be positive")
	}
	if _, taken := e.res[r.ID]; taken {
		return false, clearhouse.Errorf(clearhouse.ECONFLICT, "id: reservation %d exists", r.ID)
	}
	for i, q := range r.Requests {
		// Windows are checked from slot 0: a request that keeps its start may have
		// started, or ended, before now.
		if err := e.validate(0, i, q); err != nil {
			return false, err
		}
	}
	if err := r.Language.Validate(); err != nil {
		return false, err
	}
	c := r
	c.Requests, c.Starts, c.Ended, c.Unused = cloneRequests(r.Requests), slices.Clone(r.Starts), slices.Clone(r.Ended), slices.Clone(r.Unused)
	c.released = nil
	if len(c.Starts) != len(c.Requests) || (c.Ended != nil && len(c.Ended) != len(c.Requests)) || (c.Unused != nil && len(c.Unused) != len(c.Requests)) {
		return false, clearhouse.Errorf(clearhouse.EINVALID, "starts: one per request (and ended and unused, when given)")
	}
	if !keepsLanguage(&c) {
		return false, clearhouse.Errorf(clearhouse.EINVALID, "starts: each must lie in its request's window (from its arrival) and keep the bid's language %s", c.Language.or())
	}
	var placed bool
	if move {
		placed = e.replace(&c, now)
	} else {
		placed = e.place(&c)
	}
	if !placed {
		return false, clearhouse.Errorf(clearhouse.ECONFLICT, "reservation %d: does not fit in the plan", r.ID)
	}
	e.res[c.ID] = &c
	e.next = max(e.next, c.ID)
	return !slices.Equal(c.Starts, r.Starts), nil
}
