package scheduler

// place splits each request of r, slot by slot, between the owner's free quota
// (first) and shared capacity, and commits it. When shared capacity falls short it
// commits nothing and returns false.
func (e *Engine) place(r *Reservation) bool {
	e.resetOwn(r)
	for i := range r.Requests {
		if !e.placeRequest(r, i) {
			e.undo(r, i)
			return false
		}
	}
	return true
}

// placeOver commits r at its starts whatever the capacity of the slots after
// each start: an over-committing offer (Offer.Overcommit). The owner's free
// quota is used first, as place does; the next Update re-plans the slots where
// commitments exceed capacity.
func (e *Engine) placeOver(r *Reservation) {
	e.resetOwn(r)
	for i := range r.Requests {
		if r.Starts[i] >= r.End(i) {
			continue
		}
		e.splitOwn(r, i)
		e.applyRequest(r, i, r.Starts[i], -1)
	}
}

// resetOwn clears r's split between the owner's quota and shared capacity,
// before r is placed again.
func (e *Engine) resetOwn(r *Reservation) {
	r.Own = nil
	if r.Owner != "" {
		r.Own = make([]map[string][]int64, len(r.Requests))
	}
}

// splitOwn sets, for request i of r at its start, the units each pool takes
// from the owner's free quota in each slot of its run (none without an owner),
// and returns them by pool.
func (e *Engine) splitOwn(r *Reservation, i int) map[string][]int64 {
	if r.Owner == "" {
		return nil
	}
	q := r.Requests[i]
	s, end := r.Starts[i], r.End(i)
	q.eachPool(func(p string, need int64) {
		own := e.Own(r.Owner, p, s, end, nil)
		for k, f := range own {
			own[k] = min(need, max(f, 0))
		}
		if r.Own[i] == nil {
			r.Own[i] = map[string][]int64{}
		}
		r.Own[i][p] = own
	})
	return r.Own[i]
}

// placeRequest splits request i of r at its start and commits it, or commits
// nothing and returns false when shared capacity falls short.
func (e *Engine) placeRequest(r *Reservation, i int) bool {
	q := r.Requests[i]
	s, end := r.Starts[i], r.End(i)
	if s < 0 || end > e.horizon {
		return false
	}
	if s >= end {
		return true
	}
	fits := true
	own := e.splitOwn(r, i)
	q.eachPool(func(p string, need int64) {
		if !fits {
			return
		}
		own := own[p]
		if own == nil {
			fits = e.Free(p, s, end) >= need
			return
		}
		for k, f := range e.FreeSlots(p, s, end, nil) {
			if f < need-own[k] {
				fits = false
				return
			}
		}
	})
	if !fits {
		return false
	}
	e.applyRequest(r, i, s, -1)
	return true
}

// undo releases the first n requests of r that place committed.
func (e *Engine) undo(r *Reservation, n int) {
	for i := range n {
		e.applyRequest(r, i, r.Starts[i], 1)
	}
}

// apply adds sign times r's units, from slot from on, to the free capacity they
// were taken from: -1 commits, +1 releases.
func (e *Engine) apply(r *Reservation, from Slot, sign int64) {
	for i := range r.Requests {
		e.applyRequest(r, i, from, sign)
	}
}

func (e *Engine) applyRequest(r *Reservation, i int, from Slot, sign int64) {
	q := r.Requests[i]
	lo, hi := max(r.Starts[i], from), r.End(i)
	q.eachPool(func(p string, need int64) {
		// Runs of slots with the same split, one range update each.
		for t := lo; t < hi; {
			o := r.own(i, p, t)
			end := t + 1
			for end < hi && r.own(i, p, end) == o {
				end++
			}
			if o > 0 {
				e.ownFree[r.Owner][p].add(int(t), int(end), sign*o)
			}
			if need-o > 0 {
				e.free[p].add(int(t), int(end), sign*(need-o))
			}
			t = end
		}
	})
}
