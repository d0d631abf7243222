package abacus

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse"
	"pgregory.net/rapid"
)

func genShares(t *rapid.T) map[string]float64 {
	n := rapid.IntRange(1, 40).Draw(t, "jobs")
	raw := make([]float64, n)
	total := 0.0
	for i := range raw {
		raw[i] = rapid.Float64Range(0.001, 100).Draw(t, "weight")
		total += raw[i]
	}
	shares := make(map[string]float64, n)
	for i, w := range raw {
		shares[fmt.Sprintf("job%02d", i)] = w / total
	}
	return shares
}

// Long-run shares match s_ij, and closely at every step: after n units dealt among
// always-eligible jobs whose shares sum to 1, job i holds fewer than n s_i + 1 units
// (a proof: its credit c = n s_i - count_i only falls when it is dealt a unit, from a
// maximum that is positive since credits plus shares sum to 1, so c > -1) and, on
// every draw here, more than n s_i - 2.
func TestPropertyRotationTracksShares(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		shares := genShares(t)
		r, err := NewRotation(shares)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		const units = 3000
		for n := 1; n <= units; n++ {
			job, ok := r.Next(nil)
			if !ok {
				t.Fatal("no job dealt")
			}
			count[job]++
			for id, s := range shares {
				due := float64(n) * s
				if c := float64(count[id]); c >= due+1 || c <= due-2 {
					t.Fatalf("after %d units %s holds %v, due %v", n, id, c, due)
				}
			}
		}
		for id, s := range shares {
			if got := float64(count[id]) / units; math.Abs(got-s) > 2.0/units {
				t.Fatalf("%s: long-run fraction %v, share %v", id, got, s)
			}
		}
	})
}

// Jobs that cannot take a unit are skipped and bank nothing; the others share in
// proportion to their shares among themselves.
func TestRotationSkipsIneligibleJobs(t *testing.T) {
	r, _ := NewRotation(map[string]float64{"a": 0.5, "b": 0.3, "c": 0.2})
	count := map[string]int{}
	for range 1000 {
		job, _ := r.Next(func(id string) bool { return id != "a" })
		count[job]++
	}
	if count["a"] != 0 || count["b"] != 600 || count["c"] != 400 {
		t.Fatalf("counts %v, want b 600 and c 400", count)
	}
	// a comes back without banked credit: over the next 10 units it gets its 5.
	count = map[string]int{}
	for range 10 {
		job, _ := r.Next(nil)
		count[job]++
	}
	if count["a"] != 5 {
		t.Errorf("a got %d of 10 units on its return, want 5", count["a"])
	}
	if _, ok := r.Next(func(string) bool { return false }); ok {
		t.Error("a unit dealt with no eligible job")
	}
}

// When every eligible job has a zero share, units go round robin among them.
func TestRotationZeroSharesGoRoundRobin(t *testing.T) {
	r, _ := NewRotation(map[string]float64{"rich": 1, "x": 0, "y": 0, "z": 0})
	var got []string
	for range 6 {
		job, _ := r.Next(func(id string) bool { return id != "rich" })
		got = append(got, job)
	}
	for _, id := range []string{"x", "y", "z"} {
		if n := strings.Count(strings.Join(got, ","), id); n != 2 {
			t.Fatalf("dealt %v, want each zero-share job twice", got)
		}
	}
}

// Same state, same choices: a rotation restored from stored credits deals exactly
// what the original would have; SetShares keeps the credits of staying jobs.
func TestRotationIsReproducibleFromItsCredits(t *testing.T) {
	shares := map[string]float64{"a": 0.61, "b": 0.27, "c": 0.12}
	r, _ := NewRotation(shares)
	for range 17 {
		r.Next(nil)
	}
	copyOf, _ := NewRotation(shares)
	if err := copyOf.Restore(r.Credits()); err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for range 50 {
		a, _ := r.Next(nil)
		b, _ := copyOf.Next(nil)
		want, got = append(want, a), append(got, b)
	}
	if !slices.Equal(want, got) {
		t.Fatalf("restored rotation dealt %v, original %v", got, want)
	}
	before := r.Credits()
	if err := r.SetShares(map[string]float64{"a": 0.5, "b": 0.3, "d": 0.2}); err != nil {
		t.Fatal(err)
	}
	after := r.Credits()
	shift := after["a"] - before["a"]
	if _, ok := after["c"]; ok || !near(after["b"]-before["b"], shift, 1e-12) || !near(after["d"], shift, 1e-12) {
		t.Errorf("credits %v -> %v: want c dropped, a and b kept, d new, all shifted alike", before, after)
	}
	sum := 0.0
	for _, c := range after {
		sum += c
	}
	if !near(sum, 0, 1e-12) {
		t.Errorf("credits sum to %v after SetShares, want 0", sum)
	}
}

func TestRotationRefusesBadShares(t *testing.T) {
	for _, s := range []float64{-0.1, math.NaN(), math.Inf(1)} {
		if _, err := NewRotation(map[string]float64{"a": s}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Errorf("share %v: error %v, want EINVALID", s, err)
		}
	}
	r, _ := NewRotation(map[string]float64{"a": 1})
	if err := r.SetShares(map[string]float64{"a": -1}); err == nil || r.shares[0] != 1 {
		t.Errorf("a bad SetShares changed the rotation or passed: %v", err)
	}
	if err := r.Restore(map[string]float64{"a": math.NaN()}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
		t.Errorf("NaN credit: %v", err)
	}
}
