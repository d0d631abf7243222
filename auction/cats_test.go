package auction_test

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/internal/racetest"
)

// catsFiles are the five CATS instances in testdata/cats (a copy of
// shared/data/cats), the optimal welfare its README lists, and the SHA-256 of each
// file, which keeps that optimum from going stale.
var catsFiles = []struct {
	name    string
	optimum float64
	sha256  string
	// slowCBC marks the instance cbc needs minutes to prove (arbitrary: about 1 to 2
	// minutes of one core): the tests take its optimum from the list, pinned to the
	// file by its hash, and re-derive it with cbc only under -cbc-all. cbc re-derives
	// the others' every run (a second or two each).
	slowCBC bool
}{
	{"regions-64x300.json", 4046975.95, "2b047bbee15add83b5230fc144308a2cfef7317d4159ce82ba575f5a70e3dca8", false},
	{"arbitrary-64x300.json", 3618537.73, "77362dddf7924dc2efd7441365e72d7a97d28ccb1bb2415884a4512c3c890ec3", true},
	{"paths-64x300.json", 25650.39, "fda41788d7b28b6433b5c41d69c651e410c8a0e9b2dbe89e77c9a1f1d46fbf0e", false},
	{"matching-64x300.json", 105497.81, "7aa32debbcc93ef0cb275d59ed2785faab03083ba46964cb103c2429553a02fc", false},
	{"scheduling-64x300.json", 46931.25, "3cee442f87153c2a5625dc693c67306fd439fec65f7dc41edc0892b82f441e50", false},
}

// cbcAll re-derives every pinned optimum with cbc, the slow ones too (several
// minutes): go test -run CATS ./auction -args -cbc-all.
var cbcAll = flag.Bool("cbc-all", false, "re-derive every pinned CATS optimum with cbc (minutes)")

func readCATS(t testing.TB, name string) auction.Instance {
	inst, _ := readCATSSum(t, name)
	return inst
}

// readCATSSum reads a CATS instance and the SHA-256 of its file, in hex.
func readCATSSum(t testing.TB, name string) (auction.Instance, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "cats", name))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := auction.DecodeInstance(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return inst, fmt.Sprintf("%x", sha256.Sum256(raw))
}

// skipCATSShort skips a CATS comparison with cbc's optimum under -short: each
// takes tens of seconds to minutes.
func skipCATSShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: solving the CATS instances and their exact optimum with cbc")
	}
	racetest.SkipUnderRace(t, "the final round searches on one goroutine")
}

// catsNodes caps branch and bound in the CATS test so that it stops at the same
// node on any machine; the time limit is set well above what that takes.
const catsNodes = 400

// TestCATSFinalRound solves every CATS instance with the clock and the final round
// and compares the welfare with the exact optimum, the README's (cbc re-derives it
// except for the slow instance, whose file its hash pins): the final round reaches
// at least 95% of it, never beats it, never falls below the clock, and its bound is
// never below the optimum. The table is printed with -v.
func TestCATSFinalRound(t *testing.T) {
	skipCATSShort(t)
	t.Logf("| instance | clock | final round | optimum | final/optimum | proved | seconds |")
	for _, c := range catsFiles {
		inst, sum := readCATSSum(t, c.name)
		if sum != c.sha256 {
			t.Fatalf("%s changed (SHA-256 %s): re-derive its optimum with cbc (-cbc-all) and update the README and catsFiles", c.name, sum)
		}
		opt := c.optimum
		if !c.slowCBC || *cbcAll {
			cbc, _ := cbcOptimum(t, inst)
			if math.Abs(cbc-c.optimum) > 0.01 {
				t.Fatalf("%s: cbc finds %.4f, the README lists %.2f", c.name, cbc, c.optimum)
			}
			opt = cbc
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
