package auction_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
)

// generatedOptima are cbc's optima of the generated instances below, with the
// SHA-256 of each instance's JSON, which pins the optimum to the generator's output:
// a change to GenerateCATS fails the test until the optima are re-derived (-cbc-all
// prints them). cbc re-derives the quick ones every run (about a second each);
// arbitrary took it 24 s on a quiet machine and minutes under load, so it is
// re-derived only under -cbc-all.
var generatedOptima = map[string]struct {
	optimum float64
	sha256  string
	slowCBC bool
}{
	"arbitrary":  {7038.6431999999995, "180813a5b68894ce1fe2b2331d4341c7b3c77ecd8cd4ec829bd9d358d49592ed", true},
	"matching":   {5331.2991999999958, "6f2599aad6cec9fcf4ae9dd3f99b9798d94b9fa29850f36c1ccaf4bc09557105", false},
	"paths":      {8872.4202000000041, "c9693ae6737cab592581e60f803bfcc55d8bee1684341309b4a9cf310182de3b", false},
	"regions":    {8269.1752000000051, "d454d627059a331d0a32bcb535d486d0cd07a29bfd6965f42eee9cc1693ef138", false},
	"scheduling": {900.50360000000035, "19aee96a1a25f6fba7e4515416e20577b61b7345eb16f8cc18bdca63fd2203bc", false},
}

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
		raw, err := json.Marshal(inst)
		if err != nil {
			t.Fatal(err)
		}
		sum := fmt.Sprintf("%x", sha256.Sum256(raw))
		pinned, ok := generatedOptima[dist]
		opt, cbcSeconds := pinned.optimum, math.NaN()
		if !ok || sum != pinned.sha256 || !pinned.slowCBC || *cbcAll {
			start := time.Now()
			opt, _ = cbcOptimum(t, inst)
			cbcSeconds = time.Since(start).Seconds()
			if !ok || sum != pinned.sha256 || math.Abs(opt-pinned.optimum) > 0.01 {
				t.Errorf("%s: the generated instance (SHA-256 %s) has cbc's optimum %.17g; generatedOptima pins %.17g for %s",
					dist, sum, opt, pinned.optimum, pinned.sha256)
			}
		}
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
