package abacus

import (
	"math/rand/v2"
	"testing"
)

// FIFO on a hand-checked case: two jobs of 2 maps and 1 reduce on 2 map slots and 1
// reduce slot. A's maps run at 0, B's at 1 with A's reduce, B's reduce at 2: the
// makespan is 3 and the completions 2 and 3.
func TestFIFOMapReduceByHand(t *testing.T) {
	makespan, mean := runMapReduce([]int{2, 2}, []int{1, 1}, 2, 1, nil, nil)
	if makespan != 3 || mean != 2.5 {
		t.Fatalf("makespan %d, mean completion %v; want 3 and 2.5", makespan, mean)
	}
	// Abacus with equal shares deals the same slots by draws: never faster than the
	// bound the slots set (4 maps on 2 slots, then a reduce), never idle while work waits.
	rng := rand.New(rand.NewPCG(1, 1))
	for range 50 {
		m, _ := runMapReduce([]int{2, 2}, []int{1, 1}, 2, 1, [][]float64{{0.5, 0.5}, {0.5, 0.5}}, rng)
		if m < 3 || m > 4 {
			t.Fatalf("abacus makespan %d, want 3 or 4", m)
		}
	}
}

// The experiment: both schedulers finish every job, no faster than the map slots
// allow, and the same seed gives the same row.
func TestEfficiencyExperiment(t *testing.T) {
	cfg := EfficiencyConfig{Users: 8, MapSlots: 20, ReduceSlots: 10, Runs: 20, Seed: 1, Options: DefaultOptions()}
	a, err := Efficiency(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 8 jobs of at least 20 maps on 20 slots: at least 8 steps, plus a reduce step.
	if a.FIFOMakespan < 9 || a.AbacusMakespan < 9 || a.FIFOCompletion > a.FIFOMakespan || a.AbacusCompletion > a.AbacusMakespan {
		t.Fatalf("%+v", a)
	}
	if b, _ := Efficiency(cfg); b != a {
		t.Fatalf("the same seed gave %+v and %+v", a, b)
	}
	if _, err := Efficiency(EfficiencyConfig{Users: 0, MapSlots: 1, ReduceSlots: 1, Runs: 1, Options: DefaultOptions()}); err == nil {
		t.Fatal("no users accepted")
	}
}

// The table1 workload: both schedulers see the same arrivals, so the last of 30
// minutes of submissions bounds both makespans from below; every job finishes; the
// same seed gives the same row; with one user the two schedulers are the same FIFO.
func TestEfficiencyTable1(t *testing.T) {
	cfg := EfficiencyConfig{Workload: WorkloadTable1, Users: 6, MapSlots: 20, ReduceSlots: 10, Runs: 5, Seed: 3, Options: DefaultOptions()}
	a, err := Efficiency(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.FIFOMakespan < 1700 || a.AbacusMakespan < 1700 || a.FIFOCompletion <= 0 || a.AbacusCompletion <= 0 {
		t.Fatalf("%+v", a)
	}
	if b, _ := Efficiency(cfg); b != a {
		t.Fatalf("the same seed gave %+v and %+v", a, b)
	}
	cfg.Users = 1
	one, err := Efficiency(cfg)
	if err != nil || one.FIFOMakespan != one.AbacusMakespan || one.FIFOCompletion != one.AbacusCompletion {
		t.Fatalf("one user: %+v %v", one, err)
	}
}
