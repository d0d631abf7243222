package auction

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuSeconds is the process's user and system CPU time so far: the solver's
// benchmarks report CPU, which the machine's load disturbs less than wall time.
func cpuSeconds(tb testing.TB) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// solverInstance is a CATS file of testdata/cats (name.json) or, for a name
// dist-96x450, the generated instance the other CATS benchmarks use.
func solverInstance(tb testing.TB, name string) Instance {
	if dist, ok := strings.CutSuffix(name, "-96x450"); ok {
		inst, err := GenerateCATS(dist, 96, 450, 1)
		if err != nil {
			tb.Fatal(err)
		}
		return inst
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "cats", name+".json"))
	if err != nil {
		tb.Fatal(err)
	}
	inst, err := DecodeInstance(bytes.NewReader(raw))
	if err != nil {
		tb.Fatal(err)
	}
	return inst
}

// BenchmarkFinalRoundProofCPU runs the clock and the final round with no time
// limit that binds (10 minutes) and capped-price payments, so that it measures the
// round's own search to its proof, and reports its CPU seconds (the clock's and
// the supporting prices' included: a few milliseconds), the welfare and whether
// it was proved. Not arbitrary 64x300, which the round does not prove optimal
// within its time limit.
func BenchmarkFinalRoundProofCPU(b *testing.B) {
	for _, name := range []string{"regions-96x450", "regions-64x300", "paths-64x300",
		"matching-64x300", "scheduling-64x300"} {
		b.Run(name, func(b *testing.B) {
			inst := solverInstance(b, name)
			inst.Params.FinalRound = &FinalParams{Seconds: 600}
			var res Result
			cpu := 0.0
			for b.Loop() {
				before := cpuSeconds(b)
				var err error
				if res, err = Solve(inst, Options{CappedPayments: true}); err != nil {
					b.Fatal(err)
				}
				cpu += cpuSeconds(b) - before
			}
			proved := 0.0
			if res.FinalRound.Optimal {
				proved = 1
			}
			b.Logf("welfare %.12g, winners %v", res.FinalRound.Welfare, res.Winners)
			b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
			b.ReportMetric(res.FinalRound.Welfare, "welfare")
			b.ReportMetric(proved, "proved")
		})
	}
}

// BenchmarkVCGStepCPU times core payments' first step alone (vcgPayments: one
// proved winner determination per winner without it) on the largest part of a
// CATS instance, from the part's optimal allocation (proved first, untimed), and
// reports its CPU seconds (on every processor: the solves run in parallel), its
// wall seconds, and the sum of the VCG payments (which must not change).
func BenchmarkVCGStepCPU(b *testing.B) {
	for _, name := range []string{"matching-96x450", "regions-64x300", "paths-64x300", "scheduling-64x300"} {
		b.Run(name, func(b *testing.B) {
			far := time.Now().Add(time.Hour)
			var p *problem
			for _, part := range compile(solverInstance(b, name)).decompose() {
				if p == nil || len(part.cols) > len(p.cols) {
					p = part
				}
			}
			s := p.solve(far, 0)
			if !s.optimal {
				b.Fatal("the part's optimum is not proved")
			}
			var vcg []float64
			cpu := 0.0
			b.ResetTimer()
			for b.Loop() {
				before := cpuSeconds(b)
				var proved bool
				if vcg, _, proved = p.vcgPayments(s.choice, s.value, far, 0); !proved {
					b.Fatal("a VCG solve is not proved")
				}
				cpu += cpuSeconds(b) - before
			}
			sum := 0.0
			for _, v := range vcg {
				sum += v
			}
			b.Logf("VCG payments %.9g", vcg)
			b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
			b.ReportMetric(sum, "vcg-sum")
		})
	}
}
