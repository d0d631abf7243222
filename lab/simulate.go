package lab

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/clearhouse/clearhouse/scheduler"
	"github.com/clearhouse/clearhouse/templates/reports"
)

// SimAlgorithms are the algorithms Simulate knows, in the order `simulate` lists them.
var SimAlgorithms = []string{"econ", "econ-seasonal", "econ-fractional", "econ-load", "econ-linear",
	"econ-seasonal-penalty", "econ-linear-penalty", "greedy", "ondemand", "ondemand-fit"}

// SimSettings are the named runs SimOptions.Setting knows.
var SimSettings = []string{"era-azure"}

// SimOptions are what a replay of a workload is run with: the flags of `clearhouse
// simulate` (docs/formats/workload.md), the same names; DefaultSimOptions gives the
// flags' defaults.
type SimOptions struct {
	Workload    string // a .csv or .swf file, opened by LoadWorkload
	Generate    string // "mapreduce": generate the workload instead
	Jobs        int    // jobs to generate
	Seed        uint64 // of the generator and of the SWF value and deadline model
	Capacity    int64  // units (0: the SWF log's MaxProcs, or 100 generated)
	Algorithms  string // comma-separated, of SimAlgorithms
	SlotSeconds int
	FixedPrice  float64
	Slack       float64 // SWF: the deadline model
	ValueMedian float64 // SWF: the value model
	ValueSpread float64
	Cloud       scheduler.Cloud
	CloudSeed   uint64
	StartEarly  bool
	Ceiling     float64 // econ's most per unit-slot (0: none)
	MaxDiscount float64
	GreedyPrice float64 // 0: FixedPrice
	Penalty     float64 // the -penalty econ variants' later-start penalty
	Setting     string  // a named run of SimSettings, applied by Prepare
	GenerateFor int64   // units the generated mix is sized for (0: the capacity)
	Supply      string  // of SimSupplies ("": none)
	SupplyQ     float64
	Foresight   float64 // hours
	PlanShare   float64
	Rerun       bool
}

// DefaultSimOptions are the defaults of `clearhouse simulate`'s flags.
func DefaultSimOptions() SimOptions {
	return SimOptions{Jobs: 10000, Seed: 1, Algorithms: "econ,greedy,ondemand", SlotSeconds: 300, FixedPrice: 0.5,
		Slack: scheduler.DefaultSWFModel.Slack, ValueMedian: scheduler.DefaultSWFModel.ValueMedian, ValueSpread: scheduler.DefaultSWFModel.ValueSpread,
		CloudSeed: 1, Cloud: scheduler.Cloud{LossShare: 0.5, LossSlots: 24}, Penalty: 0.01, SupplyQ: 0.1}
}

// SimSupplies are the supply predictors SimOptions.Supply knows.
var SimSupplies = []string{"none", "daily", "quantile"}

