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
	// MayStartNow is set on a waiting request that the plan can run from now
	// for its whole duration (ERA's "empty allocation" extension in Rayon): the
	// cluster may start it now and report the start in Update.Starts, which
	// moves it and frees its planned slots. The requests so marked in one
	// allocation fit together.
	MayStartNow bool
	// Beyond is, for a running request, the units of each pool it takes now from the
	// pool's shared capacity: its units (overhead included) less what its owner's
	// quota gives it in this slot. A request that fits in its owner's free quota has
	// none; a pool it takes nothing beyond quota from is left out.
	Beyond Config
}

// Allocation is what each job should be getting in one slot: the jobs planned to
// run now, and the jobs inside their window with nothing planned now, which the
// cluster may start early when they are marked MayStartNow.
type Allocation struct {
	Now     Slot
	Running []Assignment
	Waiting []Assignment
}

// CurrentAllocation is the plan for slot now. It does not change the plan.
func (e *Engine) CurrentAllocation(now Slot) Allocation {
	a := Allocation{Now: now}
	for _, r := range e.res {
		for i, q := range r.Requests {
			s := Assignment{Reservation: r.ID, Request: i, Config: q.Config, Start: r.Starts[i], End: r.End(i),
				Arrival: q.Arrival, Deadline: q.Deadline}
			switch {
			case s.Start <= now && now < s.End:
				s.Units = q.Count
				q.eachPool(func(p string, need int64) {
					if b := need - r.own(i, p, now); b > 0 {
						if s.Beyond == nil {
							s.Beyond = Config{}
						}
						s.Beyond[p] = b
					}
				})
				a.Running = append(a.Running, s)
			case q.Arrival <= now && now < s.Start && s.Start < s.End:
				a.Waiting = append(a.Waiting, s)
			}
		}
	}
	order := func(x, y Assignment) int {
		return cmp.Or(cmp.Compare(x.Reservation, y.Reservation), cmp.Compare(x.Request, y.Request))
	}
	slices.SortFunc(a.Running, order)
	slices.SortFunc(a.Waiting, order)
	e.markMayStartNow(now, a.Waiting)
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

// JobStart reports that the cluster started a waiting request early, at slot
// At (at or after its arrival, before its planned start), as an allocation's
// MayStartNow allowed.
type JobStart struct {
	Reservation int64
	Request     int
	At          Slot
}

// Usage is what a running request used of one pool in the current slot, in
// units. Units below what the plan holds for it there are returned to the plan
// for the current slot at once (the rest of its run keeps its reservation: a
// job that uses little now may need all of it later); reporting the same slot
// again replaces the earlier report. What a request did not use is told to
// learners when it leaves the plan (Use; Reservation.Unused).
type Usage struct {
	Reservation int64
	Request     int
	Pool        string
	Units       int64
}

// Update is what a cluster reports: capacity changes, job ends, early starts
// and usage.
type Update struct {
	Capacity []CapacityChange
	Ends     []JobEnd
	Starts   []JobStart
	Usage    []Usage
}

// Move is a reservation re-planned to new starts inside its windows.
type Move struct {
	Reservation int64
	From, To    []Slot
}

// Report is what an update did to the plan: reservations moved inside their
// windows, reservations that can no longer be honoured (removed from the plan
// and listed here, never dropped silently), and early starts that no longer
// fit the plan (the request keeps its planned start; the cluster should stop it).
type Report struct {
	Moved   []Move
	AtRisk  []Reservation
	Usage   []Usage
	Refused []JobStart
}

// Update applies a cluster's report, in this order: job ends and usage return
// capacity at once, early starts move their requests to now (those that no
// longer fit are refused in the report), and capacity changes apply. When
// capacity falls below what was promised, reservations that have not started
// are re-planned inside their windows, in the order they were accepted (never
// by value: see replan); those that cannot be placed anywhere, and running
// ones the capacity no longer covers, are reported at risk and their value
// recorded as lost (LostValue). A bad update (EINVALID or ENOTFOUND, naming the
// field) changes nothing.
func (e *Engine) Update(now Slot, u Update) (Report, error) {
	if err := e.checkUpdate(now, u); err != nil {
		return Report{}, err
	}
	rep := Report{Usage: u.Usage}
	for _, j := range u.Ends {
		r := e.res[j.Reservation]
		at := max(j.At, r.Starts[j.Request])
		if r.Ended == nil {
			r.Ended = slices.Repeat([]Slot{-1}, len(r.Requests))
		}
		if end := r.End(j.Request); at >= end {
			// Nothing left to release (it ended in its last slot), but it is over
			// all the same: a re-planning must not move it to a later slot, as
			// it would a request that started in the current slot.
			r.Ended[j.Request] = end
			continue
		}
		e.reclaim(r, j.Request, at)
		e.applyRequest(r, j.Request, at, 1)
		r.Ended[j.Request] = at
	}
	for _, us := range u.Usage {
		e.underuse(now, us)
	}
	for _, st := range u.Starts {
		if !e.startEarly(st) {
			rep.Refused = append(rep.Refused, st)
		}
	}
	for _, c := range u.Capacity {
		e.setCapacity(c)
	}
	rep.Moved, rep.AtRisk = e.replan(now)
	return rep, nil
}

// checkUpdate returns the first error in u, naming the field.
func (e *Engine) checkUpdate(now Slot, u Update) error {
	for _, c := range u.Capacity {
		if _, ok := e.capacity[c.Pool]; !ok {
			return clearhouse.Errorf(clearhouse.EINVALID, "capacity: no pool %q", c.Pool)
		}
		to := c.To
		if to == 0 {
			to = e.horizon
		}
		if c.Units < 0 || c.From < 0 || to > e.horizon || c.From >= to {
			return clearhouse.Errorf(clearhouse.EINVALID, "capacity: %s needs units >= 0 over a range of slots inside the horizon", c.Pool)
		}
	}
	request := func(field string, id int64, i int) (*Reservation, error) {
		r, ok := e.res[id]
		if !ok {
			return nil, clearhouse.Errorf(clearhouse.ENOTFOUND, "%s: no reservation %d", field, id)
		}
		if i < 0 || i >= len(r.Requests) {
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "%s: reservation %d has no request %d", field, id, i)
		}
		return r, nil
	}
	for _, j := range u.Ends {
		if _, err := request("ends", j.Reservation, j.Request); err != nil {
			return err
		}
	}
	for _, us := range u.Usage {
		if _, err := request("usage", us.Reservation, us.Request); err != nil {
			return err
		}
		if us.Units < 0 {
			return clearhouse.Errorf(clearhouse.EINVALID, "usage: reservation %d: units must not be negative", us.Reservation)
		}
	}
	for _, st := range u.Starts {
		r, err := request("starts", st.Reservation, st.Request)
		if err != nil {
			return err
		}
		if err := e.checkStart(now, r, st, u.Ends); err != nil {
			return err
		}
	}
	return nil
}

// setCapacity applies a capacity change slot run by slot run: capacity may
// differ along the range.
func (e *Engine) setCapacity(c CapacityChange) {
	to := c.To
	if to == 0 {
		to = e.horizon
	}
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
