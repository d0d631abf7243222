package auction_test

import (
	"math"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
)

// TestGeneratedCATSFinalRound runs the final round on CATS-like instances of every
// distribution at 96 goods x 450 bids and compares it with cbc's optimum: at least
// 95% of it, never above it, never below the clock, with a bound not below it.
func TestGeneratedCATSFinalRound(t *testing.T) {
	skipCATSShort(t)
	t.Logf("| instance | bidders | clock | final round | optimum | final/optimum | proved | seconds | cbc seconds |")
	for _, dist := range auction.CATSDistributions {
		inst, err := auction.GenerateCATS(dist, 96, 450, 1)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		opt, _ := cbcOptimum(t, inst)
		cbcSeconds := time.Since(start).Seconds()
		inst.Params.FinalRound = &auction.FinalParams{Seconds: 120}
		res, err := auction.Solve(inst, auction.Options{MaxNodes: catsNodes})
		if err != nil || !res.Converged {
			t.Fatalf("%s: %v converged=%v", dist, err, res.Converged)
		}
		if err := auction.Check(inst, res); err != nil {
			t.Fatalf("%s: %v", dist, err)
		}
		f := res.FinalRound
		w := auction.Welfare(inst, res)
		if w > opt+1e-6*opt || w < 0.95*opt || f.Bound < opt-1e-6*opt || math.IsNaN(w) {
			t.Errorf("%s: welfare %.2f, bound %.2f, optimum %.2f", dist, w, f.Bound, opt)
		}
		t.Logf("| %s-96x450 | %d | %.2f | %.2f | %.2f | %.1f%% | %v | %.2f | %.2f |", dist, len(inst.Bidders), f.ClockWelfare, w, opt, 100*w/opt, f.Optimal, f.Seconds, cbcSeconds)
	}
}
