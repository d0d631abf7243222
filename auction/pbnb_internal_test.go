package auction

import (
	"math"
	"runtime"
	"testing"
	"time"
)

// catsParts returns the parts of a CATS file, each with its optimal solution,
// from the bidders' choices at the starting prices (as BenchmarkCoreStep).
func catsParts(t *testing.T, name string) ([]*problem, []solution) {
	t.Helper()
	inst, err := catsFile(name)()
	if err != nil {
		t.Fatal(err)
	}
	c := compile(inst)
	for bi := range c.bidders {
		c.set(bi, c.choose(&c.bidders[bi]))
	}
	var ps []*problem
	var ss []solution
	for _, p := range c.decompose() {
		s := p.solve(time.Now().Add(time.Hour), 0)
		if !s.optimal {
			t.Fatalf("%s: a part of %d columns not proved optimal", name, len(p.cols))
		}
		ps, ss = append(ps, p), append(ss, s)
	}
	return ps, ss
}

// Branch and bound on several goroutines proves the same optimum as on one: on
// the CATS 64x300 files, the first separation of each part (each winner's
// columns worth its VCG payment: the most blocking coalition at VCG prices), as
// separation runs it (a payment solve: proof), with 1 and 4 workers. On
// regions 64x300 the search takes some 200 nodes, so under -race this is the
// test that runs many nodes on several workers.
func TestParallelBranchAndBoundProvesTheSameOptimum(t *testing.T) {
	for _, name := range []string{"matching-64x300.json", "paths-64x300.json", "regions-64x300.json"} {
		ps, ss := catsParts(t, name)
		for i, p := range ps {
			choice := ss[i].choice
			w, _ := p.winnerValues(choice)
			vcg, _, ok := p.vcgPayments(choice, ss[i].value, time.Now().Add(time.Hour), 0)
			if !ok {
				t.Fatalf("%s part %d: VCG not proved", name, i)
			}
			var want float64
			var nodes []int
			for _, workers := range []int{1, 4} {
				q := p.variant(-1, choice, func(lb int32, v float64) float64 {
					if choice[lb] >= 0 {
						return v - (w[lb] - vcg[lb])
					}
					return v
				})
				q.workers = workers
				s := q.solve(time.Now().Add(time.Hour), 0)
				if workers == 1 {
					want = s.value
				}
				if !s.optimal || math.Abs(s.value-want) > pruneTol(want) {
					t.Fatalf("%s part %d, %d workers: %.6f (optimal %v), one worker %.6f",
						name, i, workers, s.value, s.optimal, want)
				}
				if !q.feasible(s.choice) || math.Abs(q.value(s.choice)-s.value) > 1e-9*max(1, math.Abs(s.value)) {
					t.Fatalf("%s part %d: the allocation is not feasible or not worth %.6f", name, i, s.value)
				}
				nodes = append(nodes, s.nodes)
			}
			t.Logf("%s part %d: %v nodes with 1 and 4 workers", name, i, nodes)
		}
	}
}

// Separation on several goroutines (the default: one worker per processor)
// reaches the same core point as on one, within the core tolerance: the point
// (least revenue, then nearest VCG) is unique, only the path to it differs. On
// the CATS matching and paths 64x300 files; under -race this is the test that
// runs the parallel separation.
func TestParallelSeparationFindsTheSameCorePoint(t *testing.T) {
	for _, name := range []string{"matching-64x300.json", "paths-64x300.json"} {
		ps, ss := catsParts(t, name)
		for i, p := range ps {
			pay := func(procs int) coreResult {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				res, ok := p.corePayments(ss[i].choice, ss[i].value, time.Now().Add(time.Hour), Options{})
				if !ok {
					t.Fatalf("%s part %d, %d processors: core payments failed", name, i, procs)
				}
				return res
			}
			one, four := pay(1), pay(4)
			tol := coreTol(ss[i].value)
			for lb := range one.pi {
				if math.Abs(one.pi[lb]-four.pi[lb]) > tol || one.vcg[lb] != four.vcg[lb] {
					t.Errorf("%s part %d, bidder %d: pays %.6f (VCG %.6f) on one processor, %.6f (VCG %.6f) on four",
						name, i, lb, one.pi[lb], one.vcg[lb], four.pi[lb], four.vcg[lb])
				}
			}
			t.Logf("%s part %d: %d and %d constraints", name, i, one.coalitions, four.coalitions)
		}
	}
}
