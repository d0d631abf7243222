package abacus

import (
	"fmt"
	"math/rand/v2"
)

// EfficiencyConfig is the system-efficiency experiment of the paper's section 7.1.3
// ("We compare Abacus against the popular First-In-First-Out (FIFO) scheduling
// strategy, and report the total time to finish all jobs [...] all system
// parameters are fixed except for the number of users; in particular, the total
// amount of computational resources is constant"), on a simulated cluster rather
// than the paper's Hadoop one: Users users each submit one MapReduce job at time
// 0, of maps uniform in [20, 100] one-slot tasks and reduces uniform in [5, 30],
// the reduces ready once every map of the job is done, on MapSlots map slots and
// ReduceSlots reduce slots, each task lasting one time unit. A user's budget is
// uniform in [50, 200] dollars and its utility linear with weights its map and
// reduce task counts (the paper's u = T_m x + T_r y). FIFO gives every free slot
// to the earliest job with a ready task for it; Abacus runs the auction (Options)
// and deals every free slot of a resource by DrawForResource over the jobs with a
// ready task for it. That is WorkloadBatch; WorkloadTable1 is the paper's own task
// mix with jobs arriving over time (its Workload comment).
type EfficiencyConfig struct {
	Workload                     Workload
	Users, MapSlots, ReduceSlots int
	Runs                         int
	Seed                         uint64
	Options                      Options
}

// EfficiencyResult is one row: means over the runs of the time to finish all jobs
// (the makespan) and of the jobs' completion times, under each scheduler. Times are
// steps (one task) for WorkloadBatch and seconds for WorkloadTable1, whose
// completion time is a job's response time (completion less arrival).
type EfficiencyResult struct {
	Users                            int
	Runs                             int
	FIFOMakespan, AbacusMakespan     float64
	FIFOCompletion, AbacusCompletion float64
}

// Efficiency runs the experiment. EINVALID for fewer than one user, slot or run, or
// options Solve refuses.
func Efficiency(cfg EfficiencyConfig) (EfficiencyResult, error) {
	if cfg.Users < 1 || cfg.MapSlots < 1 || cfg.ReduceSlots < 1 || cfg.Runs < 1 {
		return EfficiencyResult{}, invalid("users, map and reduce slots and runs: at least 1 each")
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.Users)))
	res := EfficiencyResult{Users: cfg.Users, Runs: cfg.Runs}
	if cfg.Workload == WorkloadTable1 {
		return efficiencyTable1(cfg, rng, res)
	}
	for range cfg.Runs {
		maps, reduces := make([]int, cfg.Users), make([]int, cfg.Users)
		inst := Instance{Resources: []string{"map", "reduce"}}
		for i := range cfg.Users {
			maps[i], reduces[i] = 20+rng.IntN(81), 5+rng.IntN(26)
			inst.Jobs = append(inst.Jobs, Job{ID: fmt.Sprint("u", i+1), Budget: 50 + 150*rng.Float64(), Utility: Linear,
				Weights: []float64{float64(maps[i]), float64(reduces[i])}})
		}
		sol, err := Solve(inst, cfg.Options)
		if err != nil {
			return EfficiencyResult{}, err
		}
		fm, fc := runMapReduce(maps, reduces, cfg.MapSlots, cfg.ReduceSlots, nil, nil)
		am, ac := runMapReduce(maps, reduces, cfg.MapSlots, cfg.ReduceSlots, sol.Shares, rand.New(rand.NewPCG(rng.Uint64(), 1)))
		res.FIFOMakespan += float64(fm) / float64(cfg.Runs)
		res.AbacusMakespan += float64(am) / float64(cfg.Runs)
		res.FIFOCompletion += fc / float64(cfg.Runs)
		res.AbacusCompletion += ac / float64(cfg.Runs)
	}
	return res, nil
}

// efficiencyTable1 is Efficiency for WorkloadTable1: both schedulers see the same
// arrivals and task counts in each run (the draws are made twice from one seed).
func efficiencyTable1(cfg EfficiencyConfig, rng *rand.Rand, res EfficiencyResult) (EfficiencyResult, error) {
	if err := cfg.Options.Validate(); err != nil {
		return EfficiencyResult{}, err
	}
	n := float64(cfg.Runs)
	for range cfg.Runs {
		seed := rng.Uint64()
		fm, fc, err := runTable1(cfg.Users, cfg.MapSlots, cfg.ReduceSlots, cfg.Options, false, rand.New(rand.NewPCG(seed, 2)))
		if err != nil {
			return EfficiencyResult{}, err
		}
		am, ac, err := runTable1(cfg.Users, cfg.MapSlots, cfg.ReduceSlots, cfg.Options, true, rand.New(rand.NewPCG(seed, 2)))
		if err != nil {
			return EfficiencyResult{}, err
		}
		res.FIFOMakespan += fm / n
		res.AbacusMakespan += am / n
		res.FIFOCompletion += fc / n
		res.AbacusCompletion += ac / n
	}
	return res, nil
}

// runMapReduce simulates the jobs in unit time steps and returns the makespan and
// the mean completion time. With shares nil it schedules FIFO (job order), else
// Abacus's per-resource draws by shares[i][resource] (0: map, 1: reduce).
func runMapReduce(maps, reduces []int, mapSlots, reduceSlots int, shares [][]float64, rng *rand.Rand) (int, float64) {
	n := len(maps)
	left := [2][]int{append([]int(nil), maps...), append([]int(nil), reduces...)} // tasks not started
	running := [2][]int{make([]int, n), make([]int, n)}                           // tasks running this step
	mapsDone := make([]int, n)
	done := make([]int, n) // completion time, 0 while running
	slots := [2]int{mapSlots, reduceSlots}
	col := make([]float64, n)
	finished, total := 0, 0
	for t := 0; finished < n; t++ {
		for r := range 2 {
			ready := func(i int) bool { return left[r][i] > 0 && (r == 0 || mapsDone[i] == maps[i]) }
			if shares != nil {
				for i := range n {
					col[i] = shares[i][r]
				}
			}
			for range slots[r] {
				i := -1
				if shares == nil {
					for k := range n {
						if ready(k) {
							i = k
							break
						}
					}
				} else {
					i = DrawForResource(col, ready, rng)
				}
				if i < 0 {
					break
				}
				left[r][i]--
				running[r][i]++
			}
		}
		// Every task started in step t ends at t+1.
		for i := range n {
			mapsDone[i] += running[0][i]
			running[0][i], running[1][i] = 0, 0
			if done[i] == 0 && left[0][i] == 0 && left[1][i] == 0 && mapsDone[i] == maps[i] {
				done[i] = t + 1
				finished++
				total += t + 1
			}
		}
	}
	makespan := 0
	for _, d := range done {
		makespan = max(makespan, d)
	}
	return makespan, float64(total) / float64(n)
}
