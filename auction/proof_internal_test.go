package auction

import (
	"slices"
	"testing"
	"time"
)

// A payment copy of a part (variant: reduced-cost fixing, most-fractional
// branching, W as the first bound, the root LP re-solved from the part's with
// the bidder's columns fixed out, as vcgPayments does) proves the same optimum
// as the round's own search from scratch: on small CATS markets (24 goods, 96 bids) of every distribution, W(N \ j) for every winner j
// agrees both ways, and each proof-mode solve is proved.
func TestProofModeAgreesWithTheRoundsSearch(t *testing.T) {
	// No deadline in practice (go test's timeout bounds a hang): with a minute for the
	// whole test, proofs ran out of time under -race on a loaded machine and failed it.
	far := time.Now().Add(time.Hour)
	solves, nodes := 0, 0
	for _, dist := range CATSDistributions {
		for seed := range uint64(3) {
			inst, err := GenerateCATS(dist, 24, 96, seed+1)
			if err != nil {
				t.Fatal(err)
			}
			c := compile(inst)
			for _, p := range c.decompose() {
				s := p.solve(far, 0)
				if !s.optimal {
					continue
				}
				root, ok := p.nodeLP(&node{}, far)
				if !ok || root.lp == nil {
					t.Fatalf("%s seed %d: the part's root LP: ok %v", dist, seed+1, ok)
				}
				for lb, j := range s.choice {
					if j < 0 {
						continue
					}
					start := slices.Clone(s.choice)
					start[lb] = -1
					plain := p.variant(int32(lb), start, nil)
					plain.proof = false
					want := plain.solve(far, 0)
					q := p.variant(int32(lb), start, nil)
					q.root, q.rootOut = p.warmRoot(root, int32(lb))
					got := q.heuristics(far)
					got.bound = min(got.bound, s.value+pruneTol(s.value))
					q.prove(&got, far, 0)
					if !got.optimal || !want.optimal || got.value < want.value-2*pruneTol(want.value) || got.value > want.value+2*pruneTol(want.value) {
						t.Fatalf("%s seed %d, without local bidder %d: proof mode %v (proved %v), the round's search %v (proved %v)",
							dist, seed+1, lb, got.value, got.optimal, want.value, want.optimal)
					}
					solves++
					nodes += got.nodes
				}
			}
		}
	}
	// Most of them need branch and bound (1,355 nodes in 128 solves when written).
	if solves < 30 || nodes < 3*solves {
		t.Fatalf("only %d solves compared, %d nodes: too few to exercise branch and bound", solves, nodes)
	}
}
