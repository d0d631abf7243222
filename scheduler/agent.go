package scheduler

import (
	"cmp"
	"slices"

	"github.com/clearhouse/clearhouse"
)

// Agent is the interface between the scheduler and a cluster: the cluster asks
// what to run in the current slot and reports what changed. The Engine implements
// it; the simulator and the HTTP agent API drive exactly this interface.
type Agent interface {
	CurrentAllocation(now Slot) Allocation
	Update(now Slot, u Update) (Report, error)
}

var _ Agent = (*Engine)(nil)

// Assignment is one request of a reservation as the cluster should see it.
type Assignment struct {
	Reservation int64
	Request     int
	Config      Config
	Units       int64 // of Config the job should have now (0 while it waits)
	Start, End  Slot  // the slots it is planned to run
	Arrival     Slot  // it may run early from here, when the cluster has room
	Deadline    Slot
}

// Allocation is what each job should be getting in one slot: the jobs planned to
// run now, and the jobs inside their window with nothing planned now, which the
// cluster may start early when it has room.
type Allocation struct {
	Now     Slot
	Running []Assignment
	Waiting []Assignment
}

// CurrentAllocation is the plan for slot now.
func (e *Engine) CurrentAllocation(now Slot) Allocation {
	a := Allocation{Now: now}
	for _, r := range e.res {
		for i, q := range r.Requests {
			s := Assignment{Reservation: r.ID, Request: i, Config: q.Config, Start: r.Starts[i], End: r.End(i),
				Arrival: q.Arrival, Deadline: q.Deadline}
			switch {
			case s.Start <= now && now < s.End:
				s.Units = q.Count
				a.Running = append(a.Running, s)
			case q.Arrival <= now && now < s.Start:
				a.Waiting = append(a.Waiting, s)
			}
		}
	}
	order := func(x, y Assignment) int {
		return cmp.Or(cmp.Compare(x.Reservation, y.Reservation), cmp.Compare(x.Request, y.Request))
	}
	slices.SortFunc(a.Running, order)
	slices.SortFunc(a.Waiting, order)
	return a
}

// CapacityChange sets a pool's capacity to Units over [From, To); To 0 means to
// the end of the horizon.
type CapacityChange struct {
	Pool     string
	From, To Slot
	Units    int64
}

// JobEnd reports that a request stopped using its capacity at slot At (it
// finished early, or failed and will not run again).
type JobEnd struct {
	Reservation int64
	Request     int
	At          Slot
}

// Usage is what a running request used in the current slot, in units of its pool.
type Usage struct {
	Reservation int64
	Request     int
	Pool        string
	Units       int64
}

// Update is what a cluster reports: capacity changes, job ends and usage.
type Update struct {
	Capacity []CapacityChange
	Ends     []JobEnd
	Usage    []Usage
}

// Move is a reservation re-planned to new starts inside its windows.
type Move struct {
	Reservation int64
	From, To    []Slot
}

// Report is what an update did to the plan: reservations moved inside their
// windows, and reservations that can no longer be honoured (removed from the plan
// and listed here, never dropped silently).
type Report struct {
	Moved  []Move
	AtRisk []Reservation
	Usage  []Usage
}

