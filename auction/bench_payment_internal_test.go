package auction

import "testing"

// BenchmarkPaymentCPU measures what the final round's payments cost in CPU on
// the 96 x 450 instances whose round is proved optimal, the whole payment step
// as Solve runs it (core payments, supporting prices), with a limit that does
// not bind (10 minutes, so that the core payments always finish): the CPU
// seconds of Solve with core payments less those of the same Solve with
// capped-price payments (the round's own search, deterministic, is the same in
// both) as payment-cpu-s, the first as solve-cpu-s, with the payments' wall
// seconds, whether they were core payments (1) and the constraints added.
//
//	go test -run '^$' -bench 'PaymentCPU/matching-96x450' -benchtime 1x ./auction/
func BenchmarkPaymentCPU(b *testing.B) {
	for _, name := range []string{"matching-96x450", "paths-96x450"} {
		b.Run(name, func(b *testing.B) {
			inst := solverInstance(b, name)
			inst.Params.FinalRound = &FinalParams{Seconds: 600}
			var res Result
			solve, capped := 0.0, 0.0
			for b.Loop() {
				before := cpuSeconds(b)
				if _, err := Solve(inst, Options{CappedPayments: true}); err != nil {
					b.Fatal(err)
				}
				mid := cpuSeconds(b)
				var err error
				if res, err = Solve(inst, Options{}); err != nil {
					b.Fatal(err)
				}
				capped += mid - before
				solve += cpuSeconds(b) - mid
			}
			core := 0.0
			if res.FinalRound.Payments == PaymentsCore {
				core = 1
			}
			n := float64(b.N)
			b.ReportMetric((solve-capped)/n, "payment-cpu-s")
			b.ReportMetric(solve/n, "solve-cpu-s")
			b.ReportMetric(res.FinalRound.PaymentSeconds, "payment-s")
			b.ReportMetric(core, "core")
			b.ReportMetric(float64(res.FinalRound.Coalitions), "coalitions")
		})
	}
}
