package auction

import (
	"bytes"
	"encoding/json"
	"io"
	"syscall"
	"testing"
	"time"
)

// cpuTime is this process's CPU time so far (user + system, every thread: the
// collector's too), which a loaded machine changes far less than wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopCPU runs b's loop over f and reports its CPU time per run as cpu-ms/op.
func loopCPU(b *testing.B, f func()) {
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		f()
	}
	b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkSolveProcessPhases times, in process, the three parts of `auction solve
// --no-final-round` on the 10,000 x 1,000 market past the process's start-up:
// decoding and validating its JSON, the clock, and encoding the result. Together
// with the start-up (GODEBUG=inittrace=1) they are the whole process that
// tools/pyclock/bench.sh compares with the plain-Python clock (docs/benchmarks.md).
// Each reports its CPU time (cpu-ms/op) beside the wall time.
func BenchmarkSolveProcessPhases(b *testing.B) {
	data, err := json.Marshal(Generate(benchSizes[1].cfg))
	if err != nil {
		b.Fatal(err)
	}
	decode := func() Instance {
		inst, err := DecodeInstance(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		inst.Params.FinalRound = &FinalParams{Off: true}
		return inst
	}
	solve := func(inst Instance) Result {
		res, err := Solve(inst, Options{})
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	b.Run("decode", func(b *testing.B) { loopCPU(b, func() { decode() }) })
	inst := decode()
	b.Run("solve", func(b *testing.B) { loopCPU(b, func() { solve(inst) }) })
	res := solve(inst)
	b.Run("encode", func(b *testing.B) {
		loopCPU(b, func() {
			if err := res.Encode(io.Discard); err != nil {
				b.Fatal(err)
			}
		})
	})
}