// newSupply returns a fresh supply predictor for one run (nil for none).
func newSupply(o SimOptions) scheduler.SupplyPredictor {
	switch o.Supply {
	case "daily":
		perDay := max(86400/o.SlotSeconds, 1)
		return scheduler.NewDailySupply(perDay, max(perDay/24, 1))
	case "quantile":
		return &scheduler.QuantileSupply{Q: o.SupplyQ}
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
func (o *SimOptions) applySetting() error {
	switch o.Setting {
	case "":
		return nil
	case "era-azure":
		if o.Workload == "" {
			o.Generate = "mapreduce"
		}
		o.Capacity, o.GenerateFor = 500, 100
		o.Cloud.Share, o.Cloud.BackgroundLoad = 0.2, 0.6
		o.Ceiling, o.MaxDiscount = 10, 0.35
		o.FixedPrice, o.GreedyPrice = 10, 6.5
		if o.Penalty == 0 {
			o.Penalty = 0.01
		}
		o.Algorithms = "econ-seasonal,econ-seasonal-penalty,econ-linear,econ-linear-penalty,greedy,ondemand"
		if o.Supply == "" {
			o.Supply = "daily"
		}
		if o.PlanShare == 0 {
			o.PlanShare = 0.8
		}
		o.Rerun = true
		if o.Cloud.FailureShare == 0 {
			o.Cloud.FailureShare = 0.05
		}
		return nil
	}
	return fmt.Errorf("--setting: unknown setting %q (known: %s)", o.Setting, strings.Join(SimSettings, ", "))
}

// SimResult is what Simulate found, as `simulate --json` prints it
// (docs/formats/workload.md), plus the share of the upper bound and the acceptance by
// class; WriteSimTable prints it as a table, Report for the HTML report.
type SimResult struct {
	Workload struct {
		Jobs           int     `json:"jobs"`
		RequestedValue float64 `json:"requested_value"`
		Capacity       int64   `json:"capacity"`
		Slots          int     `json:"slots"`
	} `json:"workload"`
	UpperBoundValue float64        `json:"upper_bound_value"`
	Cloud           *SimCloud      `json:"cloud,omitempty"`
	Algorithms      []SimAlgorithm `json:"algorithms"`
	outcomes        []scheduler.Outcome
	classes         []string
	title           string
}

// SimAlgorithm is one algorithm's run.
type SimAlgorithm struct {
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

// SimCloud is the setting of the simulated cloud, in the result when any of it is
// set.
type SimCloud struct {
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

// Prepare applies the named run of o.Setting and checks the options a workload does
// not change; it returns the algorithms to run, in o.Algorithms's order.
func (o *SimOptions) Prepare() ([]string, error) {
	if err := o.applySetting(); err != nil {
		return nil, err
	}
	algos, err := ParseAlgorithms(o.Algorithms)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Supply != "" && !slices.Contains(SimSupplies, o.Supply):
		return nil, fmt.Errorf("--supply: unknown %q (known: %s)", o.Supply, strings.Join(SimSupplies, ", "))
	case !(o.SupplyQ >= 0 && o.SupplyQ <= 1):
		return nil, errors.New("--supply-quantile: must be between 0 and 1")
	case !(o.Foresight >= 0 && o.Foresight <= 24*365):
		return nil, errors.New("--foresight-hours: must be from 0 to a year")
	case !(o.PlanShare >= 0 && o.PlanShare <= 1):
		return nil, errors.New("--plan-share: must be between 0 and 1")
	}
	return algos, nil
}

// Progress is told how far Simulate is: the stage ("upper bound", then each
// algorithm's name) and the steps done of total.
type Progress func(stage string, done, total int)

// Simulate replays the workload once per algorithm (as Prepare returned them) on the
// simulated cloud of o, and bounds it with the value-maximizing fractional allocation
// of the whole workload. progress, when not nil, is told how far it is.
func Simulate(w Workload, algos []string, o SimOptions, progress Progress) (SimResult, error) {
	jobs, capacity := w.Jobs, w.Capacity
	res := SimResult{title: w.Title, classes: workloadClasses(jobs)}
	res.Workload.Jobs, res.Workload.Capacity = len(jobs), capacity
	o.Cloud.Seed, o.Cloud.SlotsPerDay = o.CloudSeed, max(86400/o.SlotSeconds, 1)
	o.Cloud.Foresight = scheduler.Slot(o.Foresight * 3600 / float64(o.SlotSeconds))
	if o.Cloud != (scheduler.Cloud{Seed: o.CloudSeed, SlotsPerDay: o.Cloud.SlotsPerDay, LossShare: o.Cloud.LossShare, LossSlots: o.Cloud.LossSlots}) ||
		o.StartEarly || o.Ceiling > 0 || o.MaxDiscount > 0 || o.Supply != "" && o.Supply != "none" || o.PlanShare > 0 || o.Rerun {
		c := o.Cloud
		res.Cloud = &SimCloud{Seed: c.Seed, LossesPerDay: c.LossesPerDay, LossShare: c.LossShare, LossSlots: int64(c.LossSlots),
			FailureShare: c.FailureShare, FinishEarlyShare: c.FinishEarlyShare, StartEarly: o.StartEarly, Share: c.Share,
			BackgroundLoad: c.BackgroundLoad, PriceCeiling: o.Ceiling, MaxDiscount: o.MaxDiscount,
			ForesightSlots: int(max(c.Foresight, scheduler.Slot(max(c.SlotsPerDay/24, 1)))), Supply: cmp.Or(o.Supply, "none"), PlanShare: o.PlanShare, Rerun: o.Rerun}
	}

	total := len(algos)*1000 + 1000
	if progress != nil {
		progress("upper bound", 0, total)
	}
	bound := scheduler.WorkloadBound(jobs, o.Cloud.Managed(capacity))
	res.UpperBoundValue = bound.Value
	for i, name := range algos {
		if progress != nil {
			progress(name, 1000+i*1000, total)
		}
		cfg := scheduler.SimConfig{Capacity: capacity, Cloud: o.Cloud, StartEarly: o.StartEarly, Rerun: o.Rerun}
		if strings.HasPrefix(name, "econ") { // ERA's own planning: the baselines plan with the whole share
			cfg.Supply, cfg.PlanShare = newSupply(o), o.PlanShare
		}
		if progress != nil {
			base := 1000 + i*1000
			cfg.Progress = func(slot, horizon scheduler.Slot) {
				progress(name, base+int(1000*int64(slot)/int64(max(horizon, 1))), total)
			}
		}
		out, err := scheduler.SimulateWith(jobs, newAlgorithm(name, o, capacity, jobs), cfg)
		if err != nil {
			return SimResult{}, err
		}
		res.outcomes = append(res.outcomes, out)
		res.Workload.RequestedValue = out.RequestedValue
		res.Workload.Slots = len(out.Series)
		a := SimAlgorithm{Name: name, AcceptedJobs: out.AcceptedJobs, AcceptedValue: round2(out.AcceptedValue),
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
	res.Workload.RequestedValue = round2(res.Workload.RequestedValue)
	res.UpperBoundValue = round2(res.UpperBoundValue)
	return res, nil
}

// Report is what the HTML report shows of the result.
func (r SimResult) Report() reports.Simulation {
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

// ParseAlgorithms reads a comma-separated list of SimAlgorithms, each once.
func ParseAlgorithms(list string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if !slices.Contains(SimAlgorithms, a) {
			return nil, fmt.Errorf("--algorithms: unknown algorithm %q (known: %s)", a, strings.Join(SimAlgorithms, ", "))
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--algorithms: name at least one of %s", strings.Join(SimAlgorithms, ", "))
	}
	return out, nil
}

func newAlgorithm(name string, o SimOptions, capacity int64, jobs []scheduler.Job) scheduler.Algorithm {
	switch name {
	case "econ-linear":
		return o.econ(scheduler.LinearFromJobs(jobs))
	case "econ-seasonal-penalty":
		b := o.econ(scheduler.NewSeasonal(o.SlotSeconds))
		b.LaterPenalty = o.Penalty
		return b
	case "econ-linear-penalty":
		b := o.econ(scheduler.LinearFromJobs(jobs))
		b.LaterPenalty = o.Penalty
		return b
	case "econ":
		return o.econ(scheduler.NewDefaultPredictor(o.SlotSeconds, map[string]int64{scheduler.SimPool: capacity}))
	case "econ-seasonal":
		return o.econ(scheduler.NewSeasonal(o.SlotSeconds))
	case "econ-fractional":
		return o.econ(scheduler.NewFractional(o.SlotSeconds, map[string]int64{scheduler.SimPool: capacity}))
	case "econ-load":
		return o.econ(scheduler.LoadCurve{Base: 1.5, Steep: 6, Capacity: capacity})
	case "greedy":
		if o.GreedyPrice > 0 {
			return scheduler.Greedy{UnitPrice: o.GreedyPrice}
		}
		return scheduler.Greedy{UnitPrice: o.FixedPrice}
	case "ondemand-fit":
		return scheduler.OnDemandFit{UnitPrice: o.FixedPrice}
	default:
		return scheduler.OnDemand{UnitPrice: o.FixedPrice}
	}
}

// econ is Basic-Econ with the predictor, bounded by --price-ceiling and
// --max-discount when they are set.
func (o SimOptions) econ(p scheduler.Predictor) scheduler.BasicEcon {
	b := scheduler.BasicEcon{Predictor: p, Ceiling: o.Ceiling}
	if o.Ceiling > 0 {
		b.Floor = o.Ceiling * (1 - o.MaxDiscount)
	}
	return b
}

// Workload is a workload ready to replay: its jobs, the pool's size in units and a
// title for the table and the report.
type Workload struct {
	Jobs     []scheduler.Job
	Capacity int64
	Title    string
}

// LoadWorkload reads (a file opened with open) or generates the jobs o names, settles
// the capacity and checks the options the replay needs. A workload without a job is
// refused.
func LoadWorkload(o SimOptions, open func(path string) (io.ReadCloser, error)) (Workload, error) {
	jobs, capacity, title, err := loadWorkload(o, open)
	if err != nil {
		return Workload{}, err
	}
	if len(jobs) == 0 {
		return Workload{}, errors.New("the workload has no jobs")
	}
	return Workload{jobs, capacity, title}, nil
}

func loadWorkload(o SimOptions, open func(path string) (io.ReadCloser, error)) ([]scheduler.Job, int64, string, error) {
	if o.Capacity < 0 {
		return nil, 0, "", errors.New("--capacity: must be a positive number of units")
	}
	if o.SlotSeconds <= 0 {
		return nil, 0, "", errors.New("--slot-seconds: must be positive")
	}
	if o.FixedPrice < 0 || o.GreedyPrice < 0 || o.Penalty < 0 {
		return nil, 0, "", errors.New("--fixed-price, --greedy-price and --later-penalty must not be negative")
	}
	if err := o.Cloud.Validate(); err != nil {
		return nil, 0, "", fmt.Errorf("the simulated cloud: %w", err)
	}
	if o.Ceiling < 0 || o.MaxDiscount < 0 || o.MaxDiscount > 1 || (o.MaxDiscount > 0 && o.Ceiling == 0) {
		return nil, 0, "", errors.New("--price-ceiling must not be negative; --max-discount is between 0 and 1 and needs a ceiling")
	}
	switch {
	case o.Workload != "" && o.Generate != "":
		return nil, 0, "", errors.New("give --workload or --generate, not both")
	case o.Generate != "":
		if o.Generate != "mapreduce" {
			return nil, 0, "", fmt.Errorf("--generate: unknown generator %q (known: mapreduce)", o.Generate)
		}
		if o.Jobs <= 0 || o.Jobs > 10_000_000 {
			return nil, 0, "", errors.New("--jobs: must be between 1 and 10,000,000")
		}
		capacity := o.Capacity
		if capacity == 0 {
			capacity = 100
		}
		sized := capacity
		if o.GenerateFor > 0 {
			sized = o.GenerateFor
		}
		jobs := scheduler.GenerateMapReduce(o.Jobs, o.Seed, sized)
		title := fmt.Sprintf("MapReduce-like mix: %d jobs, seed %d, %d units", o.Jobs, o.Seed, capacity)
		if sized != capacity {
			title = fmt.Sprintf("MapReduce-like mix: %d jobs, seed %d, sized for %d of the cluster's %d units", o.Jobs, o.Seed, sized, capacity)
		}
		return jobs, capacity, title, nil
	case o.Workload == "":
		return nil, 0, "", errors.New("give a workload: --workload FILE.csv|FILE.swf, or --generate mapreduce")
	}
	ext := strings.ToLower(filepath.Ext(o.Workload))
	if ext != ".csv" && ext != ".swf" {
		return nil, 0, "", fmt.Errorf("--workload: %s: the name must end in .csv or .swf", o.Workload)
	}
	in, err := open(o.Workload)
	if err != nil {
		return nil, 0, "", err
	}
	defer in.Close()
	title := filepath.Base(o.Workload)
	switch ext {
	case ".csv":
		if o.Capacity == 0 {
			return nil, 0, "", errors.New("--capacity: a CSV workload needs the pool's size in units")
		}
		jobs, err := scheduler.ReadCSV(in)
		if err != nil {
			return nil, 0, "", fmt.Errorf("%s: %w", o.Workload, err)
		}
		return jobs, o.Capacity, fmt.Sprintf("%s: %d units", title, o.Capacity), nil
	default: // .swf
		data, err := io.ReadAll(in)
		if err != nil {
			return nil, 0, "", err
		}
		capacity := o.Capacity
		if capacity == 0 {
			if capacity = SWFMaxProcs(data); capacity <= 0 {
				return nil, 0, "", errors.New("--capacity: the log has no MaxProcs header; give the pool's size")
			}
		}
		model := scheduler.SWFModel{SlotSeconds: o.SlotSeconds, Seed: o.Seed, Slack: o.Slack, ValueMedian: o.ValueMedian, ValueSpread: o.ValueSpread}
		if o.Slack < 0 || o.ValueMedian <= 0 || o.ValueSpread < 0 {
			return nil, 0, "", errors.New("--slack and --value-spread must not be negative, --value-median must be positive")
		}
		jobs, err := scheduler.ReadSWF(bytes.NewReader(data), model)
		if err != nil {
			return nil, 0, "", fmt.Errorf("%s: %w", o.Workload, err)
		}
		return jobs, capacity, fmt.Sprintf("%s: %d jobs, %d units, seed %d", title, len(jobs), capacity, o.Seed), nil
	}
}
