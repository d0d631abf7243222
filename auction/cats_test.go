package auction_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/internal/racetest"
)

// catsFiles are the five CATS instances in testdata/cats (a copy of
// shared/data/cats) and the optimal welfare its README lists.
var catsFiles = []struct {
	name    string
	optimum float64
}{
	{"regions-64x300.json", 4046975.95},
	{"arbitrary-64x300.json", 3618537.73},
	{"paths-64x300.json", 25650.39},
	{"matching-64x300.json", 105497.81},
	{"scheduling-64x300.json", 46931.25},
}

func readCATS(t testing.TB, name string) auction.Instance {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "cats", name))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := auction.DecodeInstance(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return inst
}

// skipCATSShort skips a CATS comparison with cbc's optimum under -short: each
// takes tens of seconds to minutes.
func skipCATSShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: solving the CATS instances and their exact optimum with cbc")
	}
	racetest.SkipCPUBound(t) // the final round's search on one goroutine
}

// catsNodes caps branch and bound in the CATS test so that it stops at the same
// node on any machine; the time limit is set well above what that takes.
const catsNodes = 400

// TestCATSFinalRound solves every CATS instance with the clock and the final round
// and compares the welfare with the exact optimum from cbc (which must match the
// README's): the final round reaches at least 95% of it, never beats it, never
// falls below the clock, and its bound is never below the optimum. The table is
// printed with -v.
func TestCATSFinalRound(t *testing.T) {
	skipCATSShort(t)
	t.Logf("| instance | clock | final round | optimum | final/optimum | proved | seconds |")
	for _, c := range catsFiles {
		inst := readCATS(t, c.name)
		opt, _ := cbcOptimum(t, inst)
		if math.Abs(opt-c.optimum) > 0.01 {
			t.Fatalf("%s: cbc finds %.4f, the README lists %.2f", c.name, opt, c.optimum)
		}
		inst.Params.FinalRound = &auction.FinalParams{Seconds: 120}
		res, err := auction.Solve(inst, auction.Options{MaxNodes: catsNodes})
		if err != nil || !res.Converged || res.FinalRound == nil {
			t.Fatalf("%s: %v converged=%v", c.name, err, res.Converged)
		}
		if err := auction.Check(inst, res); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		f := res.FinalRound
		w := auction.Welfare(inst, res)
		switch {
		case w > opt+1e-6*opt:
			t.Fatalf("%s: welfare %v beats the optimum %v", c.name, w, opt)
		case w < 0.95*opt:
			t.Errorf("%s: welfare %.2f is %.1f%% of the optimum %.2f", c.name, w, 100*w/opt, opt)
		case f.Bound < opt-1e-6*opt:
			t.Errorf("%s: bound %v is below the optimum %v", c.name, f.Bound, opt)
		case f.Optimal && w < opt-1e-6*opt:
			t.Errorf("%s: claims optimality at %v, optimum %v", c.name, w, opt)
		}
		t.Logf("| %s | %.2f | %.2f | %.2f | %.1f%% | %v | %.2f |", c.name, f.ClockWelfare, w, opt, 100*w/opt, f.Optimal, f.Seconds)
	}
}