// Update applies a cluster's report. When capacity falls below what was promised,
// reservations that have not started are re-planned inside their windows; those
// that cannot be placed anywhere, and running ones the capacity no longer covers,
// are reported at risk. Re-planning keeps every reservation it can: a reservation
// reported at risk does not fit in the plan that remains. A bad update changes
// nothing.
func (e *Engine) Update(now Slot, u Update) (Report, error) {
	for _, c := range u.Capacity {
		if _, ok := e.capacity[c.Pool]; !ok {
			return Report{}, clearhouse.Errorf(clearhouse.EINVALID, "capacity: no pool %q", c.Pool)
		}
		to := c.To
		if to == 0 {
			to = e.horizon
		}
		if c.Units < 0 || c.From < 0 || to > e.horizon || c.From >= to {
			return Report{}, clearhouse.Errorf(clearhouse.EINVALID, "capacity: %s needs units >= 0 over a range of slots inside the horizon", c.Pool)
		}
	}
	for _, j := range u.Ends {
		r, ok := e.res[j.Reservation]
		if !ok {
			return Report{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "ends: no reservation %d", j.Reservation)
		}
		if j.Request < 0 || j.Request >= len(r.Requests) {
			return Report{}, clearhouse.Errorf(clearhouse.EINVALID, "ends: reservation %d has no request %d", j.Reservation, j.Request)
		}
	}
	for _, us := range u.Usage {
		if _, ok := e.res[us.Reservation]; !ok || us.Units < 0 {
			return Report{}, clearhouse.Errorf(clearhouse.EINVALID, "usage: no reservation %d, or negative units", us.Reservation)
		}
	}

	rep := Report{Usage: u.Usage}
	for _, j := range u.Ends {
		r := e.res[j.Reservation]
		at := max(j.At, r.Starts[j.Request])
		if at >= r.End(j.Request) {
			continue
		}
		e.applyRequest(r, j.Request, at, 1)
		if r.Ended == nil {
			r.Ended = slices.Repeat([]Slot{-1}, len(r.Requests))
		}
		r.Ended[j.Request] = at
	}
	for _, c := range u.Capacity {
		to := c.To
		if to == 0 {
			to = e.horizon
		}
		// Apply the change slot run by slot run: capacity may differ along the range.
		caps := e.capacity[c.Pool].values(int(c.From), int(to), nil)
		for k := 0; k < len(caps); {
			j := k
			for j < len(caps) && caps[j] == caps[k] {
				j++
			}
			d := c.Units - caps[k]
			e.capacity[c.Pool].add(int(c.From)+k, int(c.From)+j, d)
			e.free[c.Pool].add(int(c.From)+k, int(c.From)+j, d)
			k = j
		}
	}
	rep.Moved, rep.AtRisk = e.replan(now)
	return rep, nil
}

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
		if _, ok := q.Config[pool]; !ok {
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
// overbooked slot are lifted out of the plan; they are put back, most valuable
// first, at their old starts when they fit, else at the earliest starts inside
// their windows (requests already running stay where they are). Whatever cannot
// be put back is at risk. The plan only grows while reservations are put back, so
// one that did not fit when its turn came does not fit the final plan either:
// none is dropped that the final plan could hold.
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
		e.apply(r, 0, 1)
		delete(e.res, r.ID)
	}
	slices.SortFunc(lifted, func(a, b *Reservation) int {
		return cmp.Or(cmp.Compare(b.Value, a.Value), cmp.Compare(a.ID, b.ID))
	})
	var moved []Move
	var risk []*Reservation
	place := func(r *Reservation) bool {
		old := slices.Clone(r.Starts)
		if !e.replace(r, now) {
			return false
		}
		if !slices.Equal(old, r.Starts) {
			moved = append(moved, Move{Reservation: r.ID, From: old, To: slices.Clone(r.Starts)})
		}
		e.res[r.ID] = r
		return true
	}
	for _, r := range lifted {
		if !place(r) {
			risk = append(risk, r)
		}
	}
	out := make([]Reservation, len(risk))
	for i, r := range risk {
		out[i] = *r
	}
	slices.SortFunc(out, func(a, b Reservation) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(moved, func(a, b Move) int { return cmp.Compare(a.Reservation, b.Reservation) })
	return moved, out
}

