package sharing

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/clearhouse/clearhouse"
	"pgregory.net/rapid"
)

// genGame draws a game of n players whose value ignores player null (a null player)
// and treats players i and j alike (symmetric): v(S) = base(canon(S)), where canon
// drops null and, when exactly one of i and j is in S, puts i in its place.
func genGame(t *rapid.T) (n, null, i, j int, values []float64) {
	n = rapid.IntRange(3, 7).Draw(t, "n")
	null, i, j = 0, 1, 2
	base := make([]float64, 1<<n)
	for c := range base {
		base[c] = float64(rapid.IntRange(-50, 100).Draw(t, "v"))
	}
	base[0] = 0 // the empty coalition, and the null player alone, are worth nothing
	values = make([]float64, 1<<n)
	for c := range values {
		k := c &^ (1 << null)
		if (k>>i)&1 != (k>>j)&1 {
			k = k&^(1<<i|1<<j) | 1<<i
		}
		values[c] = base[k]
	}
	values[0] = 0
	return
}

func TestShapleyEfficiencySymmetryAndNullPlayer(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n, null, i, j, values := genGame(t)
		phi, err := ShapleyExact(n, values)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, x := range phi {
			sum += x
		}
		if grand := values[1<<n-1]; math.Abs(sum-grand) > 1e-9*max(1, math.Abs(grand)) {
			t.Fatalf("efficiency: values sum to %v, the grand coalition is worth %v", sum, grand)
		}
		if math.Abs(phi[i]-phi[j]) > 1e-9 {
			t.Fatalf("symmetry: players %d and %d get %v and %v", i, j, phi[i], phi[j])
		}
		if math.Abs(phi[null]) > 1e-9 {
			t.Fatalf("null player gets %v", phi[null])
		}
	})
}

func TestShapleyOfTheMajorityGame(t *testing.T) {
	// three players; any two win: each gets a third
	values := []float64{0, 0, 0, 1, 0, 1, 1, 1}
	phi, err := ShapleyExact(3, values)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range phi {
		if math.Abs(x-1.0/3) > 1e-12 {
			t.Fatalf("%v", phi)
		}
	}
}

// allPermutations lists the n! orders of n players.
func allPermutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range allPermutations(n - 1) {
		for at := 0; at <= len(p); at++ {
			q := append(append(append([]int{}, p[:at]...), n-1), p[at:]...)
			out = append(out, q)
		}
	}
	return out
}

// Averaged over every order, the sampled estimate is the exact value; over a few
// thousand random orders it is close to it.
func TestSampledShapleyAgreesWithExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n, _, _, _, values := genGame(t)
		exact, err := ShapleyExact(n, values)
		if err != nil {
			t.Fatal(err)
		}
		value := func(c Coalition) float64 { return values[c] }
		if n <= 5 {
			all, err := ShapleySampled(n, allPermutations(n), value)
			if err != nil {
				t.Fatal(err)
			}
			for k := range exact {
				if math.Abs(all[k]-exact[k]) > 1e-9 {
					t.Fatalf("over all %d orders player %d gets %v, exactly %v", len(allPermutations(n)), k, all[k], exact[k])
				}
			}
		}
		perms := Permutations(n, 4000, rand.New(rand.NewPCG(uint64(n), 9)))
		sampled, err := ShapleySampled(n, perms, value)
		if err != nil {
			t.Fatal(err)
		}
		// marginals lie in [-150, 150]: a standard error under 150/sqrt(4000) = 2.4
		for k := range exact {
			if math.Abs(sampled[k]-exact[k]) > 12 {
				t.Fatalf("player %d: sampled %v, exact %v", k, sampled[k], exact[k])
			}
		}
	})
}

func TestPrefixCoalitionsAreWhatSamplingNeeds(t *testing.T) {
	perms := [][]int{{2, 0, 1}, {2, 1, 0}}
	got := PrefixCoalitions(perms)
	want := []Coalition{0b100, 0b101, 0b111, 0b110}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("%v, want %v", got, want)
		}
	}
}

func TestShapleyRefusesBadInput(t *testing.T) {
	if _, err := ShapleyExact(0, []float64{0}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
		t.Error(err)
	}
	if _, err := ShapleyExact(2, make([]float64, 3)); clearhouse.ErrorCode(err) != clearhouse.EINVALID || !contains(err, "values") {
		t.Error(err)
	}
	if _, err := ShapleySampled(3, nil, nil); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
		t.Error(err)
	}
	if _, err := ShapleySampled(3, [][]int{{0, 1, 1}}, nil); clearhouse.ErrorCode(err) != clearhouse.EINVALID || !contains(err, "permutations[0]") {
		t.Error(err)
	}
}
