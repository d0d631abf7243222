// Package racetest tells a test whether its binary runs under the race detector,
// so that a long test of one goroutine's CPU work (a simulation, a solver against an
// exact optimum, a scale run) can leave `make test`'s race pass for its pass without
// the detector, which runs exactly those tests (the Makefile's NORACE_RUN; the root
// package's TestEveryRaceSkipRunsWithoutRace checks the list).
package racetest

import "testing"

// Enabled reports whether the binary was built with -race.
const Enabled = enabled

// SkipCPUBound skips t under the race detector. Call it only from a test whose
// concurrency other tests cover under -race, and list the test in the Makefile's
// NORACE_RUN: `make test` then runs it without the detector, which multiplied its
// CPU time several times and found nothing it could find.
func SkipCPUBound(t testing.TB) {
	t.Helper()
	if Enabled {
		t.Skip("-race: CPU-bound work of one goroutine; make test runs it in its pass without the race detector (NORACE_RUN)")
	}
}
