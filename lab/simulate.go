package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse/scheduler"
	"github.com/clearhouse/clearhouse/templates/reports"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// simAlgorithms are the algorithms `simulate` knows, in the order it lists them.
var simAlgorithms = []string{"econ", "econ-seasonal", "econ-fractional", "econ-load", "econ-linear",
	"econ-seasonal-penalty", "econ-linear-penalty", "greedy", "ondemand", "ondemand-fit"}

// simSettings are the named runs --setting knows.
var simSettings = []string{"era-azure"}

// simOptions are the flags of `clearhouse simulate`.
type simOptions struct {
	workload    string
	generate    string
	jobs        int
	seed        uint64
	capacity    int64
	algorithms  string
	slotSeconds int
	fixedPrice  float64
	slack       float64
	valueMedian float64
	valueSpread float64
	json        bool
	report      string
	cloud       scheduler.Cloud
	cloudSeed   uint64
	startEarly  bool
	ceiling     float64
	maxDiscount float64
	greedyPrice float64
	penalty     float64
	setting     string
	generateFor int64 // units the generated mix is sized for (0: the capacity)
	supply      string
	supplyQ     float64
	foresight   float64 // hours
	planShare   float64
	rerun       bool
}

// simSupplies are the supply predictors --supply knows.
var simSupplies = []string{"none", "daily", "quantile"}

// newSupply returns a fresh supply predictor for one run (nil for none).
func newSupply(o simOptions) scheduler.SupplyPredictor {
	switch o.supply {
	case "daily":
		perDay := max(86400/o.slotSeconds, 1)
		return scheduler.NewDailySupply(perDay, max(perDay/24, 1))
	case "quantile":
		return &scheduler.QuantileSupply{Q: o.supplyQ}
	}
	return nil
}

// applySetting sets the options of a named run. era-azure is ERA section 4's
// "Testing Azure Batch" as far as the paper gives it: the scheduler manages 20% of
// the cluster and other work (80% of the resources) uses the rest, changing all
// the time; Basic-Econ's price is at most the non-pre-emptible price (here $10 a
// unit-slot, the mix's high-value classes' value) and at most 35% off it; greedy
// first fit charges 65% of it; on-demand charges it; Basic-Econ runs with the
// prior-knowledge linear predictor or the one learned from past requests, each with
// and without the exponential penalty for later scheduling. The cluster is 500
// units (the paper's 150,000 cores are not needed: what matters is the share),
// the background load averages 60% of it on a daily cycle (reported hourly, for
// --foresight-hours ahead), and the MapReduce-like mix is sized for the 100 units
// the scheduler manages. ERA plans what has not been announced with a supply
// predictor (the background's daily profile, learned from the day before), and only
// 80% of it: 5% of the tasks fail and re-run on the spare capacity (the paper gives
// neither figure; it tried several shares). The baselines plan with the whole share.
func (o *simOptions) applySetting() error {
	switch o.setting {
	case "":
		return nil
	case "era-azure":
		if o.workload == "" {
			o.generate = "mapreduce"
		}
		o.capacity, o.generateFor = 500, 100
		o.cloud.Share, o.cloud.BackgroundLoad = 0.2, 0.6
		o.ceiling, o.maxDiscount = 10, 0.35
		o.fixedPrice, o.greedyPrice = 10, 6.5
		if o.penalty == 0 {
			o.penalty = 0.01
		}
		o.algorithms = "econ-seasonal,econ-seasonal-penalty,econ-linear,econ-linear-penalty,greedy,ondemand"
		if o.supply == "" {
			o.supply = "daily"
		}
		if o.planShare == 0 {
			o.planShare = 0.8
		}
		o.rerun = true
		if o.cloud.FailureShare == 0 {
			o.cloud.FailureShare = 0.05
		}
		return nil
	}
	return fmt.Errorf("--setting: unknown setting %q (known: %s)", o.setting, strings.Join(simSettings, ", "))
}

