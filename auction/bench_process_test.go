package auction

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// BenchmarkSolveProcessPhases times, in process, the three parts of `auction solve
// --no-final-round` on the 10,000 x 1,000 market past the process's start-up:
// decoding and validating its JSON, the clock, and encoding the result. Together
// with the start-up (GODEBUG=inittrace=1) they are the whole process that
// tools/pyclock/bench.sh compares with the plain-Python clock (docs/benchmarks.md).
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
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decode()
		}
	})
	inst := decode()
	b.Run("solve", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			solve(inst)
		}
	})
	res := solve(inst)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := res.Encode(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
}
