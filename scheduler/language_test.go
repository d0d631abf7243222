package scheduler

import (
	"testing"

	"github.com/clearhouse/clearhouse"
	"pgregory.net/rapid"
)

var languages = []BidLanguage{"", BidAll, BidAny, BidOrder, BidOrderNoGap}

// drawAlgorithm is one of the algorithms, none of which learns.
func drawAlgorithm(t *rapid.T, capacity int64) Algorithm {
	switch rapid.IntRange(0, 3).Draw(t, "algorithm") {
	case 0:
		return Greedy{UnitPrice: 1}
	case 1:
		return OnDemandFit{UnitPrice: 1}
	case 2:
		return BasicEcon{Predictor: wavy{LoadCurve{Base: 1, Steep: 5, Capacity: capacity}}}
	}
	return BasicEcon{Predictor: LoadCurve{Base: 1, Steep: 5, Capacity: capacity}, Floor: 0.5}
}

// drawBid draws a bid of one to three requests over two pools of one cluster,
// arriving from now on inside a horizon.
func drawBid(t *rapid.T, now, horizon Slot) Bid {
	var reqs []Request
	for range rapid.IntRange(1, 3).Draw(t, "requests") {
		d := Slot(rapid.IntRange(1, 5).Draw(t, "duration"))
		a := now + Slot(rapid.IntRange(0, int(horizon-now-d)).Draw(t, "arrival"))
		dl := min(a+d+Slot(rapid.IntRange(0, 12).Draw(t, "slack")), horizon)
		r := Request{Config: Config{rapid.SampledFrom([]string{"c/cpu", "c/ram"}).Draw(t, "pool"): 1},
			Count: rapid.Int64Range(1, 6).Draw(t, "count"), Duration: d, Arrival: a, Deadline: dl}
		if rapid.IntRange(0, 4).Draw(t, "overhead?") == 0 {
			r.Overhead = Config{"c/cpu": rapid.Int64Range(0, 2).Draw(t, "overhead")}
		}
		reqs = append(reqs, r)
	}
	return Bid{Requests: reqs, Value: rapid.Float64Range(1, 1e4).Draw(t, "value"), Language: rapid.SampledFrom(languages).Draw(t, "language")}
}

// checkPlan fails when a slot from now on is over capacity or a reservation
// breaks its window or its language.
func checkPlan(t *rapid.T, e *Engine, now Slot) {
	for _, p := range []string{"c/cpu", "c/ram"} {
		if f := e.Free(p, now, e.Horizon()); f < 0 {
			t.Fatalf("%s overbooked from slot %d: %d free", p, now, f)
		}
	}
	for _, r := range e.Reservations() {
		if !keepsLanguage(&r) {
			t.Fatalf("reservation %d breaks its window or language %s: starts %v requests %+v", r.ID, r.Language.or(), r.Starts, r.Requests)
		}
	}
}

// Every language places its requests as YARN's interpreters say: ANY one of
// them (the cheapest), ORDER in sequence, ORDER_NO_GAP end to start, ALL
// anywhere in their windows; overhead is reserved; nothing is overbooked.
func TestBidLanguagesPlaceAsTheySay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const horizon = 40
		e := NewEngine(horizon, map[string]int64{"c/cpu": 12, "c/ram": 12}, drawAlgorithm(t, 12))
		now := Slot(0)
		for range rapid.IntRange(1, 10).Draw(t, "bids") {
			now += Slot(rapid.IntRange(0, 2).Draw(t, "elapsed"))
			if now >= horizon-6 {
				break
			}
			bid := drawBid(t, now, horizon)
			quote, placeable, err := e.QuoteBid(now, bid)
			if err != nil {
				t.Fatal(err)
			}
			if bid.Language == BidAny && placeable {
				// The chosen request is priced lowest of those that fit alone
				// (ties: the first).
				for i := range bid.Requests {
					alone, fits, _ := e.quote(now, "", bid.Requests[i:i+1])
					if fits && (alone.Price < quote.Price || (alone.Price == quote.Price && i < quote.Chosen)) {
						t.Fatalf("ANY chose request %d at %v, request %d alone costs %v", quote.Chosen, quote.Price, i, alone.Price)
					}
				}
			}
			before := e.FreeSlots("c/cpu", 0, horizon, nil)
			r, ok, err := e.MakeReservation(now, bid)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (placeable && quote.Price <= bid.Value) {
				t.Fatalf("accepted %v, quote %+v placeable %v value %v", ok, quote, placeable, bid.Value)
			}
			if !ok {
				continue
			}
			switch bid.Language.or() {
			case BidAny:
				if len(r.Requests) != 1 || r.Requests[0].Duration != bid.Requests[r.Chosen].Duration || r.Requests[0].Arrival != bid.Requests[r.Chosen].Arrival {
					t.Fatalf("ANY reserved %+v, chosen %d of %+v", r.Requests, r.Chosen, bid.Requests)
				}
			case BidOrder:
				for k := 1; k < len(r.Requests); k++ {
					if r.Starts[k] < r.Starts[k-1]+r.Requests[k-1].Duration {
						t.Fatalf("ORDER: request %d starts at %d before %d ends", k, r.Starts[k], k-1)
					}
				}
			case BidOrderNoGap:
				for k := 1; k < len(r.Requests); k++ {
					if r.Starts[k] != r.Starts[k-1]+r.Requests[k-1].Duration {
						t.Fatalf("ORDER_NO_GAP: request %d starts at %d, not when %d ends", k, r.Starts[k], k-1)
					}
				}
			}
			for i, q := range r.Requests {
				if r.Starts[i] < max(q.Arrival, now) {
					t.Fatalf("request %d starts at %d, before its arrival %d or now %d", i, r.Starts[i], q.Arrival, now)
				}
			}
			// The plan took exactly the actual units (overhead included) of cpu.
			after := e.FreeSlots("c/cpu", 0, horizon, nil)
			for s := range Slot(horizon) {
				var took int64
				for i, q := range r.Requests {
					if s >= r.Starts[i] && s < r.End(i) {
						took += q.Units("c/cpu")
					}
				}
				if before[s]-after[s] != took {
					t.Fatalf("slot %d: the plan took %d cpu, the reservation holds %d", s, before[s]-after[s], took)
				}
			}
			checkPlan(t, e, now)
		}
	})
}

