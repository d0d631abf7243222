package scheduler

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// BenchmarkMakeReservation: a 14-day horizon of 5-minute slots (4,032 slots), a
// 10,000-unit pool, requests of W up to 1,000 units for up to 4 hours inside
// windows up to 12 hours wide, arriving as the clock advances. Each call is timed
// alone; the median and 99th percentile are reported.
func BenchmarkMakeReservation(b *testing.B) {
	for _, algo := range []struct {
		name string
		new  func() Algorithm
	}{
		{"econ", func() Algorithm { return BasicEcon{Predictor: NewSeasonal(300)} }},
		{"greedy", func() Algorithm { return Greedy{UnitPrice: 0.5} }},
	} {
		b.Run(algo.name, func(b *testing.B) {
			const horizon, capacity = 14 * 288, 10000
			rng := rand.New(rand.NewPCG(1, 2))
			bids := make([]Bid, 4096)
			for i := range bids {
				d := Slot(1 + rng.IntN(48))
				bids[i] = Bid{Requests: []Request{{Config: Config{"c/cpu": 1}, Count: 1 + rng.Int64N(1000), Duration: d}},
					Value: float64(1 + rng.IntN(100000))}
			}
			e := NewEngine(horizon, map[string]int64{"c/cpu": capacity}, algo.new())
			lat := make([]time.Duration, 0, b.N)
			now := Slot(0)
			b.ResetTimer()
			for i := range b.N {
				bid := bids[i%len(bids)]
				r := bid.Requests[0]
				if now+r.Duration+144 > horizon {
					b.StopTimer()
					e, now = NewEngine(horizon, map[string]int64{"c/cpu": capacity}, algo.new()), 0
					b.StartTimer()
				}
				r.Arrival, r.Deadline = now, now+r.Duration+Slot(rng.IntN(144))
				bid.Requests = []Request{r}
				start := time.Now()
				if _, _, err := e.MakeReservation(now, bid); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				if i%8 == 7 {
					now++ // eight requests a slot: the pool stays busy
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "µs-median")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "µs-p99")
		})
	}
}

// BenchmarkSimulate10k replays 10,000 generated jobs with Basic-Econ and the
// seasonal predictor (target: under 2 seconds).
func BenchmarkSimulate10k(b *testing.B) {
	jobs := GenerateMapReduce(10000, 1, 100)
	b.ResetTimer()
	for range b.N {
		if _, err := Simulate(jobs, 100, BasicEcon{Predictor: NewSeasonal(300)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/sim")
}
