package scheduler

import (
	"math"
	"testing"
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
