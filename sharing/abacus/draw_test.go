package abacus

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Abacus section 3: a freed unit of resource j goes to job i with probability s_ij,
// one queue per resource. Three jobs always waiting for two resources: over many
// freed units each job's fraction of each resource converges to its s_ij.
func TestDrawsConvergeToTheShares(t *testing.T) {
	s := [][]float64{ // [resource][job]
		{0.5, 0.3, 0.2},
		{0.1, 0.3, 0.6},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200_000
	count := [2][3]int{}
	always := func(int) bool { return true }
	for k := range 2 * n {
		j := k % 2 // units of the two resources are freed in turn
		count[j][DrawForResource(s[j], always, rng)]++
	}
	for j := range s {
		for i, want := range s[j] {
			got := float64(count[j][i]) / n
			// Binomial standard deviation sqrt(s(1-s)/n) <= 0.0012: allow 5 of them.
			if math.Abs(got-want) > 5*math.Sqrt(want*(1-want)/n) {
				t.Errorf("job %d on resource %d: %.4f of the units, s_ij = %v", i, j, got, want)
			}
		}
	}
}

// Only the jobs in the resource's queue take part: the others' share is
// renormalized over the eligible ones; with no share among them the first takes it.
func TestDrawsRenormalizeOverTheQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shares := []float64{0.5, 0.25, 0.25}
	notFirst := func(i int) bool { return i != 0 }
	n, second := 100_000, 0
	for range n {
		switch DrawForResource(shares, notFirst, rng) {
		case 0:
			t.Fatal("a job not in the queue got the unit")
		case 1:
			second++
		}
	}
	if got := float64(second) / float64(n); math.Abs(got-0.5) > 0.01 {
		t.Fatalf("two equal shares in the queue: %.3f, want 0.5", got)
	}
	if got := DrawForResource([]float64{0.7, 0, 0}, notFirst, rng); got != 1 {
		t.Fatalf("zero shares in the queue: %d, want the first eligible (1)", got)
	}
	if got := DrawForResource(shares, func(int) bool { return false }, rng); got != -1 {
		t.Fatalf("an empty queue: %d", got)
	}
}
