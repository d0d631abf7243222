package scheduler

import (
	"reflect"
	"slices"
	"testing"

	"github.com/clearhouse/clearhouse"
	"pgregory.net/rapid"
)

// freeSlots is a pool's shared free capacity in every slot of the horizon.
func freeSlots(e *Engine, pool string) []int64 {
	return e.FreeSlots(pool, 0, e.Horizon(), nil)
}

// blocked is an engine of 10 cpu whose first reservation holds 8 of them over
// slots [from, to).
func blocked(from, to Slot) *Engine {
	e := NewEngine(30, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	if err := e.Restore(Reservation{ID: 1, Requests: []Request{req(8, to-from, from, to)}, Starts: []Slot{from}}); err != nil {
		panic(err)
	}
	return e
}

func TestRestoreAtKeepsStartsThatFit(t *testing.T) {
	e := NewEngine(30, map[string]int64{"c/cpu": 10}, BasicEcon{Predictor: LoadCurve{Base: 1, Steep: 4, Capacity: 10}})
	for range 4 {
		e.MakeReservation(0, Bid{Requests: []Request{req(3, 5, 0, 30)}, Value: 1e6})
	}
	e2 := NewEngine(30, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	for _, r := range e.Reservations() {
		moved, err := e2.RestoreAt(7, r)
		if err != nil || moved {
			t.Fatalf("reservation %d: moved %v, %v", r.ID, moved, err)
		}
		if got, _ := e2.Reservation(r.ID); !slices.Equal(got.Starts, r.Starts) || got.Price != r.Price {
			t.Fatalf("restored as %+v, was %+v", got, r)
		}
	}
	if !slices.Equal(freeSlots(e, "c/cpu"), freeSlots(e2, "c/cpu")) {
		t.Fatal("the restored plan differs")
	}
	if _, err := e2.RestoreAt(7, e.Reservations()[0]); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
		t.Fatalf("restoring a reservation twice: %v", err)
	}
}

func TestRestoreAtMovesAReservationThatNoLongerFitsItsStart(t *testing.T) {
	r := Reservation{ID: 7, Requests: []Request{req(5, 4, 0, 20)}, Starts: []Slot{0}, Price: 20, Value: 30}
	e := blocked(0, 4)
	if err := e.Restore(r); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
		t.Fatalf("Restore still refuses what does not fit where it was: %v", err)
	}
	moved, err := e.RestoreAt(0, r)
	if err != nil || !moved {
		t.Fatalf("moved %v, %v", moved, err)
	}
	got, ok := e.Reservation(7)
	if !ok || got.Starts[0] != 4 || got.Price != 20 || got.Value != 30 {
		t.Fatalf("restored as %+v; want the earliest start with room, 4, at the price it was sold for", got)
	}
	if r.Starts[0] != 0 {
		t.Fatal("the caller's reservation was changed")
	}
	if want := []int64{2, 2, 2, 2, 5, 5, 5, 5, 10}; !slices.Equal(freeSlots(e, "c/cpu")[:9], want) {
		t.Fatalf("free %v, want %v", freeSlots(e, "c/cpu")[:9], want)
	}
	if n, ok, _ := e.MakeReservation(0, Bid{Requests: []Request{req(1, 1, 0, 30)}, Value: 100}); !ok || n.ID != 8 {
		t.Fatalf("next id after a restore: %+v", n)
	}
}

// A request that started before now keeps its start; only the others move, to
// their earliest start from now.
func TestRestoreAtMovesOnlyRequestsThatHaveNotStarted(t *testing.T) {
	e := blocked(2, 6)
	r := Reservation{ID: 3, Requests: []Request{req(2, 4, 0, 10), req(5, 2, 0, 20)}, Starts: []Slot{1, 2}}
	moved, err := e.RestoreAt(2, r)
	if err != nil || !moved {
		t.Fatalf("moved %v, %v", moved, err)
	}
	// Slots 2-4 hold the block and the running request; slot 5 only the block.
	if got, _ := e.Reservation(3); !slices.Equal(got.Starts, []Slot{1, 6}) {
		t.Fatalf("starts %v, want the running request at 1 and the other at 6", got.Starts)
	}
}

