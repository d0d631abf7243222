package scheduler

import (
	"slices"
	"testing"

	"github.com/clearhouse/clearhouse"
	"pgregory.net/rapid"
)

func TestCurrentAllocationRunningAndWaiting(t *testing.T) {
	e := NewEngine(50, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	a, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(6, 5, 0, 20)}, Value: 100})
	b, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(6, 5, 2, 20)}, Value: 100}) // waits for a
	if b.Starts[0] != 5 {
		t.Fatalf("b starts at %d, want 5", b.Starts[0])
	}
	now := e.CurrentAllocation(3)
	if len(now.Running) != 1 || now.Running[0].Reservation != a.ID || now.Running[0].Units != 6 {
		t.Fatalf("running at 3: %+v", now.Running)
	}
	if len(now.Waiting) != 1 || now.Waiting[0].Reservation != b.ID || now.Waiting[0].Units != 0 || now.Waiting[0].Start != 5 {
		t.Fatalf("waiting at 3: %+v", now.Waiting)
	}
	if later := e.CurrentAllocation(7); len(later.Running) != 1 || later.Running[0].Reservation != b.ID {
		t.Fatalf("running at 7: %+v", later)
	}
}

func TestEarlyEndReturnsCapacity(t *testing.T) {
	e := NewEngine(50, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	a, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(10, 10, 0, 20)}, Value: 1000})
	if e.Free("c/cpu", 4, 10) != 0 {
		t.Fatal("setup")
	}
	if _, err := e.Update(4, Update{Ends: []JobEnd{{Reservation: a.ID, Request: 0, At: 4}}}); err != nil {
		t.Fatal(err)
	}
	if got := e.Free("c/cpu", 4, 10); got != 10 {
		t.Fatalf("free after the early end: %d, want 10", got)
	}
	if got := e.Free("c/cpu", 0, 4); got != 0 {
		t.Fatalf("the slots it ran are still used: free %d", got)
	}
	if r, _ := e.Reservation(a.ID); r.End(0) != 4 {
		t.Fatalf("end %d, want 4", r.End(0))
	}
	if len(e.CurrentAllocation(5).Running) != 0 {
		t.Fatal("an ended job is still allocated")
	}
	if done := e.Retire(5); !slices.Equal(done, []int64{a.ID}) {
		t.Fatalf("retired %v", done)
	}
}

// A request that ends in its last slot has nothing left to release, but it is
// over: a capacity drop in that slot must not re-plan it into a later slot (a
// request that started in the current slot and has not ended would move).
func TestEndInTheLastSlotKeepsTheRequestFromMoving(t *testing.T) {
	e := NewEngine(50, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	a, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(6, 1, 0, 20)}, Value: 100})
	if a.Starts[0] != 0 {
		t.Fatalf("setup: starts at %d", a.Starts[0])
	}
	if _, err := e.Update(0, Update{Ends: []JobEnd{{Reservation: a.ID, Request: 0, At: 1}}}); err != nil {
		t.Fatal(err)
	}
	rep, err := e.Update(0, Update{Capacity: []CapacityChange{{Pool: "c/cpu", From: 0, To: 1, Units: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Moved) != 0 {
		t.Fatalf("the ended request moved: %+v", rep.Moved)
	}
	if got := e.Free("c/cpu", 1, 20); got != 10 {
		t.Fatalf("free from slot 1: %d, want 10 (the ended request holds a later slot)", got)
	}
	if r, ok := e.Reservation(a.ID); ok && (r.Starts[0] != 0 || r.End(0) != 1) {
		t.Fatalf("the ended request is at [%d, %d), want [0, 1)", r.Starts[0], r.End(0))
	}
}

func TestCapacityDropMovesThenReportsAtRisk(t *testing.T) {
	e := NewEngine(40, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	flexible, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(5, 4, 0, 30)}, Value: 100}) // at 0, can move
	fixed, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(5, 4, 0, 4)}, Value: 50})      // at 0, cannot
	rep, err := e.Update(0, Update{Capacity: []CapacityChange{{Pool: "c/cpu", From: 0, To: 4, Units: 5}}})
	if err != nil {
		t.Fatal(err)
	}
	// The more valuable flexible job keeps its start; the fixed one is now at risk
	// (it cannot move), or the flexible one moves to make room for it.
	if len(rep.AtRisk)+len(rep.Moved) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if len(rep.Moved) == 1 {
		if rep.Moved[0].Reservation != flexible.ID || rep.Moved[0].To[0] < 4 {
			t.Fatalf("moved %+v", rep.Moved)
		}
	} else if rep.AtRisk[0].ID != fixed.ID {
		t.Fatalf("at risk %+v", rep.AtRisk)
	}
	// Nothing is lost: every reservation is in the plan or in the report.
	if n := len(e.Reservations()) + len(rep.AtRisk); n != 2 {
		t.Fatalf("%d reservations accounted for, want 2", n)
	}
	if e.Free("c/cpu", 0, 40) < 0 {
		t.Fatal("still overbooked after re-planning")
	}
	if e.Capacity("c/cpu", 2) != 5 || e.Capacity("c/cpu", 4) != 10 {
		t.Fatal("capacity change not applied to its range only")
	}
}

