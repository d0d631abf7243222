package fleet

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// No start precedes a request's arrival: the plan rounds an arrival up to a slot
// boundary (a window open since the current slot began may use that slot), never
// by more than a slot, and the definition's check of the window agrees.
func TestStartsNeverPrecedeArrival(t *testing.T) {
	t.Parallel() // no database, no shared state
	rapid.Check(t, func(t *rapid.T) {
		slot := time.Duration(rapid.SampledFrom([]int{60, 300, 900}).Draw(t, "slot seconds")) * time.Second
		origin := slotEpoch.Add(time.Duration(rapid.IntRange(0, 1000).Draw(t, "origin slot")) * slot)
		p := &plan{origin: origin, slotLen: slot}
		now := origin.Add(time.Duration(rapid.Int64Range(0, int64(24*time.Hour)).Draw(t, "now")))
		arrival := now.Add(time.Duration(rapid.Int64Range(-int64(2*time.Hour), int64(2*time.Hour)).Draw(t, "arrival")))
		d := Definition{Value: 1, Requests: []RequestSpec{{Configuration: map[string]int64{"c/cpu": 1}, Count: 1,
			Duration: slot, Arrival: arrival, Deadline: now.Add(3 * time.Hour)}}}
		r := p.requests(d, now)[0]
		start := p.at(r.Arrival) // the earliest start the plan may give it
		if start.Before(arrival) {
			t.Fatalf("earliest start %s precedes the arrival %s (now %s)", start, arrival, now)
		}
		floor := now.Truncate(slot)
		if start.Before(floor) {
			t.Fatalf("earliest start %s precedes the current slot %s", start, floor)
		}
		if latest := max(arrival.Sub(floor), 0); start.Sub(floor) >= latest+slot {
			t.Fatalf("arrival %s rounded up by a slot or more, to %s", arrival, start)
		}
		if err := d.Validate(now, slot, 14*24*time.Hour, true); err != nil {
			t.Fatalf("a window of three hours from %s: %v", arrival, err)
		}
	})
}
