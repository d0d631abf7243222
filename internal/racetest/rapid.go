package racetest

import (
	"flag"
	"fmt"
	"os"
	"strconv"
)

// FewerRapidChecksUnderRace makes every property test (rapid.Check) of the test
// binary run n random cases instead of rapid's 100 when the binary runs under the
// race detector; without it, nothing changes. An explicit -rapid.checks or
// RAPID_CHECKS still wins. Call it from the package's TestMain, after flag.Parse and
// before m.Run (while no test reads rapid's flags).
//
// It is for a package whose property tests spend their time in the market's code
// rather than in concurrency that only they reach: the detector multiplies that
// time, and the rest of the package's tests cover its concurrency under -race. Each
// of those tests then also runs in full in make test's pass without the detector:
// list it in the Makefile's NORACE_RUN and the package in NORACE_PKGS (the root
// package's TestEveryRaceSkipRunsWithoutRace checks both).
func FewerRapidChecksUnderRace(n int) {
	if !Enabled {
		return
	}
	set := os.Getenv("RAPID_CHECKS") != ""
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if set {
		return
	}
	if err := flag.Set("rapid.checks", strconv.Itoa(n)); err != nil {
		panic(fmt.Sprintf("racetest: the binary has no -rapid.checks (does it import pgregory.net/rapid?): %v", err))
	}
}