// ANY takes the request priced lowest; ORDER and ORDER_NO_GAP refuse what
// cannot keep the sequence; a bad language is EINVALID.
func TestBidLanguagesByHand(t *testing.T) {
	e := NewEngine(40, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	// ANY: 8 units for 5 slots ($40) or 2 units for 10 slots ($20): the second.
	o, ok, err := e.QuoteBid(0, Bid{Language: BidAny, Requests: []Request{req(8, 5, 0, 20), req(2, 10, 0, 20)}})
	if err != nil || !ok || o.Chosen != 1 || o.Price != 20 || len(o.Starts) != 1 {
		t.Fatalf("ANY: %+v %v %v", o, ok, err)
	}
	// Map (10 units, 4 slots) then reduce (5 units, 2 slots) in [0, 10).
	r, ok, err := e.MakeReservation(0, Bid{Language: BidOrder, Requests: []Request{req(10, 4, 0, 10), req(5, 2, 0, 10)}, Value: 100})
	if err != nil || !ok || r.Starts[0] != 0 || r.Starts[1] != 4 {
		t.Fatalf("ORDER: %+v %v %v", r, ok, err)
	}
	// The same with reduce's deadline at 5: no room for it after map.
	if _, ok, _ := e.QuoteBid(0, Bid{Language: BidOrder, Requests: []Request{req(2, 4, 0, 10), req(2, 2, 0, 5)}}); ok {
		t.Fatal("ORDER placed a reduce that cannot follow its map")
	}
	// NO_GAP: slots [0, 6) hold 10+5 units; a 6-unit train of 3+3 slots fits
	// from slot 6 only.
	o, ok, _ = e.QuoteBid(0, Bid{Language: BidOrderNoGap, Requests: []Request{req(6, 3, 0, 20), req(6, 3, 0, 20)}})
	if !ok || o.Starts[0] != 6 || o.Starts[1] != 9 {
		t.Fatalf("NO_GAP: %+v %v", o, ok)
	}
	if _, _, err := e.QuoteBid(0, Bid{Language: "SOME", Requests: []Request{req(1, 1, 0, 5)}}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
		t.Fatalf("unknown language: %v", err)
	}
	// Overhead: 4 units of config and 3 of overhead take 7.
	f := NewEngine(10, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	q := req(4, 2, 0, 10)
	q.Overhead = Config{"c/cpu": 3}
	if r, ok, _ := f.MakeReservation(0, Bid{Requests: []Request{q}, Value: 100}); !ok || r.Price != 14 || f.Free("c/cpu", 0, 2) != 3 {
		t.Fatalf("overhead: %+v %v, free %d", r, ok, f.Free("c/cpu", 0, 2))
	}
	q.Overhead = Config{"c/gpu": 1}
	if _, _, err := f.QuoteBid(0, Bid{Requests: []Request{q}}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
		t.Fatalf("overhead in no pool: %v", err)
	}
}
