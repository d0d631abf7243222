package scheduler

import (
	"testing"

	"github.com/clearhouse/clearhouse"
)

// waiting returns the waiting assignment of a reservation's request.
func waiting(t *testing.T, a Allocation, id int64, i int) Assignment {
	t.Helper()
	for _, w := range a.Waiting {
		if w.Reservation == id && w.Request == i {
			return w
		}
	}
	t.Fatalf("reservation %d request %d is not waiting at %d: %+v", id, i, a.Now, a.Waiting)
	return Assignment{}
}

// An early end frees capacity; a waiting reservation is then offered "may start
// now", and starting it early moves it and frees its planned slots.
func TestAnEarlyEndLetsAWaitingReservationStartNow(t *testing.T) {
	e := NewEngine(50, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	a, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(8, 10, 0, 20)}, Value: 1000})
	b, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(8, 4, 2, 30)}, Value: 1000}) // waits for a: slots [10, 14)
	if b.Starts[0] != 10 {
		t.Fatalf("setup: b starts at %d", b.Starts[0])
	}
	before := e.Free("c/cpu", 0, 50)
	if w := waiting(t, e.CurrentAllocation(3), b.ID, 0); w.MayStartNow {
		t.Fatal("b may start while a holds the capacity")
	}
	if e.Free("c/cpu", 0, 50) != before {
		t.Fatal("reading the allocation changed the plan")
	}
	if _, err := e.Update(4, Update{Ends: []JobEnd{{Reservation: a.ID, At: 4}}}); err != nil {
		t.Fatal(err)
	}
	if w := waiting(t, e.CurrentAllocation(4), b.ID, 0); !w.MayStartNow {
		t.Fatal("b is not offered the capacity a returned")
	}
	rep, err := e.Update(4, Update{Starts: []JobStart{{Reservation: b.ID, At: 4}}})
	if err != nil || len(rep.Refused) != 0 {
		t.Fatalf("%v %+v", err, rep)
	}
	got, _ := e.Reservation(b.ID)
	if got.Starts[0] != 4 || e.Free("c/cpu", 8, 14) != 10 || e.Free("c/cpu", 4, 8) != 2 {
		t.Fatalf("b starts at %d; free [4,8) %d, [8,14) %d", got.Starts[0], e.Free("c/cpu", 4, 8), e.Free("c/cpu", 8, 14))
	}
}

// Requests marked "may start now" fit together, not only one by one.
func TestMayStartNowMarksOnlyWhatFitsTogether(t *testing.T) {
	e := NewEngine(50, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	blocker, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(10, 10, 0, 10)}, Value: 1000})
	x, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(6, 3, 1, 30)}, Value: 1000})
	y, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(6, 3, 1, 30)}, Value: 1000})
	e.Update(2, Update{Ends: []JobEnd{{Reservation: blocker.ID, At: 2}}})
	a := e.CurrentAllocation(2)
	if !waiting(t, a, x.ID, 0).MayStartNow || waiting(t, a, y.ID, 0).MayStartNow {
		t.Fatalf("want only the first of two 6-unit jobs on 10 units: %+v", a.Waiting)
	}
	// Starting both anyway: the second is refused and keeps its planned start.
	rep, err := e.Update(2, Update{Starts: []JobStart{{Reservation: x.ID, At: 2}, {Reservation: y.ID, At: 2}}})
	if err != nil || len(rep.Refused) != 1 || rep.Refused[0].Reservation != y.ID {
		t.Fatalf("%v %+v", err, rep)
	}
	if got, _ := e.Reservation(y.ID); got.Starts[0] != y.Starts[0] {
		t.Fatalf("the refused start moved y to %d", got.Starts[0])
	}
}

