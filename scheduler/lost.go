package scheduler

import (
	"cmp"
	"slices"
)

// Why a bid's value was lost.
const (
	// LostNoRoom: the bid was refused because it could not be placed.
	LostNoRoom = "no-room"
	// LostPricedOut: the bid could be placed, but its value was below the
	// price, which reflects the value of the demand it would displace.
	LostPricedOut = "priced-out"
	// LostNotHonoured: an accepted reservation could not be honoured after
	// capacity was lost (reported at risk by Update or SetQuota).
	LostNotHonoured = "not-honoured"
)

// Lost is value the pool's capacity could not serve (ERA section 2.1): the
// money the company would gain from more capacity. A bid's value is split
// between its pools in proportion to the unit-slots its requests take of each
// (overhead included; an ANY bid: the request priced lowest, or its first when
// none could be placed), at the slot each request would have started: its
// earliest start from the decision for a refused bid, its planned start for a
// reservation that could not be honoured.
type Lost struct {
	Reservation int64 // the reservation, or the refused bid's id (0 when it had none)
	Owner       string
	Pool        string
	Slot        Slot
	Value       float64
	Reason      string // LostNoRoom, LostPricedOut or LostNotHonoured
}

// LostDay is the lost value of one pool on one day, by reason.
type LostDay struct {
	Pool        string
	Day         int
	NoRoom      float64
	PricedOut   float64
	NotHonoured float64
}

// LostValue lists the value lost since the engine started or since the last
// TakeLostValue, in the order it was lost.
func (e *Engine) LostValue() []Lost { return slices.Clone(e.lost) }

// TakeLostValue returns LostValue and forgets it: a server stores what it takes.
func (e *Engine) TakeLostValue() []Lost {
	out := e.lost
	e.lost = nil
	return out
}

// LostByDay sums lost value per pool and day (slot / slotsPerDay, from the
// engine's slot 0), ordered by pool, then day.
func LostByDay(lost []Lost, slotsPerDay int) []LostDay {
	slotsPerDay = max(slotsPerDay, 1)
	type key struct {
		pool string
		day  int
	}
	sums := map[key]*LostDay{}
	for _, l := range lost {
		day := int(l.Slot) / slotsPerDay
		if l.Slot < 0 {
			day = (int(l.Slot) - slotsPerDay + 1) / slotsPerDay
		}
		k := key{l.Pool, day}
		d := sums[k]
		if d == nil {
			d = &LostDay{Pool: l.Pool, Day: day}
			sums[k] = d
		}
		switch l.Reason {
		case LostNoRoom:
			d.NoRoom += l.Value
		case LostPricedOut:
			d.PricedOut += l.Value
		default:
			d.NotHonoured += l.Value
		}
	}
	out := make([]LostDay, 0, len(sums))
	for _, d := range sums {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b LostDay) int { return cmp.Or(cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.Day, b.Day)) })
	return out
}

// refused records a refused bid's value: no room when it could not be placed,
// priced out when it could.
func (e *Engine) refused(now Slot, bid Bid, reqs []Request, placeable bool) {
	reason := LostNoRoom
	if placeable {
		reason = LostPricedOut
	}
	starts := make([]Slot, len(reqs))
	for i, r := range reqs {
		starts[i] = max(r.Arrival, now)
	}
	e.loseValue(bid.ID, bid.Owner, reqs, starts, bid.Value, reason)
}

// loseValue splits value between the requests' pools by unit-slots.
func (e *Engine) loseValue(id int64, owner string, reqs []Request, starts []Slot, value float64, reason string) {
	total := 0.0
	for _, r := range reqs {
		total += float64(units(r)) * float64(r.Duration)
	}
	if total <= 0 {
		return
	}
	for i, r := range reqs {
		for _, p := range r.pools() {
			share := float64(r.Units(p)) * float64(r.Duration) / total
			e.lost = append(e.lost, Lost{Reservation: id, Owner: owner, Pool: p, Slot: starts[i], Value: value * share, Reason: reason})
		}
	}
}