// replace commits a lifted reservation on top of the current plan: requests
// that have started keep their start; the others keep theirs when it fits, else
// take the earliest feasible start from now inside their window. It changes
// nothing and returns false when the reservation cannot be placed.
func (e *Engine) replace(r *Reservation, now Slot) bool {
	if e.place(r) {
		return true
	}
	old := slices.Clone(r.Starts)
	for i, q := range r.Requests {
		if r.Starts[i] < now || (r.Ended != nil && r.Ended[i] >= 0) {
			continue // running, or ended: it cannot move
		}
		s, ok := earliest(e, r.Owner, q, now)
		if !ok {
			r.Starts = old
			return false
		}
		r.Starts[i] = s
	}
	if !e.place(r) {
		r.Starts = old
		return false
	}
	return true
}

// SetQuota sets owner's quota of pool to units over [from, to) (to 0: the end of
// the horizon). The quota is taken from (or returned to) the pool's shared
// capacity; shared reservations that no longer fit are re-planned, and those
// that cannot be are reported at risk. It is ECONFLICT, changing nothing, to lower
// a quota below what the owner's reservations already take from it.
func (e *Engine) SetQuota(now Slot, owner, pool string, from, to Slot, units int64) (Report, error) {
	if owner == "" {
		return Report{}, clearhouse.Errorf(clearhouse.EINVALID, "owner: required")
	}
	if _, ok := e.capacity[pool]; !ok {
		return Report{}, clearhouse.Errorf(clearhouse.EINVALID, "pool: no pool %q", pool)
	}
	if to == 0 {
		to = e.horizon
	}
	if units < 0 || from < 0 || to > e.horizon || from >= to {
		return Report{}, clearhouse.Errorf(clearhouse.EINVALID, "quota: units >= 0 over a range of slots inside the horizon")
	}
	if e.quota[owner] == nil {
		e.quota[owner], e.ownFree[owner] = map[string]*tree{}, map[string]*tree{}
	}
	if e.quota[owner][pool] == nil {
		e.quota[owner][pool], e.ownFree[owner][pool] = newTree(int(e.horizon), 0), newTree(int(e.horizon), 0)
	}
	quota, own := e.quota[owner][pool], e.ownFree[owner][pool]
	cur, free := quota.values(int(from), int(to), nil), own.values(int(from), int(to), nil)
	room := e.capacity[pool].values(int(from), int(to), nil) // capacity not held by other owners
	for o, q := range e.quota {
		if t := q[pool]; t != nil && o != owner {
			for k, v := range t.values(int(from), int(to), nil) {
				room[k] -= v
			}
		}
	}
	for k := range cur {
		if used := cur[k] - free[k]; units < used {
			return Report{}, clearhouse.Errorf(clearhouse.ECONFLICT, "quota: %s's reservations use %d units of %s at slot %d", owner, used, pool, from+Slot(k))
		}
		if units > room[k] {
			return Report{}, clearhouse.Errorf(clearhouse.ECONFLICT, "quota: only %d units of %s are not held by others at slot %d", room[k], pool, from+Slot(k))
		}
	}
	for k := 0; k < len(cur); {
		j := k
		for j < len(cur) && cur[j] == cur[k] {
			j++
		}
		if d := units - cur[k]; d != 0 {
			quota.add(int(from)+k, int(from)+j, d)
			own.add(int(from)+k, int(from)+j, d)
			e.free[pool].add(int(from)+k, int(from)+j, -d)
		}
		k = j
	}
	var rep Report
	rep.Moved, rep.AtRisk = e.replan(now)
	return rep, nil
}

// QuotaInUse is the most units of owner's quota of pool that its reservations take
// in any slot of [from, to): the part of the quota it cannot sell.
func (e *Engine) QuotaInUse(owner, pool string, from, to Slot) int64 {
	quota := e.quota[owner][pool]
	from, to = max(from, 0), min(to, e.horizon)
	if quota == nil || from >= to {
		return 0
	}
	var most int64
	free := e.ownFree[owner][pool].values(int(from), int(to), nil)
	for k, q := range quota.values(int(from), int(to), nil) {
		most = max(most, q-free[k])
	}
	return most
}
