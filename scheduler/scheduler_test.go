package scheduler

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse"
	"pgregory.net/rapid"
)

func TestTreeAgreesWithASlice(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(t, "n")
		tr, naive := newTree(n, 10), make([]int64, n)
		for i := range naive {
			naive[i] = 10
		}
		for range rapid.IntRange(1, 30).Draw(t, "ops") {
			from := rapid.IntRange(0, n-1).Draw(t, "from")
			to := rapid.IntRange(from+1, n).Draw(t, "to")
			if rapid.Bool().Draw(t, "add") {
				d := rapid.Int64Range(-5, 5).Draw(t, "d")
				tr.add(from, to, d)
				for i := from; i < to; i++ {
					naive[i] += d
				}
				continue
			}
			want := naive[from]
			for _, v := range naive[from:to] {
				want = min(want, v)
			}
			if got := tr.minimum(from, to); got != want {
				t.Fatalf("min[%d,%d) = %d, want %d", from, to, got, want)
			}
			if got := tr.values(from, to, nil); !slices.Equal(got, naive[from:to]) {
				t.Fatalf("values[%d,%d) = %v, want %v", from, to, got, naive[from:to])
			}
		}
	})
}

func req(count int64, dur, arrival, deadline Slot) Request {
	return Request{Config: Config{"c/cpu": 1}, Count: count, Duration: dur, Arrival: arrival, Deadline: deadline}
}

func TestGreedyTakesTheEarliestSlotAndRejectsShortValues(t *testing.T) {
	e := NewEngine(100, map[string]int64{"c/cpu": 10}, Greedy{UnitPrice: 1})
	if _, ok, err := e.MakeReservation(0, Bid{Requests: []Request{req(8, 5, 0, 20)}, Value: 40}); err != nil || !ok {
		t.Fatalf("first: %v %v", ok, err)
	}
	r, ok, err := e.MakeReservation(0, Bid{Requests: []Request{req(5, 5, 0, 20)}, Value: 25})
	if err != nil || !ok || r.Starts[0] != 5 || r.Price != 25 {
		t.Fatalf("second: %+v %v %v; want a start at slot 5 after the first job", r, ok, err)
	}
	if _, ok, _ := e.MakeReservation(0, Bid{Requests: []Request{req(5, 5, 0, 20)}, Value: 24.99}); ok {
		t.Fatal("accepted a value below the price")
	}
	if _, ok, _ := e.MakeReservation(0, Bid{Requests: []Request{req(3, 5, 0, 9)}, Value: 1e9}); ok {
		t.Fatal("accepted a job with no room in its window")
	}
}

func TestOnDemandFitOnlyStartsNow(t *testing.T) {
	e := NewEngine(50, map[string]int64{"c/cpu": 4}, OnDemandFit{UnitPrice: 2})
	if r, ok, _ := e.MakeReservation(3, Bid{Requests: []Request{req(4, 2, 0, 10)}, Value: 100}); !ok || r.Starts[0] != 3 || r.Price != 16 {
		t.Fatalf("now: %+v %v", r, ok)
	}
	if _, ok, _ := e.MakeReservation(3, Bid{Requests: []Request{req(1, 2, 0, 10)}, Value: 100}); ok {
		t.Fatal("on-demand waited for capacity")
	}
}

func TestEconAvoidsLoadedSlotsAndPricesRiseWithLoad(t *testing.T) {
	algo := BasicEcon{Predictor: LoadCurve{Base: 1, Steep: 8, Capacity: 10}}
	e := NewEngine(100, map[string]int64{"c/cpu": 10}, algo)
	first, ok, _ := e.Quote(0, []Request{req(5, 4, 0, 20)})
	if !ok || first.Starts[0] != 0 {
		t.Fatalf("empty pool: %+v", first)
	}
	if _, ok, _ := e.MakeReservation(0, Bid{Requests: []Request{req(6, 4, 0, 4)}, Value: 1e6}); !ok {
		t.Fatal("setup reservation refused")
	}
	o, ok, _ := e.Quote(0, []Request{req(3, 4, 0, 20)})
	if !ok || o.Starts[0] < 4 {
		t.Fatalf("with slots 0-3 loaded the cheapest start is later, got %+v", o)
	}
	narrow, ok, _ := e.Quote(0, []Request{req(3, 4, 0, 4)})
	if !ok || narrow.Price <= o.Price {
		t.Fatalf("a job that must share the loaded slots pays more: %v vs %v", narrow.Price, o.Price)
	}
}

// The price and the start never depend on the value: algorithms never see it.
func TestPriceAndStartDoNotDependOnTheValue(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mk := func() *Engine {
			return NewEngine(60, map[string]int64{"c/cpu": 10}, BasicEcon{Predictor: LoadCurve{Base: 1, Steep: 4, Capacity: 10}})
		}
		a, b := mk(), mk()
		for range rapid.IntRange(0, 5).Draw(t, "load") {
			r := req(rapid.Int64Range(1, 4).Draw(t, "w"), Slot(rapid.IntRange(1, 5).Draw(t, "d")), 0, 60)
			a.MakeReservation(0, Bid{Requests: []Request{r}, Value: 1e9})
			b.MakeReservation(0, Bid{Requests: []Request{r}, Value: 1e9})
		}
		r := req(rapid.Int64Range(1, 5).Draw(t, "W"), Slot(rapid.IntRange(1, 8).Draw(t, "T")), 0, 60)
		low, high := rapid.Float64Range(1, 1e3).Draw(t, "v1"), 1e9
		ra, okA, _ := a.MakeReservation(0, Bid{Requests: []Request{r}, Value: low})
		rb, okB, _ := b.MakeReservation(0, Bid{Requests: []Request{r}, Value: high})
		if okA && (!okB || ra.Starts[0] != rb.Starts[0] || ra.Price != rb.Price) {
			t.Fatalf("value %v got %+v, value %v got %+v", low, ra, high, rb)
		}
	})
}

