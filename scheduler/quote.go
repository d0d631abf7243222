package scheduler

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/clearhouse/clearhouse"
)

// validate checks a request and returns EINVALID naming the field at fault.
func (e *Engine) validate(now Slot, i int, r Request) error {
	bad := func(field, format string, args ...any) error {
		return clearhouse.Errorf(clearhouse.EINVALID, "requests[%d].%s: %s", i, field, fmt.Sprintf(format, args...))
	}
	switch {
	case len(r.Config) == 0:
		return bad("configuration", "name at least one pool with units")
	case r.Count <= 0:
		return bad("count", "must be at least 1")
	case r.Duration <= 0:
		return bad("duration", "must be at least one slot")
	case r.Deadline <= r.Arrival:
		return bad("deadline", "must be after the arrival")
	case r.Deadline-r.Arrival < r.Duration:
		return bad("duration", "%d slots do not fit in the window of %d", r.Duration, r.Deadline-r.Arrival)
	case r.Arrival < 0 || r.Deadline > e.horizon:
		return bad("deadline", "the window must lie within the %d-slot horizon", e.horizon)
	case r.Deadline-r.Duration < now:
		return bad("deadline", "too late: the job cannot finish by its deadline from now")
	}
	cluster := ""
	inPool := func(field, p string) error {
		c, _, _ := strings.Cut(p, "/")
		if cluster != "" && c != cluster {
			return bad(field, "spans clusters %s and %s", cluster, c)
		}
		cluster = c
		if _, ok := e.capacity[p]; !ok {
			return bad(field, "no pool %q", p)
		}
		return nil
	}
	for _, p := range slices.Sorted(maps.Keys(r.Config)) {
		if err := inPool("configuration", p); err != nil {
			return err
		}
		if u := r.Config[p]; u <= 0 {
			return bad("configuration", "units of %q must be positive", p)
		} else if u > math.MaxInt32 || r.Count > math.MaxInt32 {
			return bad("count", "too large")
		}
	}
	for _, p := range slices.Sorted(maps.Keys(r.Overhead)) {
		if err := inPool("overhead", p); err != nil {
			return err
		}
		if u := r.Overhead[p]; u < 0 || u > math.MaxInt32 {
			return bad("overhead", "units of %q must be between 0 and %d", p, math.MaxInt32)
		}
	}
	return nil
}

// Quote returns the price and starts the algorithm would give the requests now,
// without committing anything. ok is false when they cannot be placed.
func (e *Engine) Quote(now Slot, reqs []Request) (Offer, bool, error) {
	return e.QuoteFor(now, "", reqs)
}

// QuoteFor is Quote for an owner whose quota its requests use first, at no charge.
func (e *Engine) QuoteFor(now Slot, owner string, reqs []Request) (Offer, bool, error) {
	if len(reqs) == 0 {
		return Offer{}, false, clearhouse.Errorf(clearhouse.EINVALID, "requests: at least one is required")
	}
	for i, r := range reqs {
		if err := e.validate(now, i, r); err != nil {
			return Offer{}, false, err
		}
	}
	return e.quote(now, owner, reqs)
}

func (e *Engine) quote(now Slot, owner string, reqs []Request) (Offer, bool, error) {
	// The requests are priced one after another, each on the plan with the ones
	// before it placed: a later request sees the capacity and the owner's quota an
	// earlier one takes, so requests of one bid are never priced twice against the
	// same free quota, and never overbooked (unless the algorithm over-commits,
	// Offer.Overcommit: then only its first slots are checked). The trial placements are undone.
	var o Offer
	var placed []*Reservation
	defer func() {
		for _, t := range placed {
			e.apply(t, 0, 1)
		}
	}()
	for i, r := range reqs {
		one, ok := e.algo.Offer(e, Ask{Owner: owner, Requests: reqs[i : i+1], Now: now})
		if !ok || len(one.Starts) != 1 || one.Starts[0] < max(r.Arrival, now) || one.Starts[0]+r.Duration > r.Deadline {
			return Offer{}, false, nil
		}
		trial := &Reservation{Owner: owner, Requests: reqs[i : i+1], Starts: one.Starts}
		if one.Overcommit {
			e.placeOver(trial)
		} else if !e.place(trial) {
			return Offer{}, false, nil
		}
		placed = append(placed, trial)
		o.Overcommit = o.Overcommit || one.Overcommit
		o.Price += one.Price
		o.Starts = append(o.Starts, one.Starts[0])
	}
	return o, true, nil
}
