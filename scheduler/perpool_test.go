package scheduler

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse"
	"pgregory.net/rapid"
)

// wavy is a predictor whose price changes from slot to slot, so that the cheapest
// start is rarely the earliest.
type wavy struct{ LoadCurve }

func (w wavy) Price(pool string, slot, now Slot, quantity int64) float64 {
	return w.LoadCurve.Price(pool, slot, now, quantity) * (1.5 + math.Sin(float64(slot)))
}

var testPools = []string{"c/cpu", "c/gpu", "c/ram"}

// With every pool on one policy, PerPool offers exactly what the policy's own
// algorithm offers: same starts, same price to the last bit, same accept
// decisions, with quotas, several pools and several requests per bid.
func TestPerPoolWithOnePolicyOffersWhatItsAlgorithmOffers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const horizon = 40
		capacity := map[string]int64{}
		for _, p := range testPools {
			capacity[p] = rapid.Int64Range(4, 30).Draw(t, "capacity")
		}
		kind := rapid.SampledFrom([]string{"econ", "greedy", "ondemand"}).Draw(t, "kind")
		price := rapid.Float64Range(0, 3).Draw(t, "price")
		curve := LoadCurve{Base: rapid.Float64Range(0.1, 3).Draw(t, "base"), Steep: rapid.Float64Range(1, 8).Draw(t, "steep"), Capacity: 20}
		shape := rapid.IntRange(0, 2).Draw(t, "predictor")
		listed := rapid.SliceOfNDistinct(rapid.SampledFrom(testPools), 0, len(testPools), rapid.ID).Draw(t, "listed")
		// Each engine gets fresh algorithms, so learners see only their own engine.
		algos := func() (Algorithm, PerPool) {
			var pred Predictor
			switch shape {
			case 0:
				pred = curve
			case 1:
				pred = wavy{curve}
			default:
				pred = NewSeasonal(300)
			}
			pol := PoolPolicy{Algorithm: kind, UnitPrice: price, Predictor: pred}
			pp := PerPool{Policies: map[string]PoolPolicy{}, Default: pol}
			for _, p := range listed {
				pp.Policies[p] = pol
			}
			switch kind {
			case "econ":
				return BasicEcon{Predictor: pred, Floor: price}, pp
			case "greedy":
				return Greedy{UnitPrice: price}, pp
			}
			return OnDemandFit{UnitPrice: price}, pp
		}
		base, _ := algos()
		_, pp := algos()
		want, got := NewEngine(horizon, capacity, base), NewEngine(horizon, capacity, pp)
		for range rapid.IntRange(1, 20).Draw(t, "ops") {
			owner := rapid.SampledFrom([]string{"", "a"}).Draw(t, "owner")
			if owner != "" && rapid.IntRange(0, 4).Draw(t, "kind") == 0 {
				pool := rapid.SampledFrom(testPools).Draw(t, "pool")
				from := Slot(rapid.IntRange(0, horizon-1).Draw(t, "from"))
				units := rapid.Int64Range(0, 6).Draw(t, "units")
				_, errW := want.SetQuota(0, owner, pool, from, 0, units)
				_, errG := got.SetQuota(0, owner, pool, from, 0, units)
				if (errW == nil) != (errG == nil) {
					t.Fatalf("quota: %v and %v", errW, errG)
				}
				continue
			}
			now := Slot(rapid.IntRange(0, 10).Draw(t, "now"))
			var reqs []Request
			for range rapid.IntRange(1, 3).Draw(t, "requests") {
				cfg := Config{}
				for _, p := range rapid.SliceOfNDistinct(rapid.SampledFrom(testPools), 1, len(testPools), rapid.ID).Draw(t, "pools") {
					cfg[p] = rapid.Int64Range(1, 3).Draw(t, "units")
				}
				arr := Slot(rapid.IntRange(0, horizon-2).Draw(t, "arrival"))
				d := Slot(rapid.IntRange(1, 6).Draw(t, "duration"))
				dl := min(arr+d+Slot(rapid.IntRange(0, 12).Draw(t, "slack")), horizon)
				if dl-arr < d || dl-d < now {
					continue
				}
				reqs = append(reqs, Request{Config: cfg, Count: rapid.Int64Range(1, 4).Draw(t, "count"), Duration: d, Arrival: arr, Deadline: dl})
			}
			if len(reqs) == 0 {
				continue
			}
			ask := Ask{Owner: owner, Requests: reqs, Now: now}
			ow, okW := base.Offer(want, ask)
			og, okG := pp.Offer(got, ask)
			if okW != okG || ow.Price != og.Price || !slices.Equal(ow.Starts, og.Starts) {
				t.Fatalf("%s: %+v %v, per-pool %+v %v", base.Name(), ow, okW, og, okG)
			}
			value := rapid.Float64Range(1, 300).Draw(t, "value")
			rw, okW, errW := want.MakeReservation(now, Bid{Owner: owner, Requests: reqs, Value: value})
			rg, okG, errG := got.MakeReservation(now, Bid{Owner: owner, Requests: reqs, Value: value})
			if okW != okG || (errW == nil) != (errG == nil) || rw.Price != rg.Price || !slices.Equal(rw.Starts, rg.Starts) {
				t.Fatalf("%s reserved %+v %v %v, per-pool %+v %v %v", base.Name(), rw, okW, errW, rg, okG, errG)
			}
		}
	})
}

