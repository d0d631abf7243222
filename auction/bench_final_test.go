package auction_test

import (
	"fmt"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
)

// BenchmarkFinalRoundCATS solves each CATS instance (testdata, 64 x 300) and a
// CATS-like one of each distribution at 96 x 450 with the clock and a final round
// limited to 2 s, and reports the welfare as a share of cbc's optimum, whether
// optimality was proved, and the final round's own time.
func BenchmarkFinalRoundCATS(b *testing.B) {
	type bench struct {
		name string
		inst auction.Instance
	}
	var cases []bench
	for _, c := range catsFiles {
		cases = append(cases, bench{c.name, readCATS(b, c.name)})
	}
	for _, dist := range auction.CATSDistributions {
		inst, err := auction.GenerateCATS(dist, 96, 450, 1)
		if err != nil {
			b.Fatal(err)
		}
		cases = append(cases, bench{fmt.Sprintf("%s-96x450", dist), inst})
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			inst := c.inst
			inst.Params.FinalRound = &auction.FinalParams{Seconds: 2}
			benchFinalRound(b, inst)
		})
	}
}

// benchFinalRound solves inst once per iteration and reports its final round's
// welfare and the clock's as shares of cbc's optimum, whether it proved optimality,
// and its time.
func benchFinalRound(b *testing.B, inst auction.Instance) {
	opt, _ := cbcOptimum(b, inst)
	var res auction.Result
	b.ResetTimer()
	for b.Loop() {
		var err error
		if res, err = auction.Solve(inst, auction.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	f := res.FinalRound
	proved := 0.0
	if f.Optimal {
		proved = 1
	}
	b.ReportMetric(f.Welfare/opt, "welfare/optimum")
	b.ReportMetric(f.ClockWelfare/opt, "clock/optimum")
	b.ReportMetric(proved, "proved")
	b.ReportMetric(f.Seconds, "final-s")
}

// BenchmarkFinalRoundCATSDefaultLimit is the final round on the generated 96x450
// instances of the distributions whose optimum it does not prove within 2 s, with its
// default time limit (DefaultFinalSeconds), as a binding run has it.
func BenchmarkFinalRoundCATSDefaultLimit(b *testing.B) {
	for _, dist := range []string{"arbitrary", "regions", "scheduling"} {
		b.Run(dist+"-96x450", func(b *testing.B) {
			inst, err := auction.GenerateCATS(dist, 96, 450, 1)
			if err != nil {
				b.Fatal(err)
			}
			benchFinalRound(b, inst)
		})
	}
}

// BenchmarkFinalRoundQuota runs the clock and the final round with its default
// time limit on quota-shaped markets (BenchmarkSolve's two smaller sizes), and reports the final
// round's time, its payments' time and the share of parts paying core payments, its
// gain over the clock and its proven gap.
func BenchmarkFinalRoundQuota(b *testing.B) {
	for _, s := range []struct {
		name string
		cfg  auction.GenConfig
	}{
		{"100x100", auction.GenConfig{Seed: 1, Clusters: 10, Resources: 10, Bidders: 100, Scarcity: 1.5}},
		{"10000x1000", auction.GenConfig{Seed: 2, Clusters: 100, Resources: 10, Bidders: 10_000, Scarcity: 1.5}},
	} {
		b.Run(s.name, func(b *testing.B) {
			inst := auction.Generate(s.cfg)
			var res auction.Result
			for b.Loop() {
				var err error
				if res, err = auction.Solve(inst, auction.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			f := res.FinalRound
			b.ReportMetric(f.Seconds, "final-s")
			b.ReportMetric(f.PaymentSeconds, "payment-s")
			b.ReportMetric(float64(f.CoreParts)/float64(max(f.Parts, 1)), "core-parts/part")
			b.ReportMetric(f.Welfare/f.ClockWelfare, "welfare/clock")
			b.ReportMetric(100*f.Gap(), "gap-%")
		})
	}
}
