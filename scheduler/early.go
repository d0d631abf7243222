package scheduler

import (
	"maps"

	"github.com/clearhouse/clearhouse"
)

// releaseKey names the units a running request returned to the plan in one
// slot of one pool because it did not use them (Usage).
type releaseKey struct {
	request int
	pool    string
	slot    Slot
}

// release is how many of those units went back to shared capacity and how
// many to the owner's quota.
type release struct{ shared, own int64 }

// mayStartEarly reports whether request i of r, waiting at now inside its
// window, may start now as far as its bid's language goes: never for
// ORDER_NO_GAP (the train moves as one), and for ORDER only once the request
// before it has ended.
func mayStartEarly(r *Reservation, i int, now Slot) bool {
	q := r.Requests[i]
	if (r.Ended != nil && r.Ended[i] >= 0) || q.Arrival > now || now >= r.Starts[i] {
		return false
	}
	switch r.Language.or() {
	case BidOrderNoGap:
		return false
	case BidOrder:
		return i == 0 || r.End(i-1) <= now
	}
	return true
}

// moveRequest moves request i of r to start at, keeping everything else; it
// returns false, changing nothing, when the request does not fit there.
func (e *Engine) moveRequest(r *Reservation, i int, at Slot) bool {
	old := r.Starts[i]
	var own map[string][]int64
	if r.Own != nil {
		own = maps.Clone(r.Own[i])
	}
	e.applyRequest(r, i, old, 1)
	r.Starts[i] = at
	if e.placeRequest(r, i) {
		return true
	}
	r.Starts[i] = old
	if r.Own != nil {
		r.Own[i] = own
	}
	e.applyRequest(r, i, old, -1)
	return false
}

// markMayStartNow marks the waiting requests that can start now, one after
// another in the order given, each tried on the plan with the ones before it
// moved to now, so that all those marked fit together. The plan is left as it
// was.
func (e *Engine) markMayStartNow(now Slot, waiting []Assignment) {
	type moved struct {
		r   *Reservation
		i   int
		old Slot
		own map[string][]int64
	}
	var done []moved
	for k := range waiting {
		a := &waiting[k]
		r := e.res[a.Reservation]
		if !mayStartEarly(r, a.Request, now) {
			continue
		}
		m := moved{r: r, i: a.Request, old: r.Starts[a.Request]}
		if r.Own != nil {
			m.own = maps.Clone(r.Own[a.Request])
		}
		if e.moveRequest(r, a.Request, now) {
			a.MayStartNow = true
			done = append(done, m)
		}
	}
	for k := len(done) - 1; k >= 0; k-- {
		m := done[k]
		e.applyRequest(m.r, m.i, now, 1)
		m.r.Starts[m.i] = m.old
		if m.r.Own != nil {
			m.r.Own[m.i] = m.own
		}
		e.applyRequest(m.r, m.i, m.old, -1)
	}
}

// checkStart returns EINVALID, naming the field, for an early start the
// reservation's language or window does not allow; ends are the job ends
// reported with it.
func (e *Engine) checkStart(now Slot, r *Reservation, st JobStart, ends []JobEnd) error {
	q := r.Requests[st.Request]
	bad := func(rule string) error {
		return clearhouse.Errorf(clearhouse.EINVALID, "starts: reservation %d request %d %s", st.Reservation, st.Request, rule)
	}
	switch {
	case st.At > now:
		return bad("cannot start after now")
	case st.At < q.Arrival:
		return bad("cannot start before its arrival")
	case st.At >= r.Starts[st.Request]:
		return nil // not early: nothing to move
	case r.Ended != nil && r.Ended[st.Request] >= 0:
		return bad("has ended")
	case r.Language.or() == BidOrderNoGap:
		return bad("is part of an ORDER_NO_GAP train, which cannot start early")
	}
	if r.Language.or() == BidOrder && st.Request > 0 {
		prevEnd := r.End(st.Request - 1)
		for _, j := range ends {
			if j.Reservation == st.Reservation && j.Request == st.Request-1 {
				prevEnd = min(prevEnd, max(j.At, r.Starts[st.Request-1]))
			}
		}
		if prevEnd > st.At {
			return bad("cannot start before the request before it ends (ORDER)")
		}
	}
	return nil
}

// startEarly moves a request the cluster started early; false when it does
// not fit the plan from its start.
func (e *Engine) startEarly(st JobStart) bool {
	r := e.res[st.Reservation]
	if st.At >= r.Starts[st.Request] {
		return true
	}
	return e.moveRequest(r, st.Request, st.At)
}

// underuse returns to the plan, for slot now, the units of a running request's
// pool it reported it did not use, replacing an earlier report for the same
// slot; units first go back to shared capacity, the rest to the owner's quota.
func (e *Engine) underuse(now Slot, us Usage) {
	r, i := e.res[us.Reservation], us.Request
	q := r.Requests[i]
	need := q.Units(us.Pool)
	if need == 0 || r.Starts[i] > now || now >= r.End(i) {
		return
	}
	if r.released == nil {
		r.released = map[releaseKey]release{}
	}
	for k := range r.released {
		if k.slot < now {
			delete(r.released, k) // past slots: nothing to take back
		}
	}
	key := releaseKey{i, us.Pool, now}
	prev := r.released[key]
	want := max(need-us.Units, 0)
	next := release{shared: min(want, need-r.own(i, us.Pool, now))}
	next.own = want - next.shared
	e.free[us.Pool].add(int(now), int(now)+1, next.shared-prev.shared)
	if d := next.own - prev.own; d != 0 {
		e.ownFree[r.Owner][us.Pool].add(int(now), int(now)+1, d)
	}
	r.released[key] = next
	if r.Unused == nil {
		r.Unused = make([]int64, len(r.Requests))
	}
	r.Unused[i] += next.shared + next.own - prev.shared - prev.own
}

// reclaim takes back into request i's commitment the units it returned for
// slots from on, before its capacity from there is released: an end or a
// cancel then releases each unit once. Those slots no longer count as run, so
// their unused units are forgotten.
func (e *Engine) reclaim(r *Reservation, i int, from Slot) {
	for k, rel := range r.released {
		if k.request != i || k.slot < from {
			continue
		}
		e.free[k.pool].add(int(k.slot), int(k.slot)+1, -rel.shared)
		if rel.own != 0 {
			e.ownFree[r.Owner][k.pool].add(int(k.slot), int(k.slot)+1, -rel.own)
		}
		r.Unused[i] -= rel.shared + rel.own
		delete(r.released, k)
	}
}

// reclaimAll takes back every unit r returned, before r is lifted out of the
// plan; what it did not use stays counted.
func (e *Engine) reclaimAll(r *Reservation) {
	for k, rel := range r.released {
		e.free[k.pool].add(int(k.slot), int(k.slot)+1, -rel.shared)
		if rel.own != 0 {
			e.ownFree[r.Owner][k.pool].add(int(k.slot), int(k.slot)+1, -rel.own)
		}
		delete(r.released, k)
	}
}