// mixedEngine: cpu priced by econ on a load curve (floor $0.5), gpu on demand at
// $3, every other pool (ram) greedy at $0.25.
func mixedEngine(curve LoadCurve) *Engine {
	return NewEngine(40, map[string]int64{"c/cpu": 10, "c/ram": 100, "c/gpu": 4}, PerPool{
		Policies: map[string]PoolPolicy{
			"c/cpu": {Algorithm: "econ", UnitPrice: 0.5, Predictor: curve},
			"c/gpu": {Algorithm: "ondemand", UnitPrice: 3},
		},
		Default: PoolPolicy{Algorithm: "greedy", UnitPrice: 0.25},
	})
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

func TestPerPoolMixedPoliciesTakeTheStrictestPlacementAndSumThePoolsPrices(t *testing.T) {
	curve := LoadCurve{Base: 1, Steep: 8, Capacity: 10}
	unit := func(left int64) float64 { return max(0.5, curve.Price("c/cpu", 0, 0, left)) }
	e := mixedEngine(curve)
	if _, ok, _ := e.MakeReservation(0, Bid{Requests: []Request{req(6, 4, 0, 4)}, Value: 1e6}); !ok {
		t.Fatal("setup: 6 cpu over slots 0-3 refused")
	}

	// cpu (econ) and ram (greedy): econ's placement, the cheapest start, after the
	// loaded slots; greedy alone would start at once.
	both := Request{Config: Config{"c/cpu": 1, "c/ram": 2}, Count: 3, Duration: 4, Arrival: 0, Deadline: 20}
	o, ok, _ := e.Quote(0, []Request{both})
	// Each of the 3 cpu units at its own price (ERA Algorithm 1): demand 10, 9, 8.
	if want := 4*(unit(10)+unit(9)+unit(8)) + 4*6*0.25; !ok || o.Starts[0] != 4 || !near(o.Price, want) {
		t.Fatalf("econ and greedy pools: %+v %v; want a start at 4 for %v", o, ok, want)
	}
	ram := Request{Config: Config{"c/ram": 2}, Count: 3, Duration: 4, Arrival: 0, Deadline: 20}
	if o, ok, _ := e.Quote(0, []Request{ram}); !ok || o.Starts[0] != 0 || o.Price != 6 {
		t.Fatalf("a greedy pool alone: %+v %v; want a start at 0 for $6", o, ok)
	}

	// cpu (econ) and gpu (on demand): only a start now, cpu priced by econ at the
	// load it meets, gpu at its fixed price.
	now := Request{Config: Config{"c/cpu": 1, "c/gpu": 1}, Count: 1, Duration: 4, Arrival: 0, Deadline: 20}
	o, ok, _ = e.Quote(2, []Request{now})
	if want := 2*unit(4) + 2*unit(10) + 4*3.0; !ok || o.Starts[0] != 2 || !near(o.Price, want) {
		t.Fatalf("econ and on-demand pools: %+v %v; want a start at 2 for %v", o, ok, want)
	}
	later := now
	later.Arrival = 5
	if _, ok, _ := e.Quote(2, []Request{later}); ok {
		t.Fatal("a request with an on-demand pool was placed after now")
	}
	if o, ok, _ := e.Quote(2, []Request{req(1, 4, 5, 20)}); !ok || o.Starts[0] < 5 {
		t.Fatalf("the same window on cpu alone: %+v %v", o, ok)
	}
	if _, ok, _ := e.MakeReservation(2, Bid{Requests: []Request{{Config: Config{"c/gpu": 1}, Count: 4, Duration: 4, Arrival: 2, Deadline: 6}}, Value: 1e6}); !ok {
		t.Fatal("setup: every gpu over slots 2-5 refused")
	}
	if _, ok, _ := e.Quote(2, []Request{now}); ok {
		t.Fatal("a request with an on-demand pool waited for capacity")
	}

	// ram (greedy) and gpu (on demand), no econ pool: only now, both fixed prices.
	fixed := Request{Config: Config{"c/ram": 3, "c/gpu": 1}, Count: 2, Duration: 3, Arrival: 6, Deadline: 30}
	if o, ok, _ := e.Quote(6, []Request{fixed}); !ok || o.Starts[0] != 6 || o.Price != 3*6*0.25+3*2*3 {
		t.Fatalf("greedy and on-demand pools: %+v %v", o, ok)
	}
	if _, ok, _ := e.Quote(5, []Request{fixed}); ok {
		t.Fatal("placed before its arrival")
	}
}

// A team's own quota costs nothing on any pool: it pays for what is beyond its
// quota exactly what a team with no quota pays for that much.
func TestPerPoolOwnQuotaIsFree(t *testing.T) {
	curve := LoadCurve{Base: 1, Steep: 8, Capacity: 10}
	e := mixedEngine(curve)
	for pool, units := range map[string]int64{"c/cpu": 4, "c/ram": 8, "c/gpu": 2} {
		if _, err := e.SetQuota(0, "team", pool, 0, 0, units); err != nil {
			t.Fatal(err)
		}
	}
	inside := Request{Config: Config{"c/cpu": 1, "c/ram": 2}, Count: 4, Duration: 4, Arrival: 0, Deadline: 20}
	if o, ok, _ := e.QuoteFor(0, "team", []Request{inside}); !ok || o.Price != 0 || o.Starts[0] != 0 {
		t.Fatalf("inside the quota: %+v %v", o, ok)
	}
	if o, ok, _ := e.QuoteFor(0, "team", []Request{{Config: Config{"c/gpu": 1, "c/ram": 4}, Count: 2, Duration: 3, Arrival: 0, Deadline: 9}}); !ok || o.Price != 0 {
		t.Fatalf("on-demand and greedy pools inside the quota: %+v %v", o, ok)
	}
	beyond := inside
	beyond.Count = 6 // 2 cpu and 4 ram beyond the quota
	stranger := inside
	stranger.Count = 2
	b, okB, _ := e.QuoteFor(0, "team", []Request{beyond})
	s, okS, _ := e.QuoteFor(0, "", []Request{stranger})
	unit := func(left int64) float64 { return max(0.5, curve.Price("c/cpu", 0, 0, left)) }
	if want := 4 * (unit(6) + unit(5) + 4*0.25); !okB || !okS || b.Price != s.Price || !near(b.Price, want) || b.Starts[0] != s.Starts[0] {
		t.Fatalf("beyond the quota %+v, a team with none for the same shared units %+v; want %v", b, s, want)
	}
}

// counting is a learning predictor that counts what it observes.
type counting struct {
	LoadCurve
	seen int
}

func (c *counting) Observe(Demand) { c.seen++ }

// tally is a learner that cannot be compared with ==.
type tally map[string]int

func (tally) Price(string, Slot, Slot, int64) float64 { return 1 }
func (t tally) Observe(Demand)                        { t["seen"]++ }

func TestPerPoolObservesEachLearnerOnce(t *testing.T) {
	shared, other, byMap := &counting{LoadCurve: LoadCurve{Base: 1, Steep: 2, Capacity: 10}}, &counting{}, tally{}
	pp := PerPool{
		Policies: map[string]PoolPolicy{
			"c/cpu": {Algorithm: "econ", Predictor: shared},
			"c/ram": {Algorithm: "econ", Predictor: shared, UnitPrice: 1},
			"c/gpu": {Algorithm: "greedy", UnitPrice: 1, Predictor: other},
			"c/ssd": {Algorithm: "econ", Predictor: byMap},
			"c/net": {Algorithm: "econ", Predictor: byMap},
			"c/fix": {Algorithm: "econ", Predictor: LoadCurve{Base: 1, Steep: 2, Capacity: 10}},
		},
		Default: PoolPolicy{Algorithm: "econ", Predictor: shared},
	}
	e := NewEngine(20, map[string]int64{"c/cpu": 10, "c/ram": 10}, pp)
	if _, ok, _ := e.MakeReservation(0, Bid{Requests: []Request{{Config: Config{"c/cpu": 1, "c/ram": 1}, Count: 1, Duration: 2, Arrival: 0, Deadline: 10}}, Value: 100}); !ok {
		t.Fatal("refused")
	}
	if shared.seen != 1 || other.seen != 1 || byMap["seen"] != 1 {
		t.Fatalf("one decided bid observed %d times by the shared learner, %d by the other, %d by the map", shared.seen, other.seen, byMap["seen"])
	}
	pp.Observe(Demand{})
	if shared.seen != 2 || other.seen != 2 || byMap["seen"] != 2 {
		t.Fatalf("after a second: %d, %d, %d", shared.seen, other.seen, byMap["seen"])
	}
}

func TestPerPoolValidateNamesThePoolAndField(t *testing.T) {
	ok := PoolPolicy{Algorithm: "greedy", UnitPrice: 1}
	for want, pp := range map[string]PerPool{
		"default.algorithm":           {},
		"policies[c/cpu].predictor":   {Default: ok, Policies: map[string]PoolPolicy{"c/cpu": {Algorithm: "econ"}}},
		"policies[c/ram].unit price":  {Default: ok, Policies: map[string]PoolPolicy{"c/cpu": ok, "c/ram": {Algorithm: "ondemand", UnitPrice: math.NaN()}}},
		"policies[c/gpu].algorithm":   {Default: ok, Policies: map[string]PoolPolicy{"c/gpu": {Algorithm: "auction"}}},
		"default.unit price: must be": {Default: PoolPolicy{Algorithm: "ondemand", UnitPrice: -1}},
	} {
		err := pp.Validate()
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
	if err := (PerPool{Default: ok, Policies: map[string]PoolPolicy{"c/cpu": {Algorithm: "econ", Predictor: LoadCurve{}}}}).Validate(); err != nil {
		t.Fatal(err)
	}
	// A request touching a pool with a bad policy is refused; others are placed.
	e := NewEngine(20, map[string]int64{"c/cpu": 10, "c/ram": 10}, PerPool{Default: ok, Policies: map[string]PoolPolicy{"c/ram": {Algorithm: "econ"}}})
	if _, placed, _ := e.Quote(0, []Request{{Config: Config{"c/cpu": 1, "c/ram": 1}, Count: 1, Duration: 2, Arrival: 0, Deadline: 10}}); placed {
		t.Fatal("placed a request on a pool whose policy is not valid")
	}
	if _, placed, _ := e.Quote(0, []Request{req(1, 2, 0, 10)}); !placed {
		t.Fatal("refused a request on a valid pool")
	}
}
