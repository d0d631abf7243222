package sharing

import (
	"math"
	"math/rand/v2"

	"github.com/clearhouse/clearhouse"
)

// Coalition is a set of players (bit i set: player i is in), at most 64 of them.
type Coalition uint64

// MaxExactPlayers is the most players ShapleyExact takes (2^n values are kept).
const MaxExactPlayers = 24

// ShapleyExact returns the Shapley value of each of n players of the game whose value
// is values[c] for each coalition c (len(values) == 1<<n; values[0], the empty
// coalition, is taken as 0): phi_i = sum over coalitions S without i of
// |S|! (n-|S|-1)! / n! (v(S + i) - v(S)). The values sum to v(all players)
// (efficiency); players who add the same to every coalition get the same value
// (symmetry); a player who adds nothing gets 0 (null player). EINVALID when n is
// outside [1, MaxExactPlayers] or values has the wrong length.
func ShapleyExact(n int, values []float64) ([]float64, error) {
	if n < 1 || n > MaxExactPlayers {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "players: between 1 and %d for exact Shapley values", MaxExactPlayers)
	}
	if len(values) != 1<<n {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "values: %d given, %d coalitions", len(values), 1<<n)
	}
	// weight[s] = s! (n-s-1)! / n!, computed through logs to stay finite for large n.
	weight := make([]float64, n)
	for s := range n {
		lg1, _ := math.Lgamma(float64(s + 1))
		lg2, _ := math.Lgamma(float64(n - s))
		lg3, _ := math.Lgamma(float64(n + 1))
		weight[s] = math.Exp(lg1 + lg2 - lg3)
	}
	v := func(c int) float64 {
		if c == 0 {
			return 0
		}
		return values[c]
	}
	phi := make([]float64, n)
	for c := range 1 << n {
		size := popcount(uint64(c))
		for i := range n {
			if c&(1<<i) == 0 {
				phi[i] += weight[size] * (v(c|1<<i) - v(c))
			}
		}
	}
	return phi, nil
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// Permutations draws k random orders of n players from rng (Fisher-Yates): the
// permutations ShapleySampled averages over.
func Permutations(n, k int, rng *rand.Rand) [][]int {
	out := make([][]int, k)
	for p := range out {
		perm := make([]int, n)
		for i := range perm {
			perm[i] = i
		}
		for i := n - 1; i > 0; i-- {
			j := rng.IntN(i + 1)
			perm[i], perm[j] = perm[j], perm[i]
		}
		out[p] = perm
	}
	return out
}

// PrefixCoalitions lists every coalition ShapleySampled needs for perms: each prefix of
// each permutation (the empty one excluded), once, in first-seen order.
func PrefixCoalitions(perms [][]int) []Coalition {
	seen := map[Coalition]bool{}
	var out []Coalition
	for _, perm := range perms {
		var c Coalition
		for _, i := range perm {
			c |= 1 << i
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// ShapleySampled estimates the Shapley values by permutation Monte Carlo: each
// player's mean marginal value v(P + i) - v(P) over the given permutations, P the
// players before i. value must know every coalition PrefixCoalitions(perms) lists
// (value of the empty coalition: 0). The estimate is unbiased and still efficient:
// for every permutation the marginals sum to v(all players). EINVALID for no
// permutation, a permutation that is not an order of the n players, or n outside
// [1, 64].
func ShapleySampled(n int, perms [][]int, value func(Coalition) float64) ([]float64, error) {
	if n < 1 || n > 64 {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "players: between 1 and 64")
	}
	if len(perms) == 0 {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "permutations: at least one")
	}
	for k, perm := range perms {
		var c Coalition
		for _, i := range perm {
			if i < 0 || i >= n || c&(1<<i) != 0 {
				return nil, clearhouse.Errorf(clearhouse.EINVALID, "permutations[%d]: not an order of the %d players", k, n)
			}
			c |= 1 << i
		}
		if len(perm) != n {
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "permutations[%d]: not an order of the %d players", k, n)
		}
	}
	phi := make([]float64, n)
	for _, perm := range perms {
		var c Coalition
		prev := 0.0
		for _, i := range perm {
			c |= 1 << i
			cur := value(c)
			phi[i] += cur - prev
			prev = cur
		}
	}
	for i := range phi {
		phi[i] /= float64(len(perms))
	}
	return phi, nil
}
