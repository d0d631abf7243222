package auction

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkCoreStep times the core step alone (corePayments: the VCG solves and
// constraint generation) on the CATS instances whose allocation the round proves
// optimal, with a budget of an hour so that every run finishes, and reports its
// process CPU time (every thread: the VCG solves run one per processor) per run
// as cpu-s, the constraints (blocking coalitions) it added, the revenue and VCG
// revenue above reserve value, and the most a coalition still blocks the payments
// by, found by the part's own branch and bound proved to the end (outside the
// timing; cbc checks the same in BenchmarkCorePaymentsCATS). The parts are solved
// from the bidders' choices at the starting prices rather than after the clock:
// the optimum is the same, only the Lagrangian's starting prices differ.
//
//	go test -run '^$' -bench 'CoreStep/matching-96x450' -benchtime 1x ./auction/
func BenchmarkCoreStep(b *testing.B) {
	cases := []struct {
		name string
		inst func() (Instance, error)
	}{
		{"matching-96x450", func() (Instance, error) { return GenerateCATS("matching", 96, 450, 1) }},
		{"paths-96x450", func() (Instance, error) { return GenerateCATS("paths", 96, 450, 1) }},
		{"matching-64x300", catsFile("matching-64x300.json")},
		{"paths-64x300", catsFile("paths-64x300.json")},
		{"regions-64x300", catsFile("regions-64x300.json")},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			inst, err := tc.inst()
			if err != nil {
				b.Fatal(err)
			}
			c := compile(inst)
			for bi := range c.bidders {
				c.set(bi, c.choose(&c.bidders[bi]))
			}
			type part struct {
				p *problem
				s solution
			}
			var parts []part
			for _, p := range c.decompose() {
				s := p.solve(time.Now().Add(time.Hour), 0)
				if !s.optimal {
					b.Fatalf("a part of %d columns not proved optimal", len(p.cols))
				}
				parts = append(parts, part{p, s})
			}
			var cpu time.Duration
			var results []coreResult
			for b.Loop() {
				results = results[:0]
				start := cpuTime(b)
				for _, pt := range parts {
					res, ok := pt.p.corePayments(pt.s.choice, pt.s.value, time.Now().Add(time.Hour), Options{})
					if !ok {
						b.Fatalf("core payments failed on a part of %d columns", len(pt.p.cols))
					}
					results = append(results, res)
				}
				cpu += cpuTime(b) - start
			}
			constraints, revenue, vcg, blocking := 0, 0.0, 0.0, 0.0
			for i, pt := range parts {
				res := results[i]
				constraints += res.coalitions
				choice, paid := pt.s.choice, 0.0
				for lb, j := range choice {
					if j >= 0 {
						paid += res.pi[lb]
						vcg += res.vcg[lb]
					}
				}
				revenue += paid
				w := make([]float64, len(choice))
				for lb, j := range choice {
					if j >= 0 {
						w[lb] = pt.p.cols[j].w
					}
				}
				q := pt.p.variant(-1, choice, func(lb int32, v float64) float64 {
					if choice[lb] >= 0 {
						return v - (w[lb] - res.pi[lb])
					}
					return v
				})
				s := q.solve(time.Now().Add(time.Hour), 0)
				if !s.optimal {
					b.Fatal("the blocking check was not proved")
				}
				blocking = max(blocking, s.value-paid)
			}
			b.Logf("%s: %d constraints, revenue %.4f, VCG revenue %.4f, most blocking %.6f", tc.name, constraints, revenue, vcg, blocking)
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s")
			b.ReportMetric(float64(constraints), "constraints")
			b.ReportMetric(revenue, "revenue")
			b.ReportMetric(vcg, "vcg-revenue")
			b.ReportMetric(blocking, "max-blocking")
		})
	}
}

// catsFile reads a CATS instance from testdata/cats.
func catsFile(name string) func() (Instance, error) {
	return func() (Instance, error) {
		f, err := os.Open(filepath.Join("testdata", "cats", name))
		if err != nil {
			return Instance{}, err
		}
		defer f.Close()
		return DecodeInstance(f)
	}
}