func TestBadUpdateChangesNothing(t *testing.T) {
	e := NewEngine(20, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	a, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(4, 4, 0, 10)}, Value: 100})
	for name, u := range map[string]Update{
		"unknown pool":      {Capacity: []CapacityChange{{Pool: "x/cpu", Units: 1}}},
		"negative capacity": {Capacity: []CapacityChange{{Pool: "c/cpu", Units: -1}}},
		"past the horizon":  {Capacity: []CapacityChange{{Pool: "c/cpu", From: 5, To: 99, Units: 1}}},
		"unknown job":       {Ends: []JobEnd{{Reservation: 99}}},
		"unknown request":   {Ends: []JobEnd{{Reservation: a.ID, Request: 3}}},
		"mixed":             {Ends: []JobEnd{{Reservation: a.ID, At: 1}}, Capacity: []CapacityChange{{Pool: "x/cpu", Units: 1}}},
	} {
		if _, err := e.Update(1, u); clearhouse.ErrorCode(err) == "" || err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if e.Free("c/cpu", 0, 4) != 6 || e.Capacity("c/cpu", 0) != 10 {
		t.Fatal("a refused update changed the plan")
	}
}

func TestRestoreRebuildsThePlan(t *testing.T) {
	e := NewEngine(30, map[string]int64{"c/cpu": 10}, BasicEcon{Predictor: LoadCurve{Base: 1, Steep: 4, Capacity: 10}})
	for range 4 {
		e.MakeReservation(0, Bid{Requests: []Request{req(3, 5, 0, 30)}, Value: 1e6})
	}
	e2 := NewEngine(30, map[string]int64{"c/cpu": 10}, BasicEcon{Predictor: LoadCurve{Base: 1, Steep: 4, Capacity: 10}})
	for _, r := range e.Reservations() {
		if err := e2.Restore(r); err != nil {
			t.Fatal(err)
		}
	}
	for s := Slot(0); s < 30; s++ {
		if e.Free("c/cpu", s, s+1) != e2.Free("c/cpu", s, s+1) {
			t.Fatalf("slot %d differs after a restore", s)
		}
	}
	if err := e2.Restore(e.Reservations()[0]); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
		t.Fatalf("restoring a reservation twice: %v", err)
	}
	r, ok, _ := e2.MakeReservation(0, Bid{Requests: []Request{req(1, 1, 0, 30)}, Value: 1e6})
	if !ok || r.ID != 5 {
		t.Fatalf("next id after a restore: %+v", r)
	}
}

