package scheduler

import (
	"cmp"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/clearhouse/clearhouse"
)

// learnedPredictors are fresh learned predictors of every kind the package
// saves, for a 100-unit pool.
func learnedPredictors() map[string]func() Predictor {
	return map[string]func() Predictor{
		"seasonal":   func() Predictor { return NewSeasonal(300) },
		"fractional": func() Predictor { return NewFractional(300, map[string]int64{SimPool: 100}) },
		"shifted":    func() Predictor { return &Shifted{P: NewSeasonal(300), Off: 77} },
		"shifted-lp": func() Predictor { return &Shifted{P: NewFractional(300, map[string]int64{SimPool: 100}), Off: 5} },
	}
}

// learn runs the first n jobs of the generated mix through an engine pricing
// with p, so p learns from them (and from what they used).
func learn(t *testing.T, p Predictor, n int) Slot {
	jobs := GenerateMapReduce(n, 9, 100)
	slices.SortStableFunc(jobs, func(a, b Job) int { return cmp.Compare(a.Submit, b.Submit) })
	e := NewEngine(4000, map[string]int64{SimPool: 100}, BasicEcon{Predictor: p})
	now := Slot(0)
	for _, j := range jobs {
		now = max(now, j.Submit)
		r := Request{Config: Config{SimPool: 1}, Count: j.Width, Duration: j.Duration, Arrival: j.Arrival, Deadline: j.Deadline}
		if _, _, err := e.MakeReservation(now, Bid{Requests: []Request{r}, Value: j.Value}); err != nil {
			t.Fatal(err)
		}
		e.Retire(now)
	}
	return now
}

// randomAsks draws asks over the next two days from now.
func randomAsks(now Slot, n int) [][]Request {
	rng := rand.New(rand.NewPCG(3, 4))
	out := make([][]Request, n)
	for i := range out {
		a := now + Slot(rng.IntN(400))
		d := Slot(1 + rng.IntN(24))
		out[i] = []Request{{Config: Config{SimPool: 1}, Count: 1 + rng.Int64N(60), Duration: d, Arrival: a, Deadline: a + d + Slot(rng.IntN(100))}}
	}
	return out
}

func TestRestoredPredictorsQuoteIdenticalPrices(t *testing.T) {
	for name, fresh := range learnedPredictors() {
		t.Run(name, func(t *testing.T) {
			p := fresh()
			now := learn(t, p, 2500)
			st, err := SavePredictor(p)
			if err != nil {
				t.Fatal(err)
			}
			blob, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			var engines []*Engine
			for range 2 {
				var back PredictorState
				if err := json.Unmarshal(blob, &back); err != nil {
					t.Fatal(err)
				}
				q, err := RestorePredictor(back)
				if err != nil {
					t.Fatal(err)
				}
				engines = append(engines, NewEngine(4000, map[string]int64{SimPool: 100}, BasicEcon{Predictor: q}))
			}
			original := NewEngine(4000, map[string]int64{SimPool: 100}, BasicEcon{Predictor: p})
			priced := 0
			for _, ask := range randomAsks(now, 300) {
				want, wok, _ := original.Quote(now, ask)
				for i, e := range engines {
					got, ok, err := e.Quote(now, ask)
					if err != nil || ok != wok || !reflect.DeepEqual(got, want) {
						t.Fatalf("engine %d quotes %+v %v %v; the learned predictor quotes %+v %v", i, got, ok, err, want, wok)
					}
				}
				if want.Price > 0 {
					priced++
				}
			}
			if priced < 30 {
				t.Fatalf("only %d of 300 asks were priced above zero: the predictor learned little", priced)
			}
			again, _ := SavePredictor(p)
			if b2, _ := json.Marshal(again); string(b2) != string(blob) {
				t.Fatal("saving twice gave two states")
			}
		})
	}
}

// Restored predictors go on learning as the original does.
func TestRestoredFractionalKeepsLearningLikeTheOriginal(t *testing.T) {
	p := NewFractional(300, map[string]int64{SimPool: 100})
	now := learn(t, p, 1500)
	st, _ := SavePredictor(p)
	q, err := RestorePredictor(st)
	if err != nil {
		t.Fatal(err)
	}
	later := demand(30, 12, now+10, now+40, now, 3000)
	for _, x := range []Predictor{p, q} {
		x.(Learner).Observe(later)
		x.(*Fractional).Refit(now + 1)
	}
	a, _ := SavePredictor(p)
	b, _ := SavePredictor(q)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the restored predictor learned differently")
	}
}

func TestRestorePredictorRefusesStatesThatCouldNotHaveBeenSaved(t *testing.T) {
	good, _ := SavePredictor(NewSeasonal(300))
	p := NewSeasonal(300)
	p.Observe(demand(10, 1, 100, 101, 50, 100))
	learned, _ := SavePredictor(p)
	for name, st := range map[string]PredictorState{
		"version":     {Version: 9, Kind: "seasonal", Seasonal: good.Seasonal},
		"kind":        {Version: PredictorStateVersion, Kind: "oracle"},
		"field unset": {Version: PredictorStateVersion, Kind: "fractional"},
		"bucket": func() PredictorState {
			s := *learned.Seasonal
			s.Pools = map[string]SeasonState{"c/cpu": {Daily: []SeasonCell{{Time: 99, Density: 1, Units: 1}}}}
			return PredictorState{Version: PredictorStateVersion, Kind: "seasonal", Seasonal: &s}
		}(),
	} {
		if _, err := RestorePredictor(st); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Errorf("%s: %v, want EINVALID", name, err)
		}
	}
	if _, err := SavePredictor(wavy{}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
		t.Errorf("a predictor from elsewhere: %v", err)
	}
}
