package auction_test

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
)

// The clock re-evaluates long queues of bidders on several cores (from 4,096 queued
// bidders) and applies their choices in queue order, so the result is the same on
// one core and on several. This is also the test that runs that parallel step under
// the race detector: the scale tests that reach it (exchange's 100,000 orders) run
// without it (Makefile, NORACE_RUN).
func TestSolveIsTheSameOnOneCoreAndOnSeveral(t *testing.T) {
	inst := auction.Generate(auction.GenConfig{Seed: 3, Clusters: 2, Resources: 2, Bidders: 6000, Scarcity: 2})
	inst.Params.FinalRound = &auction.FinalParams{Off: true} // the clock alone: the final round stops on a clock
	solve := func(procs int) auction.Result {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		res, err := auction.Solve(inst, auction.Options{})
		if err != nil || !res.Converged {
			t.Fatalf("GOMAXPROCS %d: %v, converged %v", procs, err, res.Converged)
		}
		res.Seconds = 0
		return res
	}
	one, several := solve(1), solve(4)
	if len(one.Winners) == 0 {
		t.Fatal("nobody won: the instance does not exercise the clock")
	}
	if !reflect.DeepEqual(one, several) {
		t.Fatalf("one core: %d rounds, prices %v; four: %d rounds, prices %v", one.Rounds, one.Prices, several.Rounds, several.Prices)
	}
}
