package abacus

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkSolve: the paper's default size (goal: under 50 microseconds, against the
// paper's 7 ms in Java) and 10,000 jobs x 16 resources (goal: under 50 ms), on the
// paper's random instances, validation included; 1,000 x 16 beside 10,000 x 16 shows
// memory growing linearly in jobs x resources.
func BenchmarkSolve(b *testing.B) {
	for _, size := range []struct{ jobs, resources int }{{32, 4}, {1000, 16}, {10000, 16}} {
		for _, kind := range []Utility{Linear, Log} {
			b.Run(fmt.Sprintf("%s/%dx%d", kind, size.jobs, size.resources), func(b *testing.B) {
				inst := Generate(rand.New(rand.NewPCG(1, 1)), size.jobs, size.resources, kind)
				opt := DefaultOptions()
				var res Result
				b.ReportAllocs()
				for b.Loop() {
					res = mustSolve(b, inst, opt)
				}
				b.ReportMetric(float64(res.Iterations), "iterations")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(res.Iterations), "ns/round")
			})
		}
	}
}

// BenchmarkRotationNext: dealing one unit of a pool with 1,000 jobs, all eligible.
func BenchmarkRotationNext(b *testing.B) {
	inst := Generate(rand.New(rand.NewPCG(1, 1)), 1000, 1, Linear)
	res := mustSolve(b, inst, DefaultOptions())
	shares := make(map[string]float64, len(inst.Jobs))
	for i, job := range inst.Jobs {
		shares[job.ID] = res.Shares[i][0]
	}
	r, _ := NewRotation(shares)
	b.ReportAllocs()
	for b.Loop() {
		r.Next(nil)
	}
}

// BenchmarkSolveSLO: the greedy SLO step on the paper's default size, half the jobs
// with an SLO of half their utility at equal shares.
func BenchmarkSolveSLO(b *testing.B) {
	inst := Generate(rand.New(rand.NewPCG(1, 1)), PaperUsers, PaperResources, Linear)
	for i := range inst.Jobs {
		if i%2 == 0 {
			min := 0.0
			for _, w := range inst.Jobs[i].Weights {
				min += w / float64(PaperUsers) / 2
			}
			inst.Jobs[i].MinUtility = &min
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SolveSLO(inst, DefaultOptions()); err != nil {
			b.Fatal(err)
		}
	}
}