func newSimulateCmd() *cobra.Command {
	var o simOptions
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Replay a workload through the reservation scheduler and compare algorithms",
		Long: `Replay a workload of jobs with deadlines through the reservation scheduler, on a
simulated cluster of --capacity units, once per algorithm, and report what each
achieved against the offline upper bound (the value-maximizing fractional
allocation of the whole workload, computed exactly).

Workloads (docs/formats/workload.md): a CSV file, an SWF log (the Parallel
Workloads Archive's format; values and deadlines come from a seeded model set by
--slack, --value-median and --value-spread), or a seeded MapReduce-like mix
(--generate mapreduce --jobs N --seed S).

Algorithms: econ (Basic-Econ with the default predictor, scheduler.NewDefaultPredictor:
the seasonal one learned online), econ-fractional (Basic-Econ with ERA's LP-based
predictor: demand read from where the value-maximizing fractional allocation of the
past week's requests put them), econ-load (Basic-Econ with a fixed load curve), greedy
(first fit at --fixed-price per unit-slot, or --greedy-price), econ-linear (Basic-Econ
with ERA's prior-knowledge linear predictor: inverse demand linear between the
workload's highest and lowest value per unit-slot over its mean demand per slot),
econ-seasonal-penalty and econ-linear-penalty (the same with ERA's exponential penalty
for later scheduling, --later-penalty per slot), ondemand (ERA's on-demand baseline: what
has room in the current slot starts now at --fixed-price, ignoring the rest of its
run, so it over-commits and the jobs the cloud then cannot hold are late) and
ondemand-fit (starts now only what fits for its whole run, at --fixed-price).

The simulated cloud (all seeded by --cloud-seed): --capacity-losses N a day, each
taking --loss-share of the capacity for --loss-slots; --task-failures, the share of
tasks that fail partway; --finish-early, the share that end early; --start-early, the
cluster starts what the engine offers as "may start now". The Azure-style setting of
ERA section 4: --share of the cluster is the scheduler's, under --background-load;
--price-ceiling and --max-discount bound econ's price per unit-slot; the background
is reported each hour for --foresight-hours ahead; --supply daily|quantile plans the
slots not yet reported with an estimate of the capacity (the lowest seen near that
time of day, or the --supply-quantile of what was seen; both learn from the day
before the run) instead of the whole share; --plan-share plans only that share of the
capacity, keeping the rest spare; --rerun starts failed tasks again on the spare
capacity. Accepted jobs that do not complete by their deadline are late. --setting era-azure is ERA's Azure Batch
experiment as one named run (it sets the capacity, the share, the background, the
prices and the algorithms; see docs/reproductions.md).

Output: a table, with a progress bar on a terminal; --json prints one JSON object
and nothing else; --report F.html writes a self-contained page with charts.`,
		Example: `  clearhouse simulate --generate mapreduce --jobs 10000 --seed 1 --capacity 100
  clearhouse simulate --workload cmd/clearhouse/testdata/hpc2n.swf --capacity 240 --json
  clearhouse simulate --workload jobs.csv --capacity 50 --algorithms econ,greedy --report sim.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimulate(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.workload, "workload", "", "workload file: .csv or .swf")
	f.StringVar(&o.generate, "generate", "", "generate a workload instead: mapreduce")
	f.IntVar(&o.jobs, "jobs", 10000, "jobs to generate")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the generator and of the SWF value and deadline model")
	f.Int64Var(&o.capacity, "capacity", 0, "the simulated pool's size in units (SWF: processors; default: the log's MaxProcs; generated: 100)")
	f.StringVar(&o.algorithms, "algorithms", "econ,greedy,ondemand", "comma-separated: "+strings.Join(simAlgorithms, ", "))
	f.IntVar(&o.slotSeconds, "slot-seconds", 300, "seconds per slot (SWF logs and the seasonal predictor)")
	f.Float64Var(&o.fixedPrice, "fixed-price", 0.5, "greedy's and ondemand's price per unit-slot, in dollars")
	f.Float64Var(&o.slack, "slack", scheduler.DefaultSWFModel.Slack, "SWF: a deadline is arrival + duration x (1 + slack x U[0,1))")
	f.Float64Var(&o.valueMedian, "value-median", scheduler.DefaultSWFModel.ValueMedian, "SWF: median value per unit-slot, in dollars")
	f.Float64Var(&o.valueSpread, "value-spread", scheduler.DefaultSWFModel.ValueSpread, "SWF: spread of the log-normal value per unit-slot")
	f.BoolVar(&o.json, "json", false, "print one JSON object (docs/formats/workload.md) and nothing else")
	f.StringVar(&o.report, "report", "", "write a self-contained HTML report with charts to this file")
	f.Uint64Var(&o.cloudSeed, "cloud-seed", 1, "seed of the simulated cloud's losses, failures, early finishes and background load")
	f.Float64Var(&o.cloud.LossesPerDay, "capacity-losses", 0, "capacity losses a day")
	f.Float64Var(&o.cloud.LossShare, "loss-share", 0.5, "share of the capacity a loss takes")
	f.IntVar((*int)(&o.cloud.LossSlots), "loss-slots", 24, "slots a capacity loss lasts")
	f.Float64Var(&o.cloud.FailureShare, "task-failures", 0, "share of accepted tasks that fail partway through their run")
	f.Float64Var(&o.cloud.FinishEarlyShare, "finish-early", 0, "share of accepted tasks that finish early")
	f.BoolVar(&o.startEarly, "start-early", false, `start early what the engine offers as "may start now"`)
	f.Float64Var(&o.cloud.Share, "share", 0, "Azure-style setting: the share of --capacity the scheduler manages (0: all, no background)")
	f.Float64Var(&o.cloud.BackgroundLoad, "background-load", 0, "Azure-style setting: mean share of the cluster other work uses")
	f.Float64Var(&o.ceiling, "price-ceiling", 0, "econ's most per unit-slot, in dollars (0: none)")
	f.Float64Var(&o.maxDiscount, "max-discount", 0, "econ's largest discount from --price-ceiling (its floor is ceiling x (1 - discount))")
	f.Float64Var(&o.greedyPrice, "greedy-price", 0, "greedy's price per unit-slot, in dollars (0: --fixed-price)")
	f.Float64Var(&o.penalty, "later-penalty", 0.01, "the -penalty econ variants: a start s slots later is chosen as if it cost exp(penalty x s) times its price")
	f.StringVar(&o.setting, "setting", "", "a named run: "+strings.Join(simSettings, ", ")+" (overrides the flags it sets)")
	f.StringVar(&o.supply, "supply", "", "Azure-style setting: how slots not yet reported are planned: "+strings.Join(simSupplies, ", ")+" (none, the default but for era-azure's daily: the whole share)")
	f.Float64Var(&o.supplyQ, "supply-quantile", 0.1, "--supply quantile: the quantile of the capacity seen to plan with")
	f.Float64Var(&o.foresight, "foresight-hours", 0, "Azure-style setting: hours ahead each hourly capacity report reaches (0: 1)")
	f.Float64Var(&o.planShare, "plan-share", 0, "the share of the capacity the scheduler plans with, the rest spare (0: all)")
	f.BoolVar(&o.rerun, "rerun", false, "failed tasks start again on spare capacity")
	return cmd
}

// simResult is the JSON the command prints (docs/formats/workload.md), plus the
// share of the upper bound and the acceptance by class.
type simResult struct {
	Workload struct {
		Jobs           int     `json:"jobs"`
		RequestedValue float64 `json:"requested_value"`
		Capacity       int64   `json:"capacity"`
		Slots          int     `json:"slots"`
	} `json:"workload"`
	UpperBoundValue float64        `json:"upper_bound_value"`
	Cloud           *simCloud      `json:"cloud,omitempty"`
	Algorithms      []simAlgorithm `json:"algorithms"`
	outcomes        []scheduler.Outcome
	classes         []string
	title           string
}

type simAlgorithm struct {
	Name            string             `json:"name"`
	AcceptedJobs    int                `json:"accepted_jobs"`
	AcceptedValue   float64            `json:"accepted_value"`
	ValueShare      float64            `json:"value_share"`
	Revenue         float64            `json:"revenue"`
	Utilization     float64            `json:"utilization"`
	MeanPrice       float64            `json:"mean_price"`
	UpperBoundShare float64            `json:"upper_bound_share"`
	Classes         map[string][2]int  `json:"accepted_by_class"`
	LateJobs        int                `json:"late_jobs"`
	LateShare       float64            `json:"late_share"`
	AtRisk          int                `json:"at_risk"`
	Failed          int                `json:"failed"`
	EarlyStarts     int                `json:"early_starts"`
	Reruns          int                `json:"reruns"`
	RerunsOnTime    int                `json:"reruns_on_time"`
	LostValue       map[string]float64 `json:"lost_value"`
}

// simCloud is the setting of the simulated cloud, in the JSON output when any
// of it is set.
type simCloud struct {
	Seed             uint64  `json:"seed"`
	LossesPerDay     float64 `json:"capacity_losses_per_day"`
	LossShare        float64 `json:"loss_share"`
	LossSlots        int64   `json:"loss_slots"`
	FailureShare     float64 `json:"task_failures"`
	FinishEarlyShare float64 `json:"finish_early"`
	StartEarly       bool    `json:"start_early"`
	Share            float64 `json:"share"`
	BackgroundLoad   float64 `json:"background_load"`
	PriceCeiling     float64 `json:"price_ceiling"`
	MaxDiscount      float64 `json:"max_discount"`
	ForesightSlots   int     `json:"foresight_slots"`
	Supply           string  `json:"supply"`
	PlanShare        float64 `json:"plan_share"`
	Rerun            bool    `json:"rerun"`
}

func runSimulate(cmd *cobra.Command, o simOptions) error {
	if err := o.applySetting(); err != nil {
		return &exitError{2, err}
	}
	algos, err := parseAlgorithms(o.algorithms)
	if err != nil {
		return &exitError{2, err}
	}
	switch {
	case o.supply != "" && !slices.Contains(simSupplies, o.supply):
		return &exitError{2, fmt.Errorf("--supply: unknown %q (known: %s)", o.supply, strings.Join(simSupplies, ", "))}
	case !(o.supplyQ >= 0 && o.supplyQ <= 1):
		return &exitError{2, errors.New("--supply-quantile: must be between 0 and 1")}
	case !(o.foresight >= 0 && o.foresight <= 24*365):
		return &exitError{2, errors.New("--foresight-hours: must be from 0 to a year")}
	case !(o.planShare >= 0 && o.planShare <= 1):
		return &exitError{2, errors.New("--plan-share: must be between 0 and 1")}
	}
	jobs, capacity, title, err := loadWorkload(cmd, o)
	if err != nil {
		return &exitError{2, err}
	}
	if len(jobs) == 0 {
		return &exitError{2, errors.New("the workload has no jobs")}
	}
	res := simResult{title: title, classes: workloadClasses(jobs)}
	res.Workload.Jobs, res.Workload.Capacity = len(jobs), capacity
	o.cloud.Seed, o.cloud.SlotsPerDay = o.cloudSeed, max(86400/o.slotSeconds, 1)
	o.cloud.Foresight = scheduler.Slot(o.foresight * 3600 / float64(o.slotSeconds))
	if o.cloud != (scheduler.Cloud{Seed: o.cloudSeed, SlotsPerDay: o.cloud.SlotsPerDay, LossShare: o.cloud.LossShare, LossSlots: o.cloud.LossSlots}) ||
		o.startEarly || o.ceiling > 0 || o.maxDiscount > 0 || o.supply != "" && o.supply != "none" || o.planShare > 0 || o.rerun {
		c := o.cloud
		res.Cloud = &simCloud{Seed: c.Seed, LossesPerDay: c.LossesPerDay, LossShare: c.LossShare, LossSlots: int64(c.LossSlots),
			FailureShare: c.FailureShare, FinishEarlyShare: c.FinishEarlyShare, StartEarly: o.startEarly, Share: c.Share,
			BackgroundLoad: c.BackgroundLoad, PriceCeiling: o.ceiling, MaxDiscount: o.maxDiscount,
			ForesightSlots: int(max(c.Foresight, scheduler.Slot(max(c.SlotsPerDay/24, 1)))), Supply: cmp.Or(o.supply, "none"), PlanShare: o.planShare, Rerun: o.rerun}
	}

	stderr := cmd.ErrOrStderr()
	var bar *progressbar.ProgressBar
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(len(algos)*1000+1000,
			progressbar.OptionSetWriter(stderr), progressbar.OptionSetWidth(30),
			progressbar.OptionSetDescription("upper bound"), progressbar.OptionClearOnFinish(),
			progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionSetPredictTime(true))
	}
	bound := scheduler.WorkloadBound(jobs, o.cloud.Managed(capacity))
	res.UpperBoundValue = bound.Value
	if bar != nil {
		bar.Set(1000)
	}
	for i, name := range algos {
		if bar != nil {
			bar.Describe(name)
		}
		cfg := scheduler.SimConfig{Capacity: capacity, Cloud: o.cloud, StartEarly: o.startEarly, Rerun: o.rerun}
		if strings.HasPrefix(name, "econ") { // ERA's own planning: the baselines plan with the whole share
			cfg.Supply, cfg.PlanShare = newSupply(o), o.planShare
		}
		if bar != nil {
			base := 1000 + i*1000
			cfg.Progress = func(slot, horizon scheduler.Slot) {
				bar.Set(base + int(1000*int64(slot)/int64(max(horizon, 1))))
			}
		}
		out, err := scheduler.SimulateWith(jobs, newAlgorithm(name, o, capacity, jobs), cfg)
		if err != nil {
			return err
		}
		res.outcomes = append(res.outcomes, out)
		res.Workload.RequestedValue = out.RequestedValue
		res.Workload.Slots = len(out.Series)
		a := simAlgorithm{Name: name, AcceptedJobs: out.AcceptedJobs, AcceptedValue: round2(out.AcceptedValue),
			ValueShare: round4(out.ValueShare), Revenue: round2(out.Revenue), Utilization: round4(out.Utilization),
			MeanPrice: round4(out.MeanPrice), Classes: out.ByClass, LateJobs: out.LateJobs, LateShare: round4(out.LateShare),
			AtRisk: out.AtRisk, Failed: out.Failed, EarlyStarts: out.EarlyStarts, Reruns: out.Reruns, RerunsOnTime: out.RerunsOnTime,
			LostValue: map[string]float64{}}
		for reason, v := range out.LostValue {
			a.LostValue[reason] = round2(v)
		}
		if bound.Value > 0 {
			a.UpperBoundShare = round4(out.AcceptedValue / bound.Value)
		}
		res.Algorithms = append(res.Algorithms, a)
	}
	if bar != nil {
		bar.Finish()
	}
	res.Workload.RequestedValue = round2(res.Workload.RequestedValue)
	res.UpperBoundValue = round2(res.UpperBoundValue)

	if o.report != "" {
		page, err := reports.RenderSimulation(res.report())
		if err != nil {
			return err
		}
		if err := writeOut(cmd, o.report, page); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	if o.json {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printSimTable(cmd.OutOrStdout(), res)
	if o.report != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "\nreport: %s\n", o.report)
	}
	return nil
}

// report is what the HTML report shows of the result.
func (r simResult) report() reports.Simulation {
	s := reports.Simulation{Title: r.title, Jobs: r.Workload.Jobs, Slots: r.Workload.Slots, Capacity: r.Workload.Capacity,
		RequestedValue: r.Workload.RequestedValue, UpperBoundValue: r.UpperBoundValue, Classes: r.classes}
	for i, a := range r.Algorithms {
		s.Algorithms = append(s.Algorithms, reports.SimAlgorithm{Name: a.Name, AcceptedJobs: a.AcceptedJobs, AcceptedValue: a.AcceptedValue,
			Revenue: a.Revenue, ValueShare: a.ValueShare, UpperBoundShare: a.UpperBoundShare, Utilization: a.Utilization,
			MeanPrice: a.MeanPrice, Classes: a.Classes, Series: r.outcomes[i].Series})
	}
	return s
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }
func round4(x float64) float64 { return float64(int64(x*10000+0.5)) / 10000 }

func parseAlgorithms(list string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if !slices.Contains(simAlgorithms, a) {
			return nil, fmt.Errorf("--algorithms: unknown algorithm %q (known: %s)", a, strings.Join(simAlgorithms, ", "))
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--algorithms: name at least one of %s", strings.Join(simAlgorithms, ", "))
	}
	return out, nil
}

func newAlgorithm(name string, o simOptions, capacity int64, jobs []scheduler.Job) scheduler.Algorithm {
	switch name {
	case "econ-linear":
		return o.econ(scheduler.LinearFromJobs(jobs))
	case "econ-seasonal-penalty":
		b := o.econ(scheduler.NewSeasonal(o.slotSeconds))
		b.LaterPenalty = o.penalty
		return b
	case "econ-linear-penalty":
		b := o.econ(scheduler.LinearFromJobs(jobs))
		b.LaterPenalty = o.penalty
		return b
	case "econ":
		return o.econ(scheduler.NewDefaultPredictor(o.slotSeconds, map[string]int64{scheduler.SimPool: capacity}))
	case "econ-seasonal":
		return o.econ(scheduler.NewSeasonal(o.slotSeconds))
	case "econ-fractional":
		return o.econ(scheduler.NewFractional(o.slotSeconds, map[string]int64{scheduler.SimPool: capacity}))
	case "econ-load":
		return o.econ(scheduler.LoadCurve{Base: 1.5, Steep: 6, Capacity: capacity})
	case "greedy":
		if o.greedyPrice > 0 {
			return scheduler.Greedy{UnitPrice: o.greedyPrice}
		}
		return scheduler.Greedy{UnitPrice: o.fixedPrice}
	case "ondemand-fit":
		return scheduler.OnDemandFit{UnitPrice: o.fixedPrice}
	default:
		return scheduler.OnDemand{UnitPrice: o.fixedPrice}
	}
}

// econ is Basic-Econ with the predictor, bounded by --price-ceiling and
// --max-discount when they are set.
func (o simOptions) econ(p scheduler.Predictor) scheduler.BasicEcon {
	b := scheduler.BasicEcon{Predictor: p, Ceiling: o.ceiling}
	if o.ceiling > 0 {
		b.Floor = o.ceiling * (1 - o.maxDiscount)
	}
	return b
}

var maxProcs = regexp.MustCompile(`^;\s*MaxProcs:\s*(\d+)`)

// loadWorkload reads or generates the jobs and settles the capacity.
func loadWorkload(cmd *cobra.Command, o simOptions) ([]scheduler.Job, int64, string, error) {
	if o.capacity < 0 {
		return nil, 0, "", errors.New("--capacity: must be a positive number of units")
	}
	if o.slotSeconds <= 0 {
		return nil, 0, "", errors.New("--slot-seconds: must be positive")
	}
	if o.fixedPrice < 0 || o.greedyPrice < 0 || o.penalty < 0 {
		return nil, 0, "", errors.New("--fixed-price, --greedy-price and --later-penalty must not be negative")
	}
	if err := o.cloud.Validate(); err != nil {
		return nil, 0, "", fmt.Errorf("the simulated cloud: %w", err)
	}
	if o.ceiling < 0 || o.maxDiscount < 0 || o.maxDiscount > 1 || (o.maxDiscount > 0 && o.ceiling == 0) {
		return nil, 0, "", errors.New("--price-ceiling must not be negative; --max-discount is between 0 and 1 and needs a ceiling")
	}
	switch {
	case o.workload != "" && o.generate != "":
		return nil, 0, "", errors.New("give --workload or --generate, not both")
	case o.generate != "":
		if o.generate != "mapreduce" {
			return nil, 0, "", fmt.Errorf("--generate: unknown generator %q (known: mapreduce)", o.generate)
		}
		if o.jobs <= 0 || o.jobs > 10_000_000 {
			return nil, 0, "", errors.New("--jobs: must be between 1 and 10,000,000")
		}
		capacity := o.capacity
		if capacity == 0 {
			capacity = 100
		}
		sized := capacity
		if o.generateFor > 0 {
			sized = o.generateFor
		}
		jobs := scheduler.GenerateMapReduce(o.jobs, o.seed, sized)
		title := fmt.Sprintf("MapReduce-like mix: %d jobs, seed %d, %d units", o.jobs, o.seed, capacity)
		if sized != capacity {
			title = fmt.Sprintf("MapReduce-like mix: %d jobs, seed %d, sized for %d of the cluster's %d units", o.jobs, o.seed, sized, capacity)
		}
		return jobs, capacity, title, nil
	case o.workload == "":
		return nil, 0, "", errors.New("give a workload: --workload FILE.csv|FILE.swf, or --generate mapreduce")
	}
	ext := strings.ToLower(filepath.Ext(o.workload))
	if ext != ".csv" && ext != ".swf" {
		return nil, 0, "", fmt.Errorf("--workload: %s: the name must end in .csv or .swf", o.workload)
	}
	in, err := openIn(cmd, o.workload)
	if err != nil {
		return nil, 0, "", err
	}
	defer in.Close()
	title := filepath.Base(o.workload)
	switch ext {
	case ".csv":
		if o.capacity == 0 {
			return nil, 0, "", errors.New("--capacity: a CSV workload needs the pool's size in units")
		}
		jobs, err := scheduler.ReadCSV(in)
		if err != nil {
			return nil, 0, "", fmt.Errorf("%s: %w", o.workload, err)
		}
		return jobs, o.capacity, fmt.Sprintf("%s: %d units", title, o.capacity), nil
	default: // .swf
		data, err := io.ReadAll(in)
		if err != nil {
			return nil, 0, "", err
		}
		capacity := o.capacity
		if capacity == 0 {
			sc := bufio.NewScanner(strings.NewReader(string(data)))
			for sc.Scan() && capacity == 0 {
				if m := maxProcs.FindStringSubmatch(sc.Text()); m != nil {
					capacity, _ = strconv.ParseInt(m[1], 10, 64)
				}
			}
			if capacity <= 0 {
				return nil, 0, "", errors.New("--capacity: the log has no MaxProcs header; give the pool's size")
			}
		}
		model := scheduler.SWFModel{SlotSeconds: o.slotSeconds, Seed: o.seed, Slack: o.slack, ValueMedian: o.valueMedian, ValueSpread: o.valueSpread}
		if o.slack < 0 || o.valueMedian <= 0 || o.valueSpread < 0 {
			return nil, 0, "", errors.New("--slack and --value-spread must not be negative, --value-median must be positive")
		}
		jobs, err := scheduler.ReadSWF(strings.NewReader(string(data)), model)
		if err != nil {
			return nil, 0, "", fmt.Errorf("%s: %w", o.workload, err)
		}
		return jobs, capacity, fmt.Sprintf("%s: %d jobs, %d units, seed %d", title, len(jobs), capacity, o.seed), nil
	}
}
