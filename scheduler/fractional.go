package scheduler

import (
	"maps"
	"math"
	"slices"
)

// Fractional is ERA's LP-based predictor (Babaioff et al., section 3.2). It keeps
// the bids decided over the last History slots (a week by default) and, when it
// is refit, solves the value-maximizing fractional allocation of all of them
// (accepted and refused) on each pool's capacity: a variable per request and
// slot of its window, each request earning its value density on the unit-slots
// it gets (AllocateFractional, exact; see UpperBound). It then predicts the
// demand for a slot from where that allocation put requests in that slot: the
// units the allocation gave each request there, by the request's value density
// and by how long before the slot the request was made, with the daily and
// weekly seasonality of Seasonal. It does not spread a request over its window:
// in ERA's day/night example (high-value jobs only by day, medium- and low-value
// jobs by day or night, each class asking for the whole capacity) the
// allocation gives the day to the high-value jobs and the night to the
// medium-value ones, so the night is priced at the medium value and the
// low-value jobs, refused by the allocation, raise no price.
//
// A request that used less than it reserved (ObserveUse) asks the allocation
// for the unit-slots it used, at the value density it bid (ERA section 5.3).
//
// Refitting solves one allocation per pool: tens of milliseconds on 10,000
// requests (BenchmarkFractionalRefit). With Inline set (NewFractional sets it)
// Observe refits when a refit is due (a day after the last, or when the
// history has doubled since); a server clears Inline and refits off the
// request path (Clone, Refit, Adopt). A Fractional is not safe for concurrent
// use.
type Fractional struct {
	// Inline makes Observe refit when a refit is due.
	Inline bool
	// History is how far back, in slots, the requests the allocation is
	// solved over reach.
	History Slot

	capacity map[string]int64
	slotSecs int
	perDay   int
	past     []pastDemand
	model    *Seasonal
	refitAt  Slot // when the model was last refit
	refitN   int  // requests in the last refit
	refitted bool
}

// pastDemand is a decided bid and, per request, the share of its reserved
// unit-slots it used (nil: all of it, or not known yet).
type pastDemand struct {
	d    Demand
	used []float64
}

// NewFractional returns an LP-based predictor for pools of the given capacities
// and slots of slotSeconds, with a week of history, refitting inline.
func NewFractional(slotSeconds int, capacity map[string]int64) *Fractional {
	s := NewSeasonal(slotSeconds)
	return &Fractional{Inline: true, History: Slot(7 * s.SlotsPerDay), capacity: maps.Clone(capacity),
		slotSecs: max(slotSeconds, 1), perDay: s.SlotsPerDay}
}

// Observe implements Learner: it records the decided bid and, when Inline is
// set and a refit is due, refits.
func (f *Fractional) Observe(d Demand) {
	f.past = append(f.past, pastDemand{d: cloneDemand(d)})
	if f.Inline && f.RefitDue(d.Now) {
		f.Refit(d.Now)
	}
}

// ObserveUse implements UseLearner: the reservation's requests ask the next
// refit for the unit-slots they used. A reservation no longer in the history
// is ignored.
func (f *Fractional) ObserveUse(u Use) {
	for i := len(f.past) - 1; i >= 0; i-- {
		p := &f.past[i]
		if p.d.Reservation != u.Reservation || u.Reservation == 0 || len(u.Used) != len(p.d.Requests) {
			continue
		}
		p.used = make([]float64, len(u.Used))
		for k, r := range p.d.Requests {
			reserved := float64(units(r)) * float64(r.Duration)
			p.used[k] = 1
			if reserved > 0 {
				p.used[k] = min(max(float64(u.Used[k])/reserved, 0), 1)
			}
		}
		return
	}
}

// RefitDue reports whether a refit is due at now: never refit, a day since the
// last, or twice the requests it was solved over.
func (f *Fractional) RefitDue(now Slot) bool {
	return !f.refitted || now-f.refitAt >= Slot(f.perDay) || len(f.past) >= 2*f.refitN
}

