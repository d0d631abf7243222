// Package racetest tells a test whether its binary runs under the race detector, so
// that a long test whose work is not concurrency (a simulation or a solver on one
// goroutine, a scale run, kills of a child process) can leave `make test`'s race pass
// for its pass without the detector, which runs exactly those tests (the Makefile's
// NORACE_RUN; the root package's TestEveryRaceSkipRunsWithoutRace checks the list).
package racetest

import "testing"

// Enabled reports whether the binary was built with -race.
const Enabled = enabled

// SkipUnderRace skips t under the race detector, saying why the detector has nothing
// to find in it. Call it only from a test whose concurrency other tests cover under
// -race, and list the test in the Makefile's NORACE_RUN: `make test` then runs it
// without the detector, which multiplied its CPU time several times.
func SkipUnderRace(t testing.TB, why string) {
	t.Helper()
	if Enabled {
		t.Skip("-race: " + why + "; make test runs it in its pass without the race detector (NORACE_RUN)")
	}
}
