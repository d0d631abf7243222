package auction

import (
	"testing"
	"time"
)

// Clique cuts (clique.go) cut off no allocation: on small CATS markets of every
// distribution, with each winner's columns worth less (as in a separation, by
// half the winner's value), the cuts a separation's root finds are cliques of
// pairwise conflicting columns, the optimal allocation found without them holds
// at most one column of each, and the search with them (proof mode, root from
// cutRoot) proves the same optimum as the round's own search without them.
func TestCliqueCutsKeepTheOptimum(t *testing.T) {
	// No deadline in practice (go test's timeout bounds a hang): with a minute for the
	// whole test, proofs ran out of time under -race on a loaded machine and failed it.
	far := time.Now().Add(time.Hour)
	cuts, solves := 0, 0
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
				w, _ := p.winnerValues(s.choice)
				adjust := func(lb int32, v float64) float64 {
					if s.choice[lb] >= 0 {
						return v - w[lb]/2
					}
					return v
				}
				plain := p.variant(-1, s.choice, adjust)
				plain.proof = false
				want := plain.solve(far, 0)
				var cc *cliqueCuts
				q := p.variant(-1, s.choice, adjust)
				got := q.heuristics(far)
				q.cutRoot(&cc, far)
				if cc == nil {
					t.Fatalf("%s seed %d: no clique pool for a part that fits the LP", dist, seed+1)
				}
				q.prove(&got, far, 0)
				if !got.optimal || !want.optimal || got.value < want.value-2*pruneTol(want.value) || got.value > want.value+2*pruneTol(want.value) {
					t.Fatalf("%s seed %d: with clique cuts %v (proved %v), without %v (proved %v)",
						dist, seed+1, got.value, got.optimal, want.value, want.optimal)
				}
				for _, cut := range cc.cuts {
					in := 0
					for a, ja := range cut {
						for _, jb := range cut[a+1:] {
							if !conflict(p, ja, jb) {
								t.Fatalf("%s seed %d: columns %d and %d of a cut do not conflict", dist, seed+1, ja, jb)
							}
						}
						if want.choice[p.cols[ja].bidder] == ja {
							in++
						}
					}
					if in > 1 {
						t.Fatalf("%s seed %d: the optimum holds %d columns of a cut", dist, seed+1, in)
					}
				}
				cuts += len(cc.cuts)
				solves++
			}
		}
	}
	if solves < 10 || cuts == 0 {
		t.Fatalf("%d solves, %d cuts: too few to exercise the cuts", solves, cuts)
	}
	t.Logf("%d solves, %d cuts", solves, cuts)
}

// conflict reports, from the columns themselves, whether no feasible
// allocation holds both a and b: one bidder's, or together over a pool's
// supply where no column sells.
func conflict(p *problem, a, b int32) bool {
	if p.cols[a].bidder == p.cols[b].bidder {
		return true
	}
	for _, ia := range p.cols[a].items {
		for _, ib := range p.cols[b].items {
			if ia.pool != ib.pool || ia.q+ib.q <= p.supply[ia.pool]+feasibleTol {
				continue
			}
			sells := false
			for j := range p.cols {
				for _, it := range p.cols[j].items {
					sells = sells || (it.pool == ia.pool && it.q < 0)
				}
			}
			if !sells {
				return true
			}
		}
	}
	return false
}