// Refit solves the fractional allocation of the requests decided in the
// History slots before now and rebuilds the demand it predicts from.
func (f *Fractional) Refit(now Slot) {
	keep := f.past[:0]
	for _, p := range f.past {
		if p.d.Now >= now-f.History {
			keep = append(keep, p)
		}
	}
	clear(f.past[len(keep):])
	f.past = keep
	f.refitAt, f.refitN, f.refitted = now, len(f.past), true
	model := NewSeasonal(f.slotSecs)
	for _, pool := range slices.Sorted(maps.Keys(f.capacity)) {
		f.allocate(model, pool, f.capacity[pool])
	}
	if len(f.past) > 0 {
		// Average over the days the history spans, not the days since the first request.
		model.start = min(model.start, max(now-f.History, 0))
		if !model.seen {
			model.start, model.seen = max(now-f.History, 0), true
		}
	}
	f.model = model
}

// allocate solves the allocation of the past requests' units of pool on its
// capacity and adds where it put them to the model.
func (f *Fractional) allocate(model *Seasonal, pool string, capacity int64) {
	var jobs []Job
	var work []int64
	var owner []int
	for i, p := range f.past {
		total := 0.0
		for _, r := range p.d.Requests {
			total += float64(units(r)) * float64(r.Duration)
		}
		for k, r := range p.d.Requests {
			w := r.Units(pool)
			if w <= 0 || total <= 0 {
				continue
			}
			j := Job{Arrival: max(r.Arrival, p.d.Now), Deadline: r.Deadline, Duration: r.Duration, Width: w,
				Value: p.d.Value * float64(w) * float64(r.Duration) / total}
			share := 1.0
			if p.used != nil {
				share = p.used[k]
			}
			jobs = append(jobs, j)
			work = append(work, int64(math.Round(share*float64(w)*float64(r.Duration))))
			owner = append(owner, i)
		}
	}
	if len(jobs) == 0 {
		return
	}
	a := allocateWork(jobs, capacity, work)
	for j, job := range jobs {
		b := densityBucket(density(job))
		now := f.past[owner[j]].d.Now
		for k, u := range a.Units[j] {
			if u > 0 {
				t := a.From[j] + Slot(k)
				model.add(pool, t, t-now, b, float64(u))
			}
		}
	}
}

// Price implements Predictor: no demand is predicted before the first refit.
func (f *Fractional) Price(pool string, slot, now Slot, quantity int64) float64 {
	if f.model == nil {
		return 0
	}
	return f.model.Price(pool, slot, now, quantity)
}

// PriceSum implements UnitPricer: the model's sum (no demand, so the floor, before
// the first refit).
func (f *Fractional) PriceSum(pool string, slot, now Slot, lo, hi int64, floor, ceiling float64) float64 {
	if f.model == nil {
		return float64(max(hi-lo+1, 0)) * clampPrice(0, floor, ceiling)
	}
	return f.model.PriceSum(pool, slot, now, lo, hi, floor, ceiling)
}

// Clone returns a deep copy of f, to refit off the request path: take the
// clone under the caller's lock, Refit it without the lock, and Adopt it.
func (f *Fractional) Clone() *Fractional {
	c, err := restoreFractional(f.State())
	if err != nil {
		panic("scheduler: a Fractional's own state does not restore: " + err.Error())
	}
	return c
}

// Adopt takes the model a refitted clone of f solved, keeping the requests f
// observed since the clone was taken (and dropping those the clone's refit
// found older than its History).
func (f *Fractional) Adopt(c *Fractional) {
	if c == nil || !c.refitted {
		return
	}
	f.model, f.refitAt, f.refitN, f.refitted = c.model, c.refitAt, c.refitN, true
	keep := f.past[:0]
	for _, p := range f.past {
		if p.d.Now >= c.refitAt-c.History {
			keep = append(keep, p)
		}
	}
	clear(f.past[len(keep):])
	f.past = keep
}

func cloneDemand(d Demand) Demand {
	d.Requests = cloneRequests(d.Requests)
	return d
}
