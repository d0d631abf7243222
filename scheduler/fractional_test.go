package scheduler

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/clearhouse/clearhouse/internal/racetest"
)

// ERA's day/night example (section 3.2): three classes each ask for the whole
// capacity, every day. High-value jobs may run only by day; medium- and
// low-value jobs by day or night. Slots are 5 minutes; day is 06:00-18:00.
const (
	dnDay      = 288
	dnDawn     = 72  // 06:00
	dnHalf     = 144 // twelve hours
	dnCapacity = 10
	dnSubmit   = 60 // 05:00: bids arrive an hour before dawn
)

var dnDensity = map[string]float64{"high": 10, "medium": 4, "low": 1}

// dayNightBids are a week of the example: per day, one bid of each class.
func dayNightBids(days int) []Demand {
	var out []Demand
	for d := range Slot(days) {
		dawn := d*dnDay + dnDawn
		for _, class := range []string{"high", "medium", "low"} {
			deadline := dawn + dnDay // day or night
			if class == "high" {
				deadline = dawn + dnHalf // day only
			}
			r := Request{Config: Config{"c/cpu": 1}, Count: dnCapacity, Duration: dnHalf, Arrival: dawn, Deadline: deadline}
			out = append(out, Demand{Requests: []Request{r}, Now: d*dnDay + dnSubmit, Value: dnDensity[class] * dnCapacity * dnHalf})
		}
	}
	return out
}

func TestDayNightAllocationGivesTheNightToMediumAndRefusesLow(t *testing.T) {
	var jobs []Job
	for _, d := range dayNightBids(3) {
		r := d.Requests[0]
		jobs = append(jobs, Job{Arrival: r.Arrival, Deadline: r.Deadline, Duration: r.Duration, Width: r.Count, Value: d.Value})
	}
	a := AllocateFractional(jobs, dnCapacity)
	for j, job := range jobs {
		class := []string{"high", "medium", "low"}[j%3]
		var day, night int64
		for k, u := range a.Units[j] {
			if (a.From[j]+Slot(k))%dnDay < dnDawn+dnHalf && (a.From[j]+Slot(k))%dnDay >= dnDawn {
				day += u
			} else {
				night += u
			}
		}
		whole := job.Width * int64(job.Duration)
		switch class {
		case "high":
			if day != whole || night != 0 {
				t.Errorf("job %d (high): %d unit-slots by day, %d by night; want all %d by day", j, day, night, whole)
			}
		case "medium":
			if night != whole || day != 0 {
				t.Errorf("job %d (medium): %d by day, %d by night; want all %d at night", j, day, night, whole)
			}
		case "low":
			if day+night != 0 {
				t.Errorf("job %d (low): allocated %d unit-slots; want none", j, day+night)
			}
		}
	}
}

func TestFractionalPricesTheNightAtTheMediumValueAndNeverAtTheLow(t *testing.T) {
	f, s := NewFractional(300, map[string]int64{"c/cpu": dnCapacity}), NewSeasonal(300)
	f.Inline = false
	for _, d := range dayNightBids(7) {
		f.Observe(d)
		s.Observe(d)
	}
	f.Refit(7*dnDay + dnSubmit)
	noon, midnight := Slot(8*dnDay+dnDawn+dnHalf/2), Slot(8*dnDay+dnDawn+dnHalf+dnHalf/2)
	within := func(p, density float64) bool { return p <= density && p >= density/densityRatio }
	for q := int64(1); q <= dnCapacity; q++ {
		if p := f.Price("c/cpu", noon, noon-301, q); !within(p, dnDensity["high"]) {
			t.Errorf("noon, unit %d: priced %v, want about the high value %v", q, p, dnDensity["high"])
		}
		if p := f.Price("c/cpu", midnight, midnight-301, q); !within(p, dnDensity["medium"]) {
			t.Errorf("midnight, unit %d: priced %v, want about the medium value %v", q, p, dnDensity["medium"])
		}
	}
	for q := int64(1); q <= 50*dnCapacity; q++ {
		if p := f.Price("c/cpu", midnight, midnight-301, q); p != 0 && p < dnDensity["medium"]/densityRatio {
			t.Fatalf("midnight, unit %d priced %v: the refused low-value jobs raise a price", q, p)
		}
		// The medium-value jobs run at night in the allocation: they add no
		// demand by day, where their windows also reach.
		if p := f.Price("c/cpu", noon, noon-301, q); p != 0 && p < dnDensity["high"]/densityRatio {
			t.Fatalf("noon, unit %d priced %v: demand the allocation put at night is predicted by day", q, p)
		}
	}
	// Spreading every job over its window, as Seasonal does, lets the low-value
	// jobs set the night's price for part of the capacity.
	low := false
	for q := int64(1); q <= 50*dnCapacity; q++ {
		if p := s.Price("c/cpu", midnight, midnight-301, q); within(p, dnDensity["low"]) {
			low = true
		}
	}
	if !low {
		t.Error("the spreading predictor never prices the night at the low value; the example shows nothing")
	}
}

