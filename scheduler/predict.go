package scheduler

import (
	"math"
)

// Density buckets: value per unit-slot on a geometric scale from $0.01 to about
// $10,000, 25% apart.
const (
	densityBuckets = 64
	densityLow     = 0.01
	densityRatio   = 1.25
)

func densityBucket(d float64) int {
	if d <= densityLow {
		return 0
	}
	return min(int(math.Log(d/densityLow)/math.Log(densityRatio)), densityBuckets-1)
}

// densityFloor is the lowest density of bucket b.
func densityFloor(b int) float64 { return densityLow * math.Pow(densityRatio, float64(b)) }

// Seasonal learns inverse demand from past requests with daily and weekly
// seasonality. Every observed request spreads its units evenly over its window;
// its demand is counted per time-of-day bucket (and per day of the week) and per
// value density. The demand expected for a future slot is the average over the
// days (and weeks) seen so far, scaled by the share of demand that, in the past,
// was requested later than now is before that slot. Price(q) is the highest
// density at which that expected demand still reaches q units.
//
// A Seasonal is not safe for concurrent use; the engine serializes its calls.
type Seasonal struct {
	SlotsPerDay int // 288 for 5-minute slots
	BucketSlots int // slots a time-of-day bucket spans (12: hourly for 5-minute slots)
	pools       map[string]*season
	start       Slot // first slot observed
	seen        bool
	lead        []float64 // demand units by lead time (slot - submit), capped
	leadCum     []float64
	dirty       bool
}

// season is one pool's demand by time-of-day bucket (and day-of-week bucket) and
// density bucket, in units over all the days observed.
type season struct {
	daily  [][densityBuckets]float64
	weekly [][densityBuckets]float64
}

// NewSeasonal returns a predictor for slots of slotSeconds.
func NewSeasonal(slotSeconds int) *Seasonal {
	perDay := max(86400/max(slotSeconds, 1), 1)
	return &Seasonal{SlotsPerDay: perDay, BucketSlots: max(perDay/24, 1)}
}

func (s *Seasonal) buckets() (daily, weekly int) {
	d := (s.SlotsPerDay + s.BucketSlots - 1) / s.BucketSlots
	return d, 7 * d
}

func (s *Seasonal) dayBucket(t Slot) int {
	return (int(t) % s.SlotsPerDay) / s.BucketSlots
}

func (s *Seasonal) weekBucket(t Slot) int {
	d, _ := s.buckets()
	return (int(t)/s.SlotsPerDay%7)*d + s.dayBucket(t)
}

// Observe implements Learner.
func (s *Seasonal) Observe(d Demand) { s.observe(d, 1) }

// observe adds weight times a decided bid's demand.
func (s *Seasonal) observe(d Demand, weight float64) {
	var unitSlots float64
	for _, r := range d.Requests {
		unitSlots += float64(units(r)) * float64(r.Duration)
	}
	if unitSlots <= 0 || weight <= 0 {
		return
	}
	if !s.seen || d.Now < s.start {
		s.start, s.seen = d.Now, true
	}
	if s.pools == nil {
		s.pools = map[string]*season{}
	}
	if s.lead == nil {
		s.lead = make([]float64, 7*s.SlotsPerDay+1)
	}
	b := densityBucket(d.Value / unitSlots)
	nd, nw := s.buckets()
	for _, r := range d.Requests {
		from := max(r.Arrival, d.Now) // the part of the window still ahead
		if r.Deadline <= from {
			continue
		}
		span := float64(r.Deadline - from)
		for p, u := range r.Config {
			m := s.pools[p]
			if m == nil {
				m = &season{daily: make([][densityBuckets]float64, nd), weekly: make([][densityBuckets]float64, nw)}
				s.pools[p] = m
			}
			perSlot := weight * float64(u*r.Count) * float64(r.Duration) / span
			for t := from; t < r.Deadline; t++ {
				m.daily[s.dayBucket(t)][b] += perSlot
				m.weekly[s.weekBucket(t)][b] += perSlot
				s.lead[min(int(t-d.Now), len(s.lead)-1)] += perSlot
			}
		}
	}
	s.dirty = true
}

// later is the share of past demand for a slot that was requested fewer than ahead
// slots before it, that is after now when the slot is now+ahead.
func (s *Seasonal) later(ahead Slot) float64 {
	if s.dirty || s.leadCum == nil {
		s.leadCum = make([]float64, len(s.lead)+1)
		for i, v := range s.lead {
			s.leadCum[i+1] = s.leadCum[i] + v
		}
		s.dirty = false
	}
	total := s.leadCum[len(s.leadCum)-1]
	if total <= 0 || ahead <= 0 {
		return 0
	}
	return s.leadCum[min(int(ahead), len(s.leadCum)-1)] / total
}

