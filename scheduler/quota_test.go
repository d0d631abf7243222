package scheduler

import (
	"testing"

	"github.com/clearhouse/clearhouse"
	"pgregory.net/rapid"
)

func TestOwnQuotaIsUsedFirstAndFree(t *testing.T) {
	e := NewEngine(40, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	if _, err := e.SetQuota(0, "search", "c/cpu", 0, 0, 6); err != nil {
		t.Fatal(err)
	}
	if e.Free("c/cpu", 0, 40) != 4 {
		t.Fatalf("shared capacity %d, want 4", e.Free("c/cpu", 0, 40))
	}
	inside, ok, _ := e.MakeReservation(0, Bid{Owner: "search", Requests: []Request{req(6, 4, 0, 4)}, Value: 1e-6})
	if !ok || inside.Price != 0 {
		t.Fatalf("inside the team's quota: %+v %v; want accepted at no charge", inside, ok)
	}
	beyond, ok, _ := e.MakeReservation(0, Bid{Owner: "search", Requests: []Request{req(3, 4, 4, 8)}, Value: 100})
	if !ok || beyond.Price != 0 {
		t.Fatalf("after the first ends the quota is free again: %+v", beyond)
	}
	over, ok, _ := e.MakeReservation(0, Bid{Owner: "search", Requests: []Request{req(8, 2, 8, 10)}, Value: 100})
	if !ok || over.Price != 4 {
		t.Fatalf("8 units with 6 of quota pay for 2 units x 2 slots: %+v", over)
	}
	if _, ok, _ := e.MakeReservation(0, Bid{Owner: "ads", Requests: []Request{req(5, 4, 0, 4)}, Value: 1e6}); ok {
		t.Fatal("a team with no quota got more than the shared capacity")
	}
	if r, ok, _ := e.MakeReservation(0, Bid{Owner: "ads", Requests: []Request{req(4, 4, 0, 4)}, Value: 1e6}); !ok || r.Price != 16 {
		t.Fatalf("the shared 4 units: %+v", r)
	}
	if got := e.QuotaInUse("search", "c/cpu", 0, 40); got != 6 {
		t.Fatalf("quota in use %d, want 6", got)
	}
	// The team cannot give up quota its reservations use, and a refusal changes nothing.
	if _, err := e.SetQuota(0, "search", "c/cpu", 0, 0, 5); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
		t.Fatalf("selling used quota: %v", err)
	}
	if e.Free("c/cpu", 10, 40) != 4 {
		t.Fatal("a refused quota change moved capacity")
	}
	// Quotas never add up to more than the pool.
	if _, err := e.SetQuota(0, "ads", "c/cpu", 0, 0, 5); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
		t.Fatalf("holding more than the pool: %v", err)
	}
	// After its reservations end it can.
	if _, err := e.SetQuota(0, "search", "c/cpu", 10, 0, 0); err != nil {
		t.Fatal(err)
	}
	if e.Free("c/cpu", 10, 40) != 10 {
		t.Fatal("sold quota did not return to shared capacity")
	}
	// Cancelling gives the quota back.
	if err := e.Cancel(0, inside.ID); err != nil || e.QuotaInUse("search", "c/cpu", 0, 4) != 0 {
		t.Fatalf("cancel: %v, in use %d", err, e.QuotaInUse("search", "c/cpu", 0, 4))
	}
}

func TestEconChargesOnlyBeyondTheQuota(t *testing.T) {
	e := NewEngine(40, map[string]int64{"c/cpu": 10}, BasicEcon{Predictor: LoadCurve{Base: 1, Steep: 4, Capacity: 10}})
	e.SetQuota(0, "search", "c/cpu", 0, 0, 5)
	inside, _, _ := e.QuoteFor(0, "search", []Request{req(5, 4, 0, 10)})
	beyond, _, _ := e.QuoteFor(0, "search", []Request{req(7, 4, 0, 10)})
	stranger, _, _ := e.QuoteFor(0, "", []Request{req(2, 4, 0, 10)})
	if inside.Price != 0 || beyond.Price <= 0 || beyond.Price != stranger.Price {
		t.Fatalf("inside %v, beyond %v, the same 2 units for a team with no quota %v", inside.Price, beyond.Price, stranger.Price)
	}
}

func TestQuotaBoughtFromSharedCapacityReplansSharedReservations(t *testing.T) {
	e := NewEngine(20, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	fixed, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(8, 4, 0, 4)}, Value: 100})
	moving, _, _ := e.MakeReservation(0, Bid{Requests: []Request{req(2, 2, 0, 20)}, Value: 100})
	rep, err := e.SetQuota(0, "search", "c/cpu", 0, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.AtRisk) != 1 || rep.AtRisk[0].ID != fixed.ID {
		t.Fatalf("at risk %+v, want the 8-unit job that can no longer fit", rep.AtRisk)
	}
	if _, ok := e.Reservation(moving.ID); !ok {
		t.Fatal("the 2-unit job was dropped though it fits")
	}
	if e.Free("c/cpu", 0, 20) < 0 {
		t.Fatal("overbooked")
	}
}

