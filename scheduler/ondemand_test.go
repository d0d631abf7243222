package scheduler

import "testing"

// ERA section 4: the on-demand algorithm "accepts jobs if there are enough
// available resources to start and run them (availability is checked only for
// the immediate time, ignoring the duration that the resources are
// requested). It schedules accepted jobs to run immediately and charges a
// fixed price." So it over-commits: a job accepted on the current slot's free
// units alone is reported at risk when a later slot cannot hold it.
func TestOnDemandChecksOnlyTheImmediateTimeAndOverCommits(t *testing.T) {
	e := NewEngine(50, map[string]int64{"c/cpu": 4}, OnDemand{UnitPrice: 2})
	// The cloud announces that from slot 5 only 2 units are left.
	if _, err := e.Update(0, Update{Capacity: []CapacityChange{{Pool: "c/cpu", From: 5, To: 10, Units: 2}}}); err != nil {
		t.Fatal(err)
	}
	// 4 units for 8 slots from slot 3: free now, not from slot 5.
	r, ok, err := e.MakeReservation(3, Bid{Requests: []Request{req(4, 8, 0, 20)}, Value: 100})
	if err != nil || !ok || r.Starts[0] != 3 || r.Price != 2*4*8 {
		t.Fatalf("paper's on-demand: %+v %v %v; want accepted, starting now (3), at $2 x 4 units x 8 slots", r, ok, err)
	}
	if fit, ok, _ := NewEngine(50, map[string]int64{"c/cpu": 4}, OnDemandFit{UnitPrice: 2}).Quote(3, []Request{req(4, 8, 0, 20)}); !ok || fit.Starts[0] != 3 {
		t.Fatalf("setup: with the capacity whole, on-demand-fit takes it too: %+v %v", fit, ok)
	}
	// Nothing free now: refused, even with room later in its window.
	if _, ok, _ := e.MakeReservation(3, Bid{Requests: []Request{req(1, 2, 0, 40)}, Value: 100}); ok {
		t.Fatal("on-demand accepted a job with no free unit now")
	}
	// At the next update the engine re-plans the over-committed slots: the
	// running job cannot be held at slot 5, so it is at risk (late).
	rep, err := e.Update(4, Update{})
	if err != nil || len(rep.AtRisk) != 1 || rep.AtRisk[0].ID != r.ID {
		t.Fatalf("update after the over-commit: %+v %v; want reservation %d at risk", rep, err, r.ID)
	}
	if e.Free("c/cpu", 4, 50) < 0 {
		t.Fatal("the plan is still over capacity after the update")
	}
}

// OnDemandFit (the product's ondemand policy) refuses the same job: its whole
// run must fit from now.
func TestOnDemandFitNeverOverCommits(t *testing.T) {
	e := NewEngine(50, map[string]int64{"c/cpu": 4}, OnDemandFit{UnitPrice: 2})
	if _, err := e.Update(0, Update{Capacity: []CapacityChange{{Pool: "c/cpu", From: 5, To: 10, Units: 2}}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := e.MakeReservation(3, Bid{Requests: []Request{req(4, 8, 0, 20)}, Value: 100}); ok {
		t.Fatal("on-demand-fit accepted a run the capacity cannot hold")
	}
}