// A job with a wide window that the allocation put in one place predicts
// demand there and nowhere else in its window. Hourly slots: one slot a bucket.
func TestFractionalPredictsWhereTheAllocationPutTheJob(t *testing.T) {
	f := NewFractional(3600, map[string]int64{"c/cpu": 10})
	f.Inline = false
	// A dense job holds slots [10, 12); a wide one fits only after it.
	f.Observe(demand(10, 2, 10, 12, 5, 10*2*8))
	f.Observe(demand(10, 2, 10, 20, 5, 10*2*2))
	f.Refit(6)
	const day = 24
	at := func(slot Slot) float64 { return f.Price("c/cpu", day+slot, day+slot-30, 5) }
	if p := at(11); p < 8/densityRatio || p > 8 {
		t.Fatalf("slot 11 holds the dense job: priced %v", p)
	}
	if p := at(13); p < 2/densityRatio || p > 2 {
		t.Fatalf("slot 13 holds the wide job: priced %v", p)
	}
	for _, slot := range []Slot{14, 16, 19} {
		if p := at(slot); p != 0 {
			t.Fatalf("slot %d is in the wide job's window but not its allocation: priced %v", slot, p)
		}
	}
}

func TestFractionalLearnsWhatJobsUsed(t *testing.T) {
	full, used := NewFractional(3600, map[string]int64{"c/cpu": 10}), NewFractional(3600, map[string]int64{"c/cpu": 10})
	for _, f := range []*Fractional{full, used} {
		f.Inline = false
		d := demand(10, 12, 10, 22, 5, 10*12*8)
		d.Accepted, d.Reservation = true, 7
		f.Observe(d)
	}
	used.ObserveUse(Use{Reservation: 7, Requests: []Request{req(10, 12, 10, 22)}, Now: 5, Value: 960, Reserved: []int64{120}, Used: []int64{30}})
	full.Refit(6)
	used.Refit(6)
	at := func(f *Fractional, slot Slot, q int64) float64 { return f.Price("c/cpu", 24+slot, 24+slot-30, q) }
	if p := at(full, 16, 10); p < 8/densityRatio || p > 8 {
		t.Fatalf("reserved: the 10th unit of slot 16 is priced %v", p)
	}
	// A quarter of the unit-slots used: the allocation holds 30 of them, at the
	// same density, from the window's start; slot 16 is past them.
	if p := at(used, 16, 1); p != 0 {
		t.Fatalf("used a quarter: slot 16 priced %v, want nothing", p)
	}
	if p := at(used, 11, 10); p < 8/densityRatio || p > 8 {
		t.Fatalf("used a quarter: slot 11 priced %v, want about 8", p)
	}
}

// tenThousandRequests are a week and a day of bids from the generated mix,
// as a Fractional's history holds them.
func tenThousandRequests() []Demand {
	jobs := GenerateMapReduce(10000, 11, 100)
	out := make([]Demand, len(jobs))
	for i, j := range jobs {
		out[i] = Demand{Requests: []Request{{Config: Config{SimPool: 1}, Count: j.Width, Duration: j.Duration, Arrival: j.Arrival, Deadline: j.Deadline}},
			Now: j.Submit, Value: j.Value}
	}
	return out
}

// BenchmarkFractionalRefit refits the LP-based predictor over 10,000 past
// requests on a 100-unit pool (a server runs it in the background, daily).
func BenchmarkFractionalRefit(b *testing.B) {
	past := tenThousandRequests()
	f := NewFractional(300, map[string]int64{SimPool: 100})
	f.Inline, f.History = false, math.MaxInt32
	for _, d := range past {
		f.Observe(d)
	}
	now := past[len(past)-1].Now
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f.Refit(now)
	}
	b.ReportMetric(float64(len(f.past)), "requests")
}

// The allocation's units, slot by slot, earn the LP optimum gonum's simplex
// finds, with work cut below Width*Duration for some jobs.
func TestAllocationWithUseMatchesLP(t *testing.T) {
	racetest.SkipUnderRace(t, "hundreds of seeded instances against an LP, on one goroutine")
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 41))
		capacity := 1 + rng.Int64N(5)
		jobs := randomBoundJobs(rng, 1+rng.IntN(7), 1+rng.IntN(9), capacity)
		work := make([]int64, len(jobs))
		for j, job := range jobs {
			work[j] = rng.Int64N(job.Width*int64(job.Duration) + 1)
		}
		a := allocateWork(jobs, capacity, work)
		got := 0.0
		for j, job := range jobs {
			var sum int64
			for _, u := range a.Units[j] {
				sum += u
			}
			if sum > work[j] && sum > 0 {
				t.Fatalf("seed %d job %d: %d unit-slots, used %d", seed, j, sum, work[j])
			}
			if job.Width > 0 && job.Duration > 0 {
				got += density(job) * float64(sum)
			}
		}
		want := lpBoundWork(t, jobs, capacity, work)
		if math.Abs(got-want) > 1e-6*max(1, want) || math.Abs(a.Value-got) > 1e-9*max(1, got) {
			t.Fatalf("seed %d: allocation earns %v (reports %v), LP %v", seed, got, a.Value, want)
		}
	}
}