// With quotas held and traded at random, no slot ever holds more than the pool's
// capacity, no owner uses more quota than it holds, and the shared and own free
// capacity agree with the reservations in the plan.
func TestQuotasNeverOverbook(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const horizon, capacity = 24, 12
		owners := []string{"", "a", "b"}
		e := NewEngine(horizon, map[string]int64{"c/cpu": capacity},
			rapid.SampledFrom([]Algorithm{Greedy{UnitPrice: 1}, BasicEcon{Predictor: LoadCurve{Base: 1, Steep: 3, Capacity: capacity}}}).Draw(t, "algo"))
		quota := map[string][]int64{"a": make([]int64, horizon), "b": make([]int64, horizon)}
		for range rapid.IntRange(1, 25).Draw(t, "ops") {
			owner := rapid.SampledFrom(owners).Draw(t, "owner")
			if owner != "" && rapid.IntRange(0, 3).Draw(t, "kind") == 0 {
				from := Slot(rapid.IntRange(0, horizon-1).Draw(t, "from"))
				units := rapid.Int64Range(0, 8).Draw(t, "units")
				if _, err := e.SetQuota(0, owner, "c/cpu", from, 0, units); err == nil {
					for s := from; s < horizon; s++ {
						quota[owner][s] = units
					}
				}
				continue
			}
			a := Slot(rapid.IntRange(0, horizon-2).Draw(t, "arrival"))
			d := Slot(rapid.IntRange(1, 5).Draw(t, "dur"))
			dl := min(a+d+Slot(rapid.IntRange(0, 6).Draw(t, "slack")), horizon)
			if dl-a < d {
				continue
			}
			e.MakeReservation(0, Bid{Owner: owner, Requests: []Request{req(rapid.Int64Range(1, 10).Draw(t, "w"), d, a, dl)}, Value: 1e9})
		}
		for s := Slot(0); s < horizon; s++ {
			var total int64
			ownUse := map[string]int64{}
			for _, r := range e.Reservations() {
				if r.Starts[0] <= s && s < r.End(0) {
					total += r.Requests[0].Count
					ownUse[r.Owner] += r.own(0, "c/cpu", s)
				}
			}
			held := quota["a"][s] + quota["b"][s]
			if total > capacity {
				t.Fatalf("slot %d: %d units promised of %d", s, total, capacity)
			}
			for _, o := range []string{"a", "b"} {
				if ownUse[o] > quota[o][s] {
					t.Fatalf("slot %d: %s uses %d of its %d quota", s, o, ownUse[o], quota[o][s])
				}
				if got := e.Own(o, "c/cpu", s, s+1, nil)[0]; got != quota[o][s]-ownUse[o] {
					t.Fatalf("slot %d: %s's free quota %d, want %d", s, o, got, quota[o][s]-ownUse[o])
				}
			}
			if shared := total - ownUse["a"] - ownUse["b"]; e.Free("c/cpu", s, s+1) != capacity-held-shared {
				t.Fatalf("slot %d: shared free %d, want %d", s, e.Free("c/cpu", s, s+1), capacity-held-shared)
			}
		}
	})
}

// Requests of one bid share the owner's free quota: with 4 units of quota, two
// overlapping requests of 4 units pay for the second's units, and the charge split
// by SharedUnitSlots covers the whole price.
func TestRequestsOfOneBidDoNotShareTheSameFreeQuota(t *testing.T) {
	e := NewEngine(40, map[string]int64{"c/cpu": 20}, Greedy{UnitPrice: 1})
	if _, err := e.SetQuota(0, "search", "c/cpu", 0, 0, 4); err != nil {
		t.Fatal(err)
	}
	reqs := []Request{req(4, 5, 0, 10), req(4, 5, 0, 10)}
	q, ok, err := e.QuoteFor(0, "search", reqs)
	if err != nil || !ok || q.Price != 20 {
		t.Fatalf("quote %+v %v %v: want the second request's 4 units x 5 slots priced", q, ok, err)
	}
	r, ok, _ := e.MakeReservation(0, Bid{Owner: "search", Requests: reqs, Value: 100})
	if !ok || r.Price != 20 || r.SharedUnitSlots(0)+r.SharedUnitSlots(1) != 20 {
		t.Fatalf("reservation %+v: price %v, shared unit-slots %d and %d", r, r.Price, r.SharedUnitSlots(0), r.SharedUnitSlots(1))
	}
	if e.Free("c/cpu", 0, 40) != 12 || e.QuotaInUse("search", "c/cpu", 0, 40) != 4 {
		t.Fatalf("free %d, quota in use %d", e.Free("c/cpu", 0, 40), e.QuotaInUse("search", "c/cpu", 0, 40))
	}
}
