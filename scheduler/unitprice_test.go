package scheduler

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// step prices a demand of q units at 5 when q <= 7, else at 1: a predictor that is
// not a UnitPricer, so the engine calls Price once per unit.
type step struct{}

func (step) Price(_ string, _, _ Slot, q int64) float64 {
	if q <= 7 {
		return 5
	}
	return 1
}

// ERA Algorithm 1, lines 6-8: price_t(i) is "the highest price p s.t. demand_t(p) +
// promised[t] + i > Capacity", and cost[t] = price_t(1) + price_t(2) + ... +
// price_t(W). With 10 units free, a unit i is priced at the demand quantity
// 10 - i + 1: 4 units cost price(10) + price(9) + price(8) + price(7) = 1 + 1 + 1 + 5
// = 8 (the middle unit's price times W would be 4 x price(8) = 4).
func TestEconSumsEachUnitsPrice(t *testing.T) {
	e := NewEngine(10, map[string]int64{"c/cpu": 10}, BasicEcon{Predictor: step{}})
	o, ok, err := e.Quote(0, []Request{req(4, 1, 0, 1)})
	if err != nil || !ok || o.Price != 8 {
		t.Fatalf("4 units in one slot with 10 free: %+v %v %v; want 1+1+1+5 = 8", o, ok, err)
	}
	// Two slots: cost[t] + cost[t+1] (Algorithm 1, line 10).
	if o, _, _ := e.Quote(0, []Request{req(4, 2, 0, 2)}); o.Price != 16 {
		t.Fatalf("two slots: %v, want 16", o.Price)
	}
	// With 3 units promised, 7 are free: every unit prices at 5 or more scarce.
	if _, ok, _ := e.MakeReservation(0, Bid{Requests: []Request{req(3, 1, 0, 1)}, Value: 100}); !ok {
		t.Fatal("setup reservation refused")
	}
	if o, _, _ := e.Quote(0, []Request{req(4, 1, 0, 1)}); o.Price != 20 {
		t.Fatalf("4 of the 7 free units: %v, want 4 x 5", o.Price)
	}
}

// A predictor's PriceSum is the sum of its clamped Price calls, unit by unit.
func TestPriceSumsMatchPricingEachUnit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.Int64Range(1, 2000).Draw(t, "capacity")
		var pred Predictor
		switch rapid.IntRange(0, 2).Draw(t, "predictor") {
		case 0:
			pred = LoadCurve{Base: rapid.Float64Range(0.1, 5).Draw(t, "base"), Steep: rapid.Float64Range(0.2, 20).Draw(t, "steep"), Capacity: capacity}
		case 1:
			s := NewSeasonal(300)
			for i := range rapid.IntRange(0, 40).Draw(t, "demands") {
				now := Slot(i * 3)
				r := Request{Config: Config{"c/cpu": 1}, Count: rapid.Int64Range(1, 500).Draw(t, "count"), Duration: Slot(rapid.IntRange(1, 12).Draw(t, "d")),
					Arrival: now, Deadline: now + Slot(rapid.IntRange(12, 100).Draw(t, "window"))}
				s.Observe(Demand{Requests: []Request{r}, Now: now, Value: rapid.Float64Range(1, 1e5).Draw(t, "value"), Accepted: true})
			}
			pred = s
		default:
			pred = &Shifted{P: LoadCurve{Base: 1, Steep: 6, Capacity: capacity}, Off: 7}
		}
		u := pred.(UnitPricer)
		lo := rapid.Int64Range(-5, capacity+5).Draw(t, "lo")
		hi := lo + rapid.Int64Range(0, 1500).Draw(t, "units")
		floor := rapid.SampledFrom([]float64{0, 0.5, 1, 3}).Draw(t, "floor")
		ceiling := rapid.SampledFrom([]float64{0, 1, 2, 10}).Draw(t, "ceiling")
		slot, now := Slot(rapid.IntRange(100, 400).Draw(t, "slot")), Slot(rapid.IntRange(0, 100).Draw(t, "now"))
		want := 0.0
		for q := lo; q <= hi; q++ {
			want += clampPrice(pred.Price("c/cpu", slot, now, q), floor, ceiling)
		}
		if got := u.PriceSum("c/cpu", slot, now, lo, hi, floor, ceiling); math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
			t.Fatalf("PriceSum over [%d, %d] (floor %v, ceiling %v) = %v, unit by unit %v", lo, hi, floor, ceiling, got, want)
		}
	})
}
