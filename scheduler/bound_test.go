package scheduler

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"

	"github.com/clearhouse/clearhouse/internal/racetest"
)

// boundJob is a job with just the fields the bound reads.
func boundJob(arrival, deadline, duration Slot, width int64, value float64) Job {
	return Job{Arrival: arrival, Deadline: deadline, Duration: duration, Width: width, Value: value}
}

func TestUpperBoundHandWorked(t *testing.T) {
	cases := []struct {
		name      string
		jobs      []Job
		capacity  int64
		value     float64
		allocated []float64
		load      []int64
	}{
		{
			name:      "denser job wins the slot",
			jobs:      []Job{boundJob(0, 1, 1, 1, 3), boundJob(0, 1, 1, 1, 5)},
			capacity:  1,
			value:     5,
			allocated: []float64{0, 1},
			load:      []int64{1},
		},
		{
			name:      "flow rerouted to let the second job fit",
			jobs:      []Job{boundJob(0, 2, 1, 1, 10), boundJob(0, 1, 1, 1, 1)},
			capacity:  1,
			value:     11,
			allocated: []float64{1, 1},
			load:      []int64{1, 1},
		},
		{
			name: "reroute through a chain of two jobs",
			// A [0,2) takes slot 0 and B [0,3) slot 1; C [0,1) needs slot 0, so
			// A moves to slot 1 and B to slot 2.
			jobs:      []Job{boundJob(0, 2, 1, 1, 9), boundJob(0, 3, 1, 1, 8), boundJob(0, 1, 1, 1, 1)},
			capacity:  1,
			value:     18,
			allocated: []float64{1, 1, 1},
			load:      []int64{1, 1, 1},
		},
		{
			name:      "fractional share of a wide job",
			jobs:      []Job{boundJob(0, 2, 2, 3, 6), boundJob(0, 2, 1, 2, 1)},
			capacity:  4,
			value:     6 + 1.0*2/2,
			allocated: []float64{6, 2},
			load:      []int64{4, 4},
		},
		{
			name:      "wider than the pool: capped per slot",
			jobs:      []Job{boundJob(0, 3, 2, 5, 10)},
			capacity:  2,
			value:     10 * 6.0 / 10,
			allocated: []float64{6},
			load:      []int64{2, 2, 2},
		},
		{
			name:      "jobs that earn nothing get nothing",
			jobs:      []Job{boundJob(0, 2, 1, 0, 1), boundJob(0, 2, 1, 1, 0), boundJob(1, 1, 1, 1, 1), boundJob(-1, 2, 1, 1, 2)},
			capacity:  1,
			value:     2,
			allocated: []float64{0, 0, 0, 1},
			load:      []int64{1, 0},
		},
		{
			name:      "no capacity",
			jobs:      []Job{boundJob(0, 2, 1, 1, 1)},
			capacity:  0,
			value:     0,
			allocated: []float64{0},
			load:      []int64{0, 0},
		},
		{
			name:      "no jobs",
			capacity:  3,
			allocated: []float64{},
			load:      []int64{},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := UpperBound(c.jobs, c.capacity)
			if math.Abs(got.Value-c.value) > 1e-9 || !slices.Equal(got.Allocated, c.allocated) || !slices.Equal(got.Load, c.load) {
				t.Errorf("got value %v allocated %v load %v, want %v %v %v", got.Value, got.Allocated, got.Load, c.value, c.allocated, c.load)
			}
		})
	}
}

// randomBoundJobs draws n jobs over horizon slots, some wider than the pool and
// some with durations longer than their windows.
func randomBoundJobs(rng *rand.Rand, n, horizon int, capacity int64) []Job {
	jobs := make([]Job, n)
	for j := range jobs {
		a := rng.IntN(horizon)
		d := a + 1 + rng.IntN(horizon-a)
		dur := 1 + rng.IntN(d-a+1)
		w := 1 + rng.Int64N(capacity+2)
		jobs[j] = boundJob(Slot(a), Slot(d), Slot(dur), w, float64(1+rng.IntN(20)))
	}
	return jobs
}

// lpBound solves the fractional bound as a plain LP in standard form (min c.x,
// Ax = b, x >= 0) with gonum's simplex: variables y[j][t] for the slots of each
// window and one slack per constraint.
func lpBound(t *testing.T, jobs []Job, capacity int64) float64 {
	return lpBoundWork(t, jobs, capacity, nil)
}

// lpBoundWork is lpBound with job j's total cut to work[j] unit-slots (work nil:
// no cut).
func lpBoundWork(t *testing.T, jobs []Job, capacity int64, work []int64) float64 {
	horizon := 0
	for _, j := range jobs {
		horizon = max(horizon, int(j.Deadline))
	}
	type cell struct{ j, t int }
	var cells []cell
	for j, job := range jobs {
		for s := max(int(job.Arrival), 0); s < int(job.Deadline); s++ {
			cells = append(cells, cell{j, s})
		}
	}
	// Rows: per cell y <= min(W, capacity); per job sum y <= W*T; per slot sum y <= capacity.
	rows := len(cells) + len(jobs) + horizon
	cols := len(cells) + rows
	if len(cells) == 0 {
		return 0
	}
	A := mat.NewDense(rows, cols, nil)
	b := make([]float64, rows)
	c := make([]float64, cols)
	for k, cl := range cells {
		job := jobs[cl.j]
		c[k] = -job.Value / (float64(job.Width) * float64(job.Duration))
		A.Set(k, k, 1)
		b[k] = float64(min(job.Width, capacity))
		A.Set(len(cells)+cl.j, k, 1)
		A.Set(len(cells)+len(jobs)+cl.t, k, 1)
	}
	for j, job := range jobs {
		b[len(cells)+j] = float64(job.Width) * float64(job.Duration)
		if work != nil {
			b[len(cells)+j] = min(b[len(cells)+j], float64(work[j]))
		}
	}
	for s := 0; s < horizon; s++ {
		b[len(cells)+len(jobs)+s] = float64(capacity)
	}
	for r := 0; r < rows; r++ {
		A.Set(r, len(cells)+r, 1)
	}
	opt, _, err := lp.Simplex(c, A, b, 1e-10, nil)
	if err != nil {
		t.Fatalf("simplex: %v", err)
	}
	return -opt
}