// No slot is ever promised more than the pool holds, and every accepted job runs
// inside its window.
func TestNeverOverCapacityAndAlwaysInsideTheWindow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		algos := []Algorithm{Greedy{UnitPrice: 1}, OnDemandFit{UnitPrice: 1}, BasicEcon{Predictor: LoadCurve{Base: 1, Steep: 4, Capacity: 8}}}
		e := NewEngine(40, map[string]int64{"c/cpu": 8, "c/ram": 16}, rapid.SampledFrom(algos).Draw(t, "algo"))
		used := map[string][]int64{"c/cpu": make([]int64, 40), "c/ram": make([]int64, 40)}
		for i := range rapid.IntRange(1, 25).Draw(t, "bids") {
			arr := Slot(rapid.IntRange(0, 30).Draw(t, "arrival"))
			dur := Slot(rapid.IntRange(1, 8).Draw(t, "duration"))
			dl := min(arr+dur+Slot(rapid.IntRange(0, 10).Draw(t, "slack")), 40)
			if dl-arr < dur {
				continue
			}
			r := Request{Config: Config{"c/cpu": 1, "c/ram": rapid.Int64Range(1, 3).Draw(t, "ram")}, Count: rapid.Int64Range(1, 5).Draw(t, "count"),
				Duration: dur, Arrival: arr, Deadline: dl}
			now := Slot(min(int(arr), i))
			res, ok, err := e.MakeReservation(now, Bid{Requests: []Request{r}, Value: rapid.Float64Range(1, 500).Draw(t, "value")})
			if err != nil && clearhouse.ErrorCode(err) != clearhouse.EINVALID {
				t.Fatal(err)
			}
			if !ok {
				continue
			}
			s := res.Starts[0]
			if s < r.Arrival || s+r.Duration > r.Deadline || s < now {
				t.Fatalf("start %d outside [%d, %d) or before now %d", s, r.Arrival, r.Deadline, now)
			}
			for p, u := range r.Config {
				for t2 := s; t2 < s+r.Duration; t2++ {
					used[p][t2] += u * r.Count
					if used[p][t2] > e.Capacity(p, t2) {
						t.Fatalf("%s over capacity at slot %d: %d", p, t2, used[p][t2])
					}
				}
			}
		}
	})
}

func TestBadRequestsNameTheField(t *testing.T) {
	e := NewEngine(100, map[string]int64{"a/cpu": 10, "b/cpu": 10}, Greedy{UnitPrice: 1})
	for want, r := range map[string]Request{
		"deadline":      {Config: Config{"a/cpu": 1}, Count: 1, Duration: 2, Arrival: 5, Deadline: 5},
		"duration":      {Config: Config{"a/cpu": 1}, Count: 1, Duration: 9, Arrival: 0, Deadline: 5},
		"configuration": {Config: Config{"a/cpu": 1, "b/cpu": 1}, Count: 1, Duration: 1, Arrival: 0, Deadline: 5},
		"count":         {Config: Config{"a/cpu": 1}, Count: 0, Duration: 1, Arrival: 0, Deadline: 5},
	} {
		_, _, err := e.MakeReservation(0, Bid{Requests: []Request{r}, Value: 10})
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
	beyond := Request{Config: Config{"a/cpu": 1}, Count: 1, Duration: 1, Arrival: 0, Deadline: 101}
	if _, _, err := e.MakeReservation(0, Bid{Requests: []Request{beyond}, Value: 10}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
		t.Errorf("beyond the horizon: %v", err)
	}
	if _, _, err := e.MakeReservation(0, Bid{Requests: []Request{req(1, 1, 0, 5)}, Value: 0}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
		t.Errorf("zero value: %v", err)
	}
}

func TestCancelReturnsCapacity(t *testing.T) {
	e := NewEngine(20, map[string]int64{"c/cpu": 4}, Greedy{UnitPrice: 1})
	r, ok, _ := e.MakeReservation(0, Bid{Requests: []Request{req(4, 10, 0, 10)}, Value: 100})
	if !ok {
		t.Fatal("refused")
	}
	if _, ok, _ := e.Quote(0, []Request{req(1, 2, 0, 10)}); ok {
		t.Fatal("a full pool quoted a job")
	}
	if err := e.Cancel(5, r.ID); err != nil {
		t.Fatal(err)
	}
	if o, ok, _ := e.Quote(5, []Request{req(4, 5, 5, 10)}); !ok || o.Starts[0] != 5 {
		t.Fatalf("after cancelling at slot 5: %+v %v", o, ok)
	}
	if err := e.Cancel(5, r.ID); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
		t.Fatalf("second cancel: %v", err)
	}
	if len(e.Reservations()) != 0 {
		t.Fatal("a cancelled reservation is still listed")
	}
}

// The engines stay pure: no database, HTTP or template package in their imports.
func TestEnginesArePure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/clearhouse/clearhouse/scheduler", "github.com/clearhouse/clearhouse/auction").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, banned := range []string{"gorm.io/", "github.com/gin-gonic/", "github.com/a-h/templ", "database/sql", "net/http"} {
		if strings.Contains(string(out), banned) {
			t.Errorf("an engine package depends on %s", banned)
		}
	}
}