func TestRestoreAtRefusesWhatCannotBePlacedAndChangesNothing(t *testing.T) {
	for name, c := range map[string]struct {
		now Slot
		r   Reservation
	}{
		"no room in its window":            {0, Reservation{ID: 5, Requests: []Request{req(3, 2, 0, 6)}, Starts: []Slot{0}}},
		"started before now, cannot move":  {3, Reservation{ID: 5, Requests: []Request{req(3, 2, 0, 20)}, Starts: []Slot{2}}},
		"window over by now":               {5, Reservation{ID: 5, Requests: []Request{req(3, 2, 0, 7)}, Starts: []Slot{5}}},
		"one of two requests cannot go on": {0, Reservation{ID: 5, Requests: []Request{req(1, 2, 0, 20), req(3, 6, 0, 6)}, Starts: []Slot{0, 0}}},
	} {
		e := blocked(0, 6)
		before, free := e.Reservations(), freeSlots(e, "c/cpu")
		moved, err := e.RestoreAt(c.now, c.r)
		if clearhouse.ErrorCode(err) != clearhouse.ECONFLICT || moved {
			t.Errorf("%s: moved %v, %v", name, moved, err)
		}
		if _, ok := e.Reservation(5); ok || !reflect.DeepEqual(e.Reservations(), before) || !slices.Equal(freeSlots(e, "c/cpu"), free) {
			t.Errorf("%s: a refused restore changed the plan", name)
		}
	}
	e := blocked(0, 6)
	if _, err := e.RestoreAt(0, Reservation{ID: 0, Requests: []Request{req(1, 1, 0, 5)}, Starts: []Slot{0}}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
		t.Fatalf("id 0: %v", err)
	}
}

func TestSharedUnitSlotsLeavesOutTheOwnersQuota(t *testing.T) {
	e := NewEngine(40, map[string]int64{"c/cpu": 10, "c/ram": 40}, Greedy{UnitPrice: 1})
	if _, err := e.SetQuota(0, "search", "c/cpu", 0, 0, 6); err != nil {
		t.Fatal(err)
	}
	// 8 cpu and 16 ram for 4 slots: 2 cpu beyond the quota and all the ram are
	// shared, 72 unit-slots; then 4 cpu and 8 ram, all the ram shared: 32.
	r, ok, _ := e.MakeReservation(0, Bid{Owner: "search", Value: 1e6, Requests: []Request{
		{Config: Config{"c/cpu": 1, "c/ram": 2}, Count: 8, Duration: 4, Arrival: 0, Deadline: 4},
		{Config: Config{"c/cpu": 1, "c/ram": 2}, Count: 4, Duration: 4, Arrival: 4, Deadline: 8},
	}})
	if !ok {
		t.Fatal("refused")
	}
	if a, b := r.SharedUnitSlots(0), r.SharedUnitSlots(1); a != 72 || b != 32 || r.Price != float64(a+b) {
		t.Fatalf("shared unit-slots %d and %d, price %v", a, b, r.Price)
	}
	stranger, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(2, 3, 0, 40)}, Value: 1e6})
	if got := stranger.SharedUnitSlots(0); got != 6 {
		t.Fatalf("no owner: %d shared unit-slots, want all 6", got)
	}
}

// At a fixed price of $1 a unit-slot, a one-request reservation costs exactly its
// shared unit-slots, whatever quotas its owner holds.
func TestSharedUnitSlotsIsWhatGreedyCharges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const horizon = 30
		e := NewEngine(horizon, map[string]int64{"c/cpu": 20, "c/ram": 30}, Greedy{UnitPrice: 1})
		for range rapid.IntRange(1, 20).Draw(t, "ops") {
			owner := rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "owner")
			if owner != "" && rapid.IntRange(0, 3).Draw(t, "kind") == 0 {
				e.SetQuota(0, owner, rapid.SampledFrom([]string{"c/cpu", "c/ram"}).Draw(t, "pool"),
					Slot(rapid.IntRange(0, horizon-1).Draw(t, "from")), 0, rapid.Int64Range(0, 8).Draw(t, "units"))
				continue
			}
			arr := Slot(rapid.IntRange(0, horizon-2).Draw(t, "arrival"))
			d := Slot(rapid.IntRange(1, 5).Draw(t, "duration"))
			dl := min(arr+d+Slot(rapid.IntRange(0, 6).Draw(t, "slack")), horizon)
			if dl-arr < d {
				continue
			}
			q := Request{Config: Config{"c/cpu": rapid.Int64Range(1, 2).Draw(t, "cpu"), "c/ram": rapid.Int64Range(1, 3).Draw(t, "ram")},
				Count: rapid.Int64Range(1, 5).Draw(t, "count"), Duration: d, Arrival: arr, Deadline: dl}
			r, ok, _ := e.MakeReservation(0, Bid{Owner: owner, Requests: []Request{q}, Value: 1e9})
			if ok && r.Price != float64(r.SharedUnitSlots(0)) {
				t.Fatalf("price %v, shared unit-slots %d: %+v", r.Price, r.SharedUnitSlots(0), r)
			}
		}
	})
}