func TestUpperBoundMatchesLP(t *testing.T) {
	racetest.SkipUnderRace(t, "hundreds of seeded instances against an LP, on one goroutine")
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 17))
		capacity := 1 + rng.Int64N(5)
		jobs := randomBoundJobs(rng, 1+rng.IntN(8), 1+rng.IntN(10), capacity)
		got := UpperBound(jobs, capacity).Value
		want := lpBound(t, jobs, capacity)
		if math.Abs(got-want) > 1e-6*max(1, math.Abs(want)) {
			t.Fatalf("seed %d: bound %v, LP %v; capacity %d jobs %+v", seed, got, want, capacity, jobs)
		}
	}
}

// checkBoundFeasible checks the solver's allocation against every constraint of
// the LP and against the totals UpperBound reports.
func checkBoundFeasible(t *testing.T, jobs []Job, capacity int64) {
	t.Helper()
	s := solveBound(jobs, capacity, nil)
	got := UpperBound(jobs, capacity)
	load := make([]int64, s.horizon)
	value := 0.0
	for j, job := range jobs {
		var sum int64
		for slot := 0; slot < s.horizon; slot++ {
			y := s.y(j, int32(slot))
			if y < 0 || y > min(job.Width, capacity) {
				t.Fatalf("job %d slot %d: %d units, cap %d", j, slot, y, min(job.Width, capacity))
			}
			if y > 0 && (slot < int(job.Arrival) || slot >= int(job.Deadline)) {
				t.Fatalf("job %d: %d units in slot %d outside [%d,%d)", j, y, slot, job.Arrival, job.Deadline)
			}
			sum += y
			load[slot] += y
		}
		if sum > job.Width*int64(job.Duration) && sum > 0 {
			t.Fatalf("job %d: %d unit-slots, demand %d", j, sum, job.Width*int64(job.Duration))
		}
		if got.Allocated[j] != float64(sum) {
			t.Fatalf("job %d: Allocated %v, flow %d", j, got.Allocated[j], sum)
		}
		if sum > 0 {
			value += job.Value * float64(sum) / float64(job.Width*int64(job.Duration))
		}
	}
	for slot, l := range load {
		if l > capacity {
			t.Fatalf("slot %d: load %d over capacity %d", slot, l, capacity)
		}
		if got.Load[slot] != l {
			t.Fatalf("slot %d: Load %d, flow %d", slot, got.Load[slot], l)
		}
	}
	if math.Abs(value-got.Value) > 1e-9*max(1, value) {
		t.Fatalf("Value %v, flows earn %v", got.Value, value)
	}
}

func TestUpperBoundFeasible(t *testing.T) {
	racetest.SkipUnderRace(t, "hundreds of seeded instances against an LP, on one goroutine")
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 29))
		capacity := 1 + rng.Int64N(20)
		checkBoundFeasible(t, randomBoundJobs(rng, 1+rng.IntN(60), 1+rng.IntN(40), capacity), capacity)
	}
	checkBoundFeasible(t, benchBoundJobs(1, 2000, 2016), 100)
}

// benchBoundJobs draws n jobs over horizon slots for a pool of 100 units: nine in
// ten small (width 1-8, duration 1-6, window 1-2x the duration), the rest large
// (width 30-80, duration 24-96, window up to 6x), value densities 0.5-4.
func benchBoundJobs(seed uint64, n, horizon int) []Job {
	rng := rand.New(rand.NewPCG(seed, seed^0xb0))
	jobs := make([]Job, n)
	for j := range jobs {
		var w int64
		var dur, window int
		if rng.IntN(10) == 0 {
			w = 30 + rng.Int64N(51)
			dur = 24 + rng.IntN(73)
			window = dur + rng.IntN(5*dur+1)
		} else {
			w = 1 + rng.Int64N(8)
			dur = 1 + rng.IntN(6)
			window = dur + rng.IntN(dur+1)
		}
		window = min(window, horizon)
		a := rng.IntN(horizon - window + 1)
		density := 0.5 + 3.5*rng.Float64()
		jobs[j] = Job{
			ID:       fmt.Sprint(j),
			Arrival:  Slot(a),
			Deadline: Slot(a + window),
			Duration: Slot(dur),
			Width:    w,
			Value:    density * float64(w) * float64(dur),
		}
	}
	return jobs
}

func BenchmarkUpperBound(b *testing.B) {
	for _, horizon := range []int{2016, 4032} {
		b.Run(fmt.Sprint(horizon, "slots"), func(b *testing.B) {
			jobs := benchBoundJobs(7, 10000, horizon)
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				UpperBound(jobs, 100)
			}
			b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/op")
		})
	}
}
