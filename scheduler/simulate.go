package scheduler

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// jobClass is one kind of job in the MapReduce-like mix.
type jobClass struct {
	name             string
	share            float64 // of the jobs
	width, duration  [2]int  // ranges, inclusive
	slack            [2]float64
	valuePerUnitSlot float64
}

// mapReduceClasses: five small or medium classes worth $10 per unit-slot and one
// class of large, low-value jobs worth $1 (ERA's evaluation mix).
var mapReduceClasses = []jobClass{
	{"small-interactive", 0.20, [2]int{1, 4}, [2]int{1, 3}, [2]float64{1, 2}, 10},
	{"small-batch", 0.20, [2]int{2, 8}, [2]int{2, 6}, [2]float64{1.5, 4}, 10},
	{"medium-etl", 0.15, [2]int{8, 24}, [2]int{3, 12}, [2]float64{1.5, 4}, 10},
	{"reporting", 0.12, [2]int{4, 16}, [2]int{6, 18}, [2]float64{2, 6}, 10},
	{"ml-features", 0.08, [2]int{16, 48}, [2]int{4, 10}, [2]float64{2, 5}, 10},
	{"large-backfill", 0.25, [2]int{30, 80}, [2]int{24, 96}, [2]float64{1.5, 6}, 1},
}

// GenerateMapReduce writes n seeded jobs of the six classes arriving over horizon
// slots, sized so that together they want several times a cluster of capacity
// units. The same arguments always give the same jobs.
func GenerateMapReduce(n int, seed uint64, horizon Slot) []Job {
	rng := rand.New(rand.NewPCG(seed, seed*7+1))
	between := func(r [2]int) int { return r[0] + rng.IntN(r[1]-r[0]+1) }
	jobs := make([]Job, 0, n)
	for i := range n {
		x, c := rng.Float64(), mapReduceClasses[len(mapReduceClasses)-1]
		for _, k := range mapReduceClasses {
			if x < k.share {
				c = k
				break
			}
			x -= k.share
		}
		w, d := between(c.width), Slot(between(c.duration))
		arrival := Slot(rng.IntN(max(int(horizon)-int(d)*2, 1)))
		slack := c.slack[0] + (c.slack[1]-c.slack[0])*rng.Float64()
		deadline := min(arrival+Slot(float64(d)*slack)+1, horizon)
		if deadline-arrival < d {
			deadline = arrival + d
		}
		value := c.valuePerUnitSlot * float64(w) * float64(d) * (0.8 + 0.4*rng.Float64())
		jobs = append(jobs, Job{ID: fmt.Sprintf("j%d", i), Team: c.name, Class: c.name, Submit: arrival, Arrival: arrival,
			Deadline: deadline, Duration: d, Width: int64(w), Value: value})
	}
	return jobs
}

// Outcome is what one algorithm achieved on a workload.
type Outcome struct {
	Name           string
	Jobs           int
	AcceptedJobs   int
	RequestedValue float64
	AcceptedValue  float64
	ValueShare     float64 // accepted over requested value
	Revenue        float64
	Utilization    float64           // unit-slots used over unit-slots available
	MeanPrice      float64           // revenue per accepted unit-slot
	ByClass        map[string][2]int // class: accepted, submitted
}

// Simulate replays jobs in submit order through an engine with one pool of
// capacity units and the algorithm, and reports what it accepted.
func Simulate(jobs []Job, capacity int64, algo Algorithm) (Outcome, error) {
	js := append([]Job(nil), jobs...)
	sort.SliceStable(js, func(i, j int) bool { return js[i].Submit < js[j].Submit })
	horizon := Slot(1)
	for _, j := range js {
		horizon = max(horizon, j.Deadline)
	}
	e := NewEngine(horizon, map[string]int64{"sim/units": capacity}, algo)
	out := Outcome{Name: algo.Name(), Jobs: len(js), ByClass: map[string][2]int{}}
	var used float64
	for _, j := range js {
		out.RequestedValue += j.Value
		c := out.ByClass[j.Class]
		c[1]++
		r := Request{Config: Config{"sim/units": 1}, Count: j.Width, Duration: j.Duration, Arrival: j.Arrival, Deadline: j.Deadline}
		if j.Width > capacity {
			out.ByClass[j.Class] = c
			continue
		}
		res, ok, err := e.MakeReservation(j.Submit, Bid{Requests: []Request{r}, Value: j.Value})
		if err != nil {
			return Outcome{}, fmt.Errorf("job %s: %w", j.ID, err)
		}
		if ok {
			out.AcceptedJobs++
			out.AcceptedValue += j.Value
			out.Revenue += res.Price
			used += float64(j.Width) * float64(j.Duration)
			c[0]++
		}
		out.ByClass[j.Class] = c
	}
	if out.RequestedValue > 0 {
		out.ValueShare = out.AcceptedValue / out.RequestedValue
	}
	out.Utilization = used / (float64(capacity) * float64(horizon))
	if used > 0 {
		out.MeanPrice = out.Revenue / used
	}
	return out, nil
}
