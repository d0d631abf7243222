package abacus

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/clearhouse/clearhouse"
)

// The paper's defaults for its experiments of section 7.1.1.
const (
	PaperUsers     = 32
	PaperResources = 4
	PaperAlpha     = 0.5
	// PaperShareEpsilon is the stopping rule on shares the reproduction of section
	// 7.1.1 uses (Options.ShareEpsilon): no share moved by more than 0.0001 in a round.
	PaperShareEpsilon = 1e-4
)

// Generate returns a random instance as the paper's experiments draw them: users
// jobs, each using every one of resources resources with a weight uniform in
// [0.5, 2], a budget uniform in [50, 200] dollars, and the given utility.
func Generate(rng *rand.Rand, users, resources int, kind Utility) Instance {
	inst := Instance{Resources: make([]string, resources), Jobs: make([]Job, users)}
	for r := range inst.Resources {
		inst.Resources[r] = fmt.Sprintf("r%d", r+1)
	}
	weights := make([]float64, users*resources)
	for i := range inst.Jobs {
		w := weights[i*resources : (i+1)*resources]
		for r := range w {
			w[r] = 0.5 + 1.5*rng.Float64()
		}
		inst.Jobs[i] = Job{ID: fmt.Sprintf("u%d", i+1), Budget: 50 + 150*rng.Float64(), Utility: kind, Weights: w}
	}
	return inst
}

// Experiment is one row of the simulation: Runs random instances of one size, solved
// with one alpha.
type Experiment struct {
	Vary      string // which parameter this row's sweep varies: "users", "resources" or "alpha"
	Utility   Utility
	Users     int
	Resources int
	Alpha     float64
}

// ExperimentResult is what Simulate measured for one Experiment.
type ExperimentResult struct {
	Experiment
	Runs           int
	MeanIterations float64
	P95Iterations  int // nearest rank: the smallest count at least 95% of the runs did not exceed
	MaxIterations  int
	NotConverged   int           // runs that reached Options.MaxIterations
	MeanTime       time.Duration // per auction, validation included, as the clock measured it
	MedianTime     time.Duration // likewise; robust to a busy machine's pauses
}

// SimConfig is the simulation's plan.
type SimConfig struct {
	Seed    uint64
	Runs    int
	Options Options // Alpha is replaced by each experiment's own
	Rows    []Experiment
}

// Sweep returns the paper's one-at-a-time sweeps for each utility: users (at the
// default resources and alpha), then resources (default users and alpha), then
// alpha (default users and resources).
func Sweep(utilities []Utility, users, resources []int, alphas []float64) []Experiment {
	var rows []Experiment
	for _, u := range utilities {
		for _, n := range users {
			rows = append(rows, Experiment{"users", u, n, PaperResources, PaperAlpha})
		}
		for _, m := range resources {
			rows = append(rows, Experiment{"resources", u, PaperUsers, m, PaperAlpha})
		}
		for _, a := range alphas {
			rows = append(rows, Experiment{"alpha", u, PaperUsers, PaperResources, a})
		}
	}
	return rows
}

// Simulate runs every experiment of cfg and returns one result per row, in order.
// The instances of a row depend only on the seed, the users and the resources, so
// rows that differ only in alpha or utility solve the same draws, and the iteration
// counts are the same for the same seed on every machine; only times vary. now is the
// clock the times are read from. It returns EINVALID for bad options, a run count
// outside [1, 1,000,000], or a row with fewer than 1 user or resource, more than
// 100,000 users or 1,000 resources, or alpha outside [0, 1].
func Simulate(cfg SimConfig, now func() time.Time) ([]ExperimentResult, error) {
	if cfg.Runs < 1 || cfg.Runs > 1_000_000 {
		return nil, invalid("runs: must be from 1 to 1000000, got %d", cfg.Runs)
	}
	out := make([]ExperimentResult, 0, len(cfg.Rows))
	for k, e := range cfg.Rows {
		opt := cfg.Options
		opt.Alpha = e.Alpha
		if err := opt.Validate(); err != nil {
			return nil, invalid("rows[%d]: %s", k, clearhouse.ErrorMessage(err))
		}
		if e.Users < 1 || e.Users > 100_000 || e.Resources < 1 || e.Resources > 1000 {
			return nil, invalid("rows[%d]: users must be from 1 to 100000 and resources from 1 to 1000, got %d and %d", k, e.Users, e.Resources)
		}
		res, err := runExperiment(cfg.Seed, cfg.Runs, e, opt, now)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

func runExperiment(seed uint64, runs int, e Experiment, opt Options, now func() time.Time) (ExperimentResult, error) {
	rng := rand.New(rand.NewPCG(seed, uint64(e.Users)<<32|uint64(e.Resources)))
	iters, times := make([]int, runs), make([]time.Duration, runs)
	out := ExperimentResult{Experiment: e, Runs: runs}
	var spent time.Duration
	for k := range runs {
		inst := Generate(rng, e.Users, e.Resources, e.Utility)
		start := now()
		res, err := Solve(inst, opt)
		times[k] = now().Sub(start)
		spent += times[k]
		if err != nil {
			return ExperimentResult{}, err
		}
		iters[k] = res.Iterations
		if res.Outcome != OutcomeConverged {
			out.NotConverged++
		}
	}
	slices.Sort(iters)
	total := 0
	for _, it := range iters {
		total += it
	}
	out.MeanIterations = float64(total) / float64(runs)
	out.P95Iterations = iters[int(math.Ceil(0.95*float64(runs)))-1]
	out.MaxIterations = iters[runs-1]
	out.MeanTime = spent / time.Duration(runs)
	slices.Sort(times)
	out.MedianTime = times[(runs-1)/2]
	return out, nil
}