// Price implements Predictor.
func (s *Seasonal) Price(pool string, slot, now Slot, quantity int64) float64 {
	m := s.pools[pool]
	if m == nil {
		return 0
	}
	frac := s.later(slot - now)
	if frac <= 0 {
		return 0
	}
	elapsed := max(float64(now-s.start)/float64(s.SlotsPerDay), 1)
	daily := &m.daily[s.dayBucket(slot)]
	weekly := &m.weekly[s.weekBucket(slot)]
	wWeek := 0.0
	if elapsed >= 7 {
		wWeek = 0.5 // a full week seen: the day of the week counts as much as the hour
	}
	q := float64(quantity)
	cum := 0.0
	for b := densityBuckets - 1; b >= 0; b-- {
		rate := (1-wWeek)*daily[b]/elapsed + wWeek*weekly[b]/(elapsed/7)
		cum += rate * frac
		if cum >= q && cum > 0 {
			return densityFloor(b)
		}
	}
	return 0
}

// Fractional predicts from the value-maximizing fractional allocation of past
// requests: once a day it solves the offline optimum of the last week's requests
// on each pool's capacity and learns, like Seasonal, only the demand that optimum
// would have served (each request weighted by the fraction it got). Demand the
// cluster could never have served does not raise prices.
type Fractional struct {
	capacity map[string]int64
	perDay   int
	history  Slot
	past     []Demand
	model    *Seasonal
	slotSecs int
	solvedAt Slot
	solvedN  int // requests in the last solve
}

// NewFractional returns a fractional predictor for pools of the given capacities
// and slots of slotSeconds.
func NewFractional(slotSeconds int, capacity map[string]int64) *Fractional {
	s := NewSeasonal(slotSeconds)
	return &Fractional{capacity: capacity, perDay: s.SlotsPerDay, history: Slot(7 * s.SlotsPerDay), slotSecs: slotSeconds, model: s}
}

// Observe implements Learner.
func (f *Fractional) Observe(d Demand) {
	f.past = append(f.past, d)
	// Solve daily, and while history is short whenever it has doubled, so the first
	// day is not priced from the first request alone.
	if d.Now-f.solvedAt >= Slot(f.perDay) || len(f.past) >= 2*f.solvedN {
		f.solve(d.Now)
	}
}

// solve rebuilds the model from the fractional optimum of the past week.
func (f *Fractional) solve(now Slot) {
	keep := f.past[:0]
	for _, d := range f.past {
		if d.Now >= now-f.history {
			keep = append(keep, d)
		}
	}
	f.past = keep
	f.solvedAt, f.solvedN = now, len(f.past)
	model := NewSeasonal(f.slotSecs)
	weight := make([]float64, len(f.past))
	for pool, capacity := range f.capacity {
		var jobs []Job
		var owner []int
		for i, d := range f.past {
			var total float64
			for _, r := range d.Requests {
				total += float64(units(r)) * float64(r.Duration)
			}
			for _, r := range d.Requests {
				u, ok := r.Config[pool]
				if !ok || total <= 0 {
					continue
				}
				w := u * r.Count
				jobs = append(jobs, Job{Submit: r.Arrival, Arrival: r.Arrival, Deadline: r.Deadline, Duration: r.Duration, Width: w,
					Value: d.Value * float64(w) * float64(r.Duration) / total})
				owner = append(owner, i)
			}
		}
		if len(jobs) == 0 {
			continue
		}
		b := UpperBound(jobs, capacity)
		for k, j := range jobs {
			weight[owner[k]] = max(weight[owner[k]], b.Allocated[k]/(float64(j.Width)*float64(j.Duration)))
		}
	}
	for i, d := range f.past {
		model.observe(d, weight[i])
	}
	if len(f.past) > 0 {
		// Average over the days the history spans, not the days since the first request.
		model.start = min(model.start, max(now-f.history, 0))
	}
	f.model = model
}

// Price implements Predictor.
func (f *Fractional) Price(pool string, slot, now Slot, quantity int64) float64 {
	return f.model.Price(pool, slot, now, quantity)
}

// Shifted is a Predictor (and Learner when P is one) that sees slot t of the engine as slot t+Off of P.
//
// An engine that numbers slots from an origin it moves forward (rebuilt once a
// day, say) wraps a learned predictor that lives in absolute slots, so the
// predictor keeps its daily and weekly phase: Off is the engine's origin in P's
// slots.
type Shifted struct {
	P   Predictor
	Off Slot
}

// Price implements Predictor: P's price for slot+Off seen from now+Off.
func (s *Shifted) Price(pool string, slot, now Slot, quantity int64) float64 {
	return s.P.Price(pool, slot+s.Off, now+s.Off, quantity)
}

// Observe implements Learner: P observes a copy of d with Now, and every
// request's Arrival and Deadline, shifted by +Off; d and its requests are not
// changed. It does nothing when P does not learn.
func (s *Shifted) Observe(d Demand) {
	l, ok := s.P.(Learner)
	if !ok {
		return
	}
	shifted := d
	shifted.Now += s.Off
	shifted.Requests = make([]Request, len(d.Requests))
	for i, r := range d.Requests {
		r.Arrival += s.Off
		r.Deadline += s.Off
		shifted.Requests[i] = r
	}
	l.Observe(shifted)
}