// ORDER: the reduce may start early only once the map has ended; an
// ORDER_NO_GAP train never starts early; no start precedes the arrival.
func TestEarlyStartsKeepTheLanguage(t *testing.T) {
	e := NewEngine(60, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	blocker, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(10, 10, 0, 10)}, Value: 1000})
	mr, _, _ := e.MakeReservation(0, Bid{Language: BidOrder, Requests: []Request{req(4, 4, 0, 40), req(4, 4, 0, 40)}, Value: 1000})
	train, _, _ := e.MakeReservation(0, Bid{Language: BidOrderNoGap, Requests: []Request{req(2, 2, 0, 40), req(2, 2, 0, 40)}, Value: 1000})
	late, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(1, 2, 6, 40)}, Value: 1000})
	e.Update(1, Update{Ends: []JobEnd{{Reservation: blocker.ID, At: 1}}})
	a := e.CurrentAllocation(1)
	if !waiting(t, a, mr.ID, 0).MayStartNow || waiting(t, a, mr.ID, 1).MayStartNow {
		t.Fatal("ORDER: the map may start, the reduce may not before the map ends")
	}
	if waiting(t, a, train.ID, 0).MayStartNow {
		t.Fatal("an ORDER_NO_GAP train may not start early")
	}
	for _, w := range a.Waiting {
		if w.Reservation == late.ID {
			t.Fatal("a reservation waits before its arrival")
		}
	}
	for _, st := range []JobStart{{Reservation: mr.ID, Request: 1, At: 1}, {Reservation: train.ID, At: 1}, {Reservation: late.ID, At: 1}, {Reservation: mr.ID, At: 2}} {
		if _, err := e.Update(1, Update{Starts: []JobStart{st}}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Errorf("start %+v: %v, want EINVALID", st, err)
		}
	}
	// Map starts now and ends early; the reduce may then start as it ends.
	if _, err := e.Update(1, Update{Starts: []JobStart{{Reservation: mr.ID, At: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(3, Update{Ends: []JobEnd{{Reservation: mr.ID, At: 3}}, Starts: []JobStart{{Reservation: mr.ID, Request: 1, At: 3}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Reservation(mr.ID); got.Starts[1] != 3 {
		t.Fatalf("reduce starts at %d, want 3", got.Starts[1])
	}
}

// Under-use returns the unused units of the current slot at once; reporting
// again replaces the report; an end in that slot releases each unit once; what
// was not used reaches learners.
func TestUnderUseReturnsCapacityAndIsLearned(t *testing.T) {
	var seen []Use
	e := NewEngine(50, map[string]int64{"c/cpu": 10}, useRecorder{Greedy{UnitPrice: 1}, &seen})
	a, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(8, 10, 0, 20)}, Value: 1000})
	for range 2 { // the same report twice changes nothing more
		if _, err := e.Update(3, Update{Usage: []Usage{{Reservation: a.ID, Pool: "c/cpu", Units: 5}}}); err != nil {
			t.Fatal(err)
		}
	}
	if e.Free("c/cpu", 3, 4) != 5 || e.Free("c/cpu", 4, 10) != 2 {
		t.Fatalf("free at 3: %d, want 5; after: %d, want 2", e.Free("c/cpu", 3, 4), e.Free("c/cpu", 4, 10))
	}
	e.Update(3, Update{Usage: []Usage{{Reservation: a.ID, Pool: "c/cpu", Units: 7}}}) // replaces: 1 unused
	if e.Free("c/cpu", 3, 4) != 3 {
		t.Fatalf("free at 3 after the second report: %d, want 3", e.Free("c/cpu", 3, 4))
	}
	e.Update(4, Update{Usage: []Usage{{Reservation: a.ID, Pool: "c/cpu", Units: 2}}}) // 6 unused at 4
	e.Update(4, Update{Ends: []JobEnd{{Reservation: a.ID, At: 4}}})
	if e.Free("c/cpu", 4, 20) != 10 {
		t.Fatalf("after the end: free %d, want 10 (each unit released once)", e.Free("c/cpu", 4, 20))
	}
	e.Retire(20)
	// Ran slots [0, 4): 32 unit-slots, 1 unused at slot 3 (slot 4 no longer counts).
	if len(seen) != 1 || seen[0].Reserved[0] != 80 || seen[0].Used[0] != 31 {
		t.Fatalf("learners were told %+v, want 80 reserved and 31 used", seen)
	}
}

type useRecorder struct {
	Greedy
	seen *[]Use
}

func (u useRecorder) ObserveUse(x Use) { *u.seen = append(*u.seen, x) }

// Refused bids and reservations not honoured are lost value, per pool and slot.
func TestLostValueIsRecordedPerPoolAndDay(t *testing.T) {
	e := NewEngine(600, map[string]int64{"c/cpu": 10, "c/ram": 10}, Greedy{UnitPrice: 1})
	two := Request{Config: Config{"c/cpu": 1, "c/ram": 3}, Count: 2, Duration: 5, Arrival: 290, Deadline: 300}
	if _, ok, _ := e.MakeReservation(0, Bid{ID: 7, Requests: []Request{two}, Value: 10}); ok { // costs 40
		t.Fatal("setup: accepted below the price")
	}
	kept, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(10, 5, 10, 15)}, Value: 100})
	if _, ok, _ := e.MakeReservation(0, Bid{Requests: []Request{req(1, 5, 10, 15)}, Value: 100}); ok {
		t.Fatal("setup: placed beyond capacity")
	}
	if rep, _ := e.Update(0, Update{Capacity: []CapacityChange{{Pool: "c/cpu", From: 10, To: 15, Units: 5}}}); len(rep.AtRisk) != 1 {
		t.Fatal("setup: the reservation should be at risk")
	}
	lost := e.TakeLostValue()
	want := []Lost{
		{Reservation: 7, Pool: "c/cpu", Slot: 290, Value: 2.5, Reason: LostPricedOut},
		{Reservation: 7, Pool: "c/ram", Slot: 290, Value: 7.5, Reason: LostPricedOut},
		{Pool: "c/cpu", Slot: 10, Value: 100, Reason: LostNoRoom},
		{Reservation: kept.ID, Pool: "c/cpu", Slot: 10, Value: 100, Reason: LostNotHonoured},
	}
	if len(lost) != len(want) {
		t.Fatalf("lost %+v", lost)
	}
	for i := range want {
		if lost[i] != want[i] {
			t.Fatalf("lost[%d] = %+v, want %+v", i, lost[i], want[i])
		}
	}
	if len(e.LostValue()) != 0 {
		t.Fatal("TakeLostValue did not forget")
	}
	days := LostByDay(lost, 288)
	if len(days) != 3 || days[0] != (LostDay{Pool: "c/cpu", Day: 0, NoRoom: 100, NotHonoured: 100}) ||
		days[1] != (LostDay{Pool: "c/cpu", Day: 1, PricedOut: 2.5}) || days[2] != (LostDay{Pool: "c/ram", Day: 1, PricedOut: 7.5}) {
		t.Fatalf("by day: %+v", days)
	}
}
