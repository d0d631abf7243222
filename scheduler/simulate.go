package scheduler

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// jobClass is one kind of job in the MapReduce-like mix. Widths are for a
// 100-unit cluster and scale with its capacity.
type jobClass struct {
	name             string
	share            float64 // of the jobs
	width, duration  [2]int  // ranges, inclusive
	slack            [2]float64
	valuePerUnitSlot float64
	lead             int // submitted up to this many slots before the window opens
}

// mapReduceClasses: five small or medium classes worth $10 per unit-slot and one
// class of large, low-value jobs worth $1 (ERA's evaluation mix). The large jobs
// are few but hold most of the demand for capacity; their windows are wide.
var mapReduceClasses = []jobClass{
	{"small-interactive", 0.30, [2]int{1, 4}, [2]int{1, 3}, [2]float64{1, 2}, 10, 0},
	{"small-batch", 0.24, [2]int{2, 8}, [2]int{2, 6}, [2]float64{1.5, 4}, 10, 0},
	{"medium-etl", 0.16, [2]int{8, 24}, [2]int{3, 12}, [2]float64{1.5, 4}, 10, 0},
	{"reporting", 0.13, [2]int{4, 16}, [2]int{6, 18}, [2]float64{2, 6}, 10, 0},
	{"ml-features", 0.10, [2]int{16, 48}, [2]int{4, 10}, [2]float64{2, 5}, 10, 0},
	{"large-backfill", 0.08, [2]int{10, 30}, [2]int{24, 96}, [2]float64{1.5, 6}, 1, 0},
}

// MapReduceLoad is how many times the generated demand for unit-slots exceeds
// what the cluster can run over the workload's span.
const MapReduceLoad = 4

// MapReduceClasses names the generator's job classes, the low-value one last.
func MapReduceClasses() []string {
	out := make([]string, len(mapReduceClasses))
	for i, c := range mapReduceClasses {
		out[i] = c.name
	}
	return out
}

// GenerateMapReduce writes n seeded jobs of the six classes for a cluster of
// capacity units. Arrivals are spread over a span chosen so the jobs together ask
// for MapReduceLoad times the unit-slots the cluster has: a cluster far too small
// for all of them. The same arguments always give the same jobs.
func GenerateMapReduce(n int, seed uint64, capacity int64) []Job {
	return generate(n, seed, capacity, mapReduceClasses, MapReduceLoad)
}

func generate(n int, seed uint64, capacity int64, classes []jobClass, load float64) []Job {
	rng := rand.New(rand.NewPCG(seed, seed*7+1))
	scale := max(float64(capacity)/100, 0.01)
	var mean float64 // expected unit-slots of one job
	total := 0.0
	for _, c := range classes {
		total += c.share
	}
	for _, c := range classes {
		w := max(float64(c.width[0]+c.width[1])/2*scale, 1)
		mean += c.share / total * w * float64(c.duration[0]+c.duration[1]) / 2
	}
	span := max(Slot(float64(n)*mean/(float64(max(capacity, 1))*load)), 1)
	between := func(r [2]int) int { return r[0] + rng.IntN(r[1]-r[0]+1) }
	jobs := make([]Job, 0, n)
	for i := range n {
		x, c := rng.Float64()*total, classes[len(classes)-1]
		for _, k := range classes {
			if x < k.share {
				c = k
				break
			}
			x -= k.share
		}
		w := max(int64(math.Round(float64(between(c.width))*scale)), 1)
		d := Slot(between(c.duration))
		arrival := Slot(rng.IntN(int(span)))
		slack := c.slack[0] + (c.slack[1]-c.slack[0])*rng.Float64()
		deadline := max(arrival+Slot(math.Ceil(float64(d)*slack)), arrival+d)
		value := c.valuePerUnitSlot * float64(w) * float64(d) * (0.8 + 0.4*rng.Float64())
		submit := arrival
		if c.lead > 0 {
			submit = max(arrival-Slot(rng.IntN(c.lead+1)), 0)
		}
		jobs = append(jobs, Job{ID: fmt.Sprintf("j%d", i), Team: c.name, Class: c.name, Submit: submit, Arrival: arrival,
			Deadline: deadline, Duration: d, Width: w, Value: value})
	}
	return jobs
}
