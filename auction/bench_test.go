package auction

import (
	"testing"
)

// benchSizes are the three scales: the paper's 100 x 100, and two larger
// markets. Pools = clusters x 10 resource types.
var benchSizes = []struct {
	name string
	cfg  GenConfig
}{
	{"100x100", GenConfig{Seed: 1, Clusters: 10, Resources: 10, Bidders: 100, Scarcity: 1.5}},
	{"10000x1000", GenConfig{Seed: 2, Clusters: 100, Resources: 10, Bidders: 10_000, Scarcity: 1.5}},
	{"100000x3300", GenConfig{Seed: 3, Clusters: 330, Resources: 10, Bidders: 100_000, Scarcity: 1.5}},
}

// BenchmarkSolve solves generated instances (validation included; generation not).
func BenchmarkSolve(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			inst := Generate(s.cfg)
			b.ReportAllocs()
			b.ResetTimer()
			var res Result
			for b.Loop() {
				var err error
				if res, err = Solve(inst, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.Rounds), "rounds/op")
			b.ReportMetric(float64(len(res.Winners)), "allocations/op")
		})
	}
}
