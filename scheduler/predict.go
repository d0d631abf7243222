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
func (s *Seasonal) Observe(d Demand) { s.observe(d, nil) }

// observe adds weights[i] times request i of a decided bid's demand, spread
// evenly over the part of its window still ahead (weights nil: 1 each).
func (s *Seasonal) observe(d Demand, weights []float64) {
	var unitSlots float64
	for _, r := range d.Requests {
		unitSlots += float64(units(r)) * float64(r.Duration)
	}
	if unitSlots <= 0 {
		return
	}
	b := densityBucket(d.Value / unitSlots)
	for i, r := range d.Requests {
		w := 1.0
		if weights != nil {
			w = weights[i]
		}
		from := max(r.Arrival, d.Now) // the part of the window still ahead
		if r.Deadline <= from || w == 0 {
			continue
		}
		span := float64(r.Deadline - from)
		for _, p := range r.pools() {
			perSlot := w * float64(r.Units(p)) * float64(r.Duration) / span
			for t := from; t < r.Deadline; t++ {
				s.add(p, t, t-d.Now, b, perSlot)
			}
		}
	}
}

// add counts units of demand of density bucket b for pool in slot t, requested
// lead slots ahead of it.
func (s *Seasonal) add(pool string, t, lead Slot, b int, units float64) {
	if !s.seen {
		s.start, s.seen = t-lead, true
	}
	s.start = min(s.start, t-lead)
	if s.pools == nil {
		s.pools = map[string]*season{}
	}
	if s.lead == nil {
		s.lead = make([]float64, 7*s.SlotsPerDay+1)
	}
	m := s.pools[pool]
	if m == nil {
		nd, nw := s.buckets()
		m = &season{daily: make([][densityBuckets]float64, nd), weekly: make([][densityBuckets]float64, nw)}
		s.pools[pool] = m
	}
	m.daily[s.dayBucket(t)][b] += units
	m.weekly[s.weekBucket(t)][b] += units
	s.lead[min(int(max(lead, 0)), len(s.lead)-1)] += units
	s.dirty = true
}

// ObserveUse implements UseLearner: the share of each request's demand that the
// reservation did not use is taken back out of what Observe learned from it.
func (s *Seasonal) ObserveUse(u Use) {
	if len(u.Reserved) != len(u.Requests) || len(u.Used) != len(u.Requests) {
		return
	}
	w := make([]float64, len(u.Requests))
	unused := false
	for i := range u.Requests {
		if u.Reserved[i] > 0 && u.Used[i] < u.Reserved[i] {
			w[i] = -(1 - float64(max(u.Used[i], 0))/float64(u.Reserved[i]))
			unused = true
		}
	}
	if unused {
		s.observe(Demand{Requests: u.Requests, Now: u.Now, Value: u.Value}, w)
	}
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

// PriceSum implements UnitPricer: the inverse demand is a step function of the
// quantity (each density bucket's floor price over the quantities its demand
// covers), so the units of [lo, hi] are counted per step in one pass over the
// buckets, exactly as Price prices each of them.
func (s *Seasonal) PriceSum(pool string, slot, now Slot, lo, hi int64, floor, ceiling float64) float64 {
	if hi < lo {
		return 0
	}
	m := s.pools[pool]
	frac := 0.0
	if m != nil {
		frac = s.later(slot - now)
	}
	if frac <= 0 {
		return float64(hi-lo+1) * clampPrice(0, floor, ceiling)
	}
	elapsed := max(float64(now-s.start)/float64(s.SlotsPerDay), 1)
	daily := &m.daily[s.dayBucket(slot)]
	weekly := &m.weekly[s.weekBucket(slot)]
	wWeek := 0.0
	if elapsed >= 7 {
		wWeek = 0.5
	}
	total := 0.0
	next := lo // the smallest quantity not yet priced
	cum := 0.0
	for b := densityBuckets - 1; b >= 0 && next <= hi; b-- {
		rate := (1-wWeek)*daily[b]/elapsed + wWeek*weekly[b]/(elapsed/7)
		cum += rate * frac
		if cum <= 0 || cum < float64(next) {
			continue // no quantity left to price reaches this bucket yet
		}
		// Price gives bucket b to every quantity q <= cum not priced by a bucket above.
		top := hi
		if c := math.Floor(cum); c < float64(hi) {
			top = int64(c)
		}
		if top >= next {
			total += float64(top-next+1) * clampPrice(densityFloor(b), floor, ceiling)
			next = top + 1
		}
	}
	if next <= hi {
		total += float64(hi-next+1) * clampPrice(0, floor, ceiling)
	}
	return total
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

// PriceSum implements UnitPricer: P's sum for slot+Off seen from now+Off (a call
// per quantity when P is not a UnitPricer).
func (s *Shifted) PriceSum(pool string, slot, now Slot, lo, hi int64, floor, ceiling float64) float64 {
	return unitPriceSum(s.P, pool, slot+s.Off, now+s.Off, lo, hi, floor, ceiling)
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

// ObserveUse implements UseLearner: P learns from a copy of u shifted as
// Observe shifts a demand. It does nothing when P does not learn from use.
func (s *Shifted) ObserveUse(u Use) {
	l, ok := s.P.(UseLearner)
	if !ok {
		return
	}
	shifted := u
	shifted.Now += s.Off
	shifted.Requests = make([]Request, len(u.Requests))
	for i, r := range u.Requests {
		r.Arrival += s.Off
		r.Deadline += s.Off
		shifted.Requests[i] = r
	}
	l.ObserveUse(shifted)
}