// Re-planning after any capacity change: no slot is over capacity, every
// reservation is either still planned inside its window or reported at risk, no
// running request moved, and no reservation at risk would fit in the final plan.
func TestReplanningKeepsEveryGuaranteeItCan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const horizon = 30
		e := NewEngine(horizon, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
		for range rapid.IntRange(1, 12).Draw(t, "jobs") {
			a := Slot(rapid.IntRange(0, horizon-2).Draw(t, "arrival"))
			d := Slot(rapid.IntRange(1, 6).Draw(t, "dur"))
			dl := min(a+d+Slot(rapid.IntRange(0, 10).Draw(t, "slack")), horizon)
			if dl-a < d {
				continue
			}
			e.MakeReservation(0, Bid{Requests: []Request{req(rapid.Int64Range(1, 6).Draw(t, "w"), d, a, dl)}, Value: rapid.Float64Range(1, 1e4).Draw(t, "v")})
		}
		before := e.Reservations()
		now := Slot(rapid.IntRange(0, 10).Draw(t, "now"))
		from := Slot(rapid.IntRange(0, horizon-1).Draw(t, "from"))
		to := Slot(rapid.IntRange(int(from)+1, horizon).Draw(t, "to"))
		rep, err := e.Update(now, Update{Capacity: []CapacityChange{{Pool: "c/cpu", From: from, To: to, Units: rapid.Int64Range(0, 10).Draw(t, "units")}}})
		if err != nil {
			t.Fatal(err)
		}
		if e.Free("c/cpu", now, horizon) < 0 {
			t.Fatalf("overbooked from %d after re-planning", now)
		}
		after := map[int64]Reservation{}
		for _, r := range e.Reservations() {
			after[r.ID] = r
		}
		risk := map[int64]bool{}
		for _, r := range rep.AtRisk {
			risk[r.ID] = true
		}
		for _, r := range before {
			got, planned := after[r.ID]
			if planned == risk[r.ID] {
				t.Fatalf("reservation %d: planned %v, at risk %v", r.ID, planned, risk[r.ID])
			}
			if !planned {
				continue
			}
			q, s := got.Requests[0], got.Starts[0]
			if s < q.Arrival || s+q.Duration > q.Deadline {
				t.Fatalf("reservation %d moved outside its window: %d", r.ID, s)
			}
			if r.Starts[0] < now && s != r.Starts[0] {
				t.Fatalf("running reservation %d moved from %d to %d", r.ID, r.Starts[0], s)
			}
		}
		for _, r := range rep.AtRisk {
			if c := r; e.replace(&c, now) {
				t.Fatalf("reservation %d was dropped though it fits", r.ID)
			}
		}
	})
}

// A running request's Beyond is what it takes from shared capacity now: nothing when
// its owner's free quota covers it, the rest when it does not, and the quota is used
// once across the owner's requests running together.
func TestCurrentAllocationBeyondOwnersQuota(t *testing.T) {
	e := NewEngine(50, map[string]int64{"c/cpu": 100}, Greedy{UnitPrice: 1})
	if _, err := e.SetQuota(0, "ads", "c/cpu", 0, 0, 8); err != nil {
		t.Fatal(err)
	}
	inside, ok, err := e.MakeReservation(0, Bid{Owner: "ads", Requests: []Request{req(4, 5, 0, 5)}, Value: 100})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	now := e.CurrentAllocation(1)
	if len(now.Running) != 1 || now.Running[0].Reservation != inside.ID || now.Running[0].Beyond != nil {
		t.Fatalf("a request inside its owner's quota: %+v", now.Running)
	}
	past, ok, err := e.MakeReservation(1, Bid{Owner: "ads", Requests: []Request{req(10, 4, 1, 5)}, Value: 1000})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	now = e.CurrentAllocation(2)
	var beyond int64
	for _, a := range now.Running {
		beyond += a.Beyond["c/cpu"]
		if a.Reservation == past.ID && a.Beyond["c/cpu"] != 6 {
			t.Errorf("the second request takes %d beyond quota, want 6 (4 of the 8 are the first's)", a.Beyond["c/cpu"])
		}
	}
	if len(now.Running) != 2 || beyond != 14-8 {
		t.Fatalf("running %+v: %d beyond quota, want 6", now.Running, beyond)
	}
}
