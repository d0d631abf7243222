package scheduler

import (
	"math"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

func demand(w int64, dur, arrival, deadline, now Slot, value float64) Demand {
	return Demand{Requests: []Request{req(w, dur, arrival, deadline)}, Now: now, Value: value}
}

func TestSeasonalInverseDemand(t *testing.T) {
	s := NewSeasonal(300) // 288 slots a day, hourly buckets
	if p := s.Price("c/cpu", 100, 0, 1); p != 0 {
		t.Fatalf("price with no history: %v", p)
	}
	// Yesterday, 50 slots ahead of slot 100: 10 units worth $10 a unit-slot and 40
	// units worth $1.
	s.Observe(demand(10, 1, 100, 101, 50, 100))
	s.Observe(demand(40, 1, 100, 101, 50, 40))
	const slot, now = 388, 330 // the same hour today, 58 slots ahead
	high, low, none := s.Price("c/cpu", slot, now, 5), s.Price("c/cpu", slot, now, 30), s.Price("c/cpu", slot, now, 51)
	if high > 10 || high < 10/densityRatio {
		t.Fatalf("the 5th unit of demand is worth about $10, priced %v", high)
	}
	if low > 1 || low < 1/densityRatio {
		t.Fatalf("the 30th unit of demand is worth about $1, priced %v", low)
	}
	if none != 0 {
		t.Fatalf("no 51st unit of demand was seen, priced %v", none)
	}
	// Demand that arrived 50 slots ahead has arrived already when the slot is at
	// most 50 slots away: nothing more is expected.
	if p := s.Price("c/cpu", slot, slot-50, 1); p != 0 {
		t.Fatalf("demand already in, priced %v", p)
	}
	// Another hour of the day saw no demand.
	if p := s.Price("c/cpu", slot+24, now, 1); p != 0 {
		t.Fatalf("an hour with no history priced %v", p)
	}
}

func TestFractionalIgnoresDemandTheClusterCouldNotServe(t *testing.T) {
	f := NewFractional(300, map[string]int64{"c/cpu": 10})
	s := NewSeasonal(300)
	for _, d := range []Demand{demand(10, 1, 100, 101, 50, 100), demand(100, 1, 100, 101, 50, 100)} {
		f.Observe(d)
		s.Observe(d)
	}
	const slot, now = 388, 330
	if p := s.Price("c/cpu", slot, now, 50); math.Abs(p-1) > 0.25 {
		t.Fatalf("seasonal: the 50th unit of raw demand is worth about $1, priced %v", p)
	}
	if p := f.Price("c/cpu", slot, now, 50); p != 0 {
		t.Fatalf("fractional: the optimum serves only 10 units, yet the 50th is priced %v", p)
	}
	if p := f.Price("c/cpu", slot, now, 5); p < 10/densityRatio || p > 10 {
		t.Fatalf("fractional: the 5th served unit is worth about $10, priced %v", p)
	}
}

func TestLoadCurveRisesAsTheFreeQuantityFalls(t *testing.T) {
	c := LoadCurve{Base: 2, Steep: 5, Capacity: 100}
	if c.Price("p", 0, 0, 100) != 2 || math.Abs(c.Price("p", 0, 0, 0)-10) > 1e-9 {
		t.Fatal("ends of the curve")
	}
	for q := int64(1); q <= 100; q++ {
		if c.Price("p", 0, 0, q) >= c.Price("p", 0, 0, q-1) {
			t.Fatalf("not decreasing at %d", q)
		}
	}
}

// A Seasonal behind Shifted{Off: k} learns and prices exactly as a Seasonal fed
// the same demands k slots later, and observing leaves the demand as it was.
func TestShiftedSeasonalLearnsAndPricesInAbsoluteSlots(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		off := Slot(rapid.IntRange(0, 3*288).Draw(t, "offset"))
		shifted, absolute := &Shifted{P: NewSeasonal(300), Off: off}, NewSeasonal(300)
		now := Slot(0)
		for range rapid.IntRange(1, 30).Draw(t, "demands") {
			now += Slot(rapid.IntRange(0, 120).Draw(t, "elapsed"))
			var reqs []Request
			for range rapid.IntRange(1, 2).Draw(t, "requests") {
				arr := now + Slot(rapid.IntRange(0, 100).Draw(t, "lead"))
				d := Slot(rapid.IntRange(1, 12).Draw(t, "duration"))
				reqs = append(reqs, Request{Config: Config{rapid.SampledFrom(testPools).Draw(t, "pool"): 1}, Count: rapid.Int64Range(1, 20).Draw(t, "count"),
					Duration: d, Arrival: arr, Deadline: arr + d + Slot(rapid.IntRange(0, 48).Draw(t, "slack"))})
			}
			d := Demand{Requests: reqs, Now: now, Value: rapid.Float64Range(1, 5000).Draw(t, "value"), Accepted: rapid.Bool().Draw(t, "accepted")}
			before := Demand{Requests: cloneRequests(reqs), Now: d.Now, Value: d.Value, Accepted: d.Accepted}
			shifted.Observe(d)
			if !reflect.DeepEqual(d, before) {
				t.Fatalf("observing changed the demand: %+v, was %+v", d, before)
			}
			later := before
			later.Now += off
			later.Requests = cloneRequests(before.Requests)
			for i := range later.Requests {
				later.Requests[i].Arrival += off
				later.Requests[i].Deadline += off
			}
			absolute.Observe(later)
		}
		for range 20 {
			pool := rapid.SampledFrom(testPools).Draw(t, "query pool")
			at := now + Slot(rapid.IntRange(0, 600).Draw(t, "query now"))
			slot := at + Slot(rapid.IntRange(0, 300).Draw(t, "ahead"))
			q := rapid.Int64Range(0, 60).Draw(t, "quantity")
			if got, want := shifted.Price(pool, slot, at, q), absolute.Price(pool, slot+off, at+off, q); got != want {
				t.Fatalf("%s slot %d from %d, quantity %d: shifted %v, absolute %v", pool, slot, at, q, got, want)
			}
		}
	})
}

// The offset matters: a day's demand at one hour is priced at that hour of the
// engine's day, which is not the predictor's when the origin is not midnight.
func TestShiftedKeepsTheDailyPhase(t *testing.T) {
	const day, hour = 288, 12
	s := &Shifted{P: NewSeasonal(300), Off: 5 * hour}             // the engine's slot 0 is 05:00
	s.Observe(demand(10, 1, 10*hour, 10*hour+1, 10*hour-20, 100)) // 15:00 on day one
	if p := s.Price("c/cpu", day+10*hour, day+10*hour-30, 5); p == 0 {
		t.Fatal("the same hour of the next day is not priced")
	}
	if p := s.P.Price("c/cpu", day+15*hour, day+15*hour-30, 5); p == 0 {
		t.Fatal("the predictor did not learn 15:00")
	}
	if p := s.P.Price("c/cpu", day+10*hour, day+10*hour-30, 5); p != 0 {
		t.Fatalf("the predictor learned the engine's 10:00 as its own: %v", p)
	}
	plain := &Shifted{P: LoadCurve{Base: 1, Steep: 2, Capacity: 10}, Off: 7}
	plain.Observe(demand(10, 1, 0, 1, 0, 100)) // not a learner: nothing happens
	if plain.Price("c/cpu", 3, 0, 5) != (LoadCurve{Base: 1, Steep: 2, Capacity: 10}).Price("c/cpu", 10, 7, 5) {
		t.Fatal("a predictor that does not learn is not priced through")
	}
}
