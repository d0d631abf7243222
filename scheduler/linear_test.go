package scheduler

import (
	"math"
	"testing"
)

// The prior-knowledge linear predictor: price High for no demand, falling
// linearly to Low when all the slot's expected demand D is asked for, and no
// price beyond D; demand for a slot Lead or more slots ahead is all still to come,
// nearer slots have only their share of it left.
func TestLinearPredictorIsLinearInTheQuantity(t *testing.T) {
	l := Linear{High: 12, Low: 2, Demand: 100, Lead: 10}
	for _, c := range []struct {
		slot, now Slot
		q         int64
		want      float64
	}{
		{20, 0, 0, 12}, {20, 0, 50, 7}, {20, 0, 100, 2}, {20, 0, 101, 0},
		{20, 15, 25, 7}, // 5 slots ahead: half the demand (50) left
		{20, 20, 1, 0},  // nothing left to arrive
	} {
		if got := l.Price("p", c.slot, c.now, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("slot %d seen at %d, %d units: %v, want %v", c.slot, c.now, c.q, got, c.want)
		}
	}
	jobs := []Job{{Submit: 0, Arrival: 0, Deadline: 10, Duration: 2, Width: 5, Value: 100}, {Submit: 4, Arrival: 4, Deadline: 20, Duration: 4, Width: 5, Value: 20}}
	got := LinearFromJobs(jobs)
	if got.High != 10 || got.Low != 1 || got.Demand != 30.0/20 || got.Lead != 13 {
		t.Fatalf("from the workload: %+v; want High 10, Low 1, 30 unit-slots over 20 slots, lead (10+16)/2", got)
	}
}

// ERA section 4's exponential penalty for later scheduling: with it, econ takes an
// earlier start a later, cheaper one would have beaten, and charges that start's
// own price.
func TestLaterPenaltyPrefersEarlierStarts(t *testing.T) {
	curve := LoadCurve{Base: 1, Steep: 8, Capacity: 10}
	load := func(algo Algorithm) *Engine {
		e := NewEngine(40, map[string]int64{"c/cpu": 10}, algo)
		if _, ok, _ := e.MakeReservation(0, Bid{Requests: []Request{req(5, 2, 0, 2)}, Value: 1e6}); !ok {
			t.Fatal("setup refused")
		}
		return e
	}
	plain, ok, _ := load(BasicEcon{Predictor: curve}).Quote(0, []Request{req(2, 2, 0, 10)})
	if !ok || plain.Starts[0] != 2 {
		t.Fatalf("without a penalty econ waits for the unloaded slots: %+v", plain)
	}
	e := load(BasicEcon{Predictor: curve, LaterPenalty: 1})
	pen, ok, _ := e.Quote(0, []Request{req(2, 2, 0, 10)})
	if !ok || pen.Starts[0] != 0 {
		t.Fatalf("a penalty of e per slot makes the loaded start at 0 the cheapest: %+v", pen)
	}
	// The price is the start's own: the per-unit sum over its two loaded slots.
	want := 2 * (curve.Price("", 0, 0, 5) + curve.Price("", 0, 0, 4))
	if math.Abs(pen.Price-want) > 1e-9 {
		t.Fatalf("price %v, want the start's unpenalized cost %v", pen.Price, want)
	}
}
