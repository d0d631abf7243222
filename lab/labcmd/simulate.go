package labcmd

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/clearhouse/clearhouse/lab"
	"github.com/clearhouse/clearhouse/templates/reports"
)

// NewSimulate returns `simulate`: replay a workload through the reservation
// scheduler, once per algorithm (lab.Simulate).
func NewSimulate(opts Options) *cobra.Command {
	var o simOptions
	o.SimOptions = lab.DefaultSimOptions()
	d := o.SimOptions
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
  clearhouse simulate --workload lab/testdata/hpc2n.swf --capacity 240 --json
  clearhouse simulate --workload jobs.csv --capacity 50 --algorithms econ,greedy --report sim.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimulate(cmd, opts, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Workload, "workload", "", "workload file: .csv or .swf")
	f.StringVar(&o.Generate, "generate", "", "generate a workload instead: mapreduce")
	f.IntVar(&o.Jobs, "jobs", d.Jobs, "jobs to generate")
	f.Uint64Var(&o.Seed, "seed", d.Seed, "seed of the generator and of the SWF value and deadline model")
	f.Int64Var(&o.Capacity, "capacity", 0, "the simulated pool's size in units (SWF: processors; default: the log's MaxProcs; generated: 100)")
	f.StringVar(&o.Algorithms, "algorithms", d.Algorithms, "comma-separated: "+strings.Join(lab.SimAlgorithms, ", "))
	f.IntVar(&o.SlotSeconds, "slot-seconds", d.SlotSeconds, "seconds per slot (SWF logs and the seasonal predictor)")
	f.Float64Var(&o.FixedPrice, "fixed-price", d.FixedPrice, "greedy's and ondemand's price per unit-slot, in dollars")
	f.Float64Var(&o.Slack, "slack", d.Slack, "SWF: a deadline is arrival + duration x (1 + slack x U[0,1))")
	f.Float64Var(&o.ValueMedian, "value-median", d.ValueMedian, "SWF: median value per unit-slot, in dollars")
	f.Float64Var(&o.ValueSpread, "value-spread", d.ValueSpread, "SWF: spread of the log-normal value per unit-slot")
	f.BoolVar(&o.json, "json", false, "print one JSON object (docs/formats/workload.md) and nothing else")
	f.StringVar(&o.report, "report", "", "write a self-contained HTML report with charts to this file")
	f.Uint64Var(&o.CloudSeed, "cloud-seed", d.CloudSeed, "seed of the simulated cloud's losses, failures, early finishes and background load")
	f.Float64Var(&o.Cloud.LossesPerDay, "capacity-losses", 0, "capacity losses a day")
	f.Float64Var(&o.Cloud.LossShare, "loss-share", d.Cloud.LossShare, "share of the capacity a loss takes")
	f.IntVar((*int)(&o.Cloud.LossSlots), "loss-slots", int(d.Cloud.LossSlots), "slots a capacity loss lasts")
	f.Float64Var(&o.Cloud.FailureShare, "task-failures", 0, "share of accepted tasks that fail partway through their run")
	f.Float64Var(&o.Cloud.FinishEarlyShare, "finish-early", 0, "share of accepted tasks that finish early")
	f.BoolVar(&o.StartEarly, "start-early", false, `start early what the engine offers as "may start now"`)
	f.Float64Var(&o.Cloud.Share, "share", 0, "Azure-style setting: the share of --capacity the scheduler manages (0: all, no background)")
	f.Float64Var(&o.Cloud.BackgroundLoad, "background-load", 0, "Azure-style setting: mean share of the cluster other work uses")
	f.Float64Var(&o.Ceiling, "price-ceiling", 0, "econ's most per unit-slot, in dollars (0: none)")
	f.Float64Var(&o.MaxDiscount, "max-discount", 0, "econ's largest discount from --price-ceiling (its floor is ceiling x (1 - discount))")
	f.Float64Var(&o.GreedyPrice, "greedy-price", 0, "greedy's price per unit-slot, in dollars (0: --fixed-price)")
	f.Float64Var(&o.Penalty, "later-penalty", d.Penalty, "the -penalty econ variants: a start s slots later is chosen as if it cost exp(penalty x s) times its price")
	f.StringVar(&o.Setting, "setting", "", "a named run: "+strings.Join(lab.SimSettings, ", ")+" (overrides the flags it sets)")
	f.StringVar(&o.Supply, "supply", "", "Azure-style setting: how slots not yet reported are planned: "+strings.Join(lab.SimSupplies, ", ")+" (none, the default but for era-azure's daily: the whole share)")
	f.Float64Var(&o.SupplyQ, "supply-quantile", d.SupplyQ, "--supply quantile: the quantile of the capacity seen to plan with")
	f.Float64Var(&o.Foresight, "foresight-hours", 0, "Azure-style setting: hours ahead each hourly capacity report reaches (0: 1)")
	f.Float64Var(&o.PlanShare, "plan-share", 0, "the share of the capacity the scheduler plans with, the rest spare (0: all)")
	f.BoolVar(&o.Rerun, "rerun", false, "failed tasks start again on spare capacity")
	return cmd
}

// simOptions are the flags of `clearhouse simulate`: the run's and the output's.
type simOptions struct {
	lab.SimOptions
	json   bool
	report string
}

func runSimulate(cmd *cobra.Command, opts Options, o simOptions) error {
	algos, err := o.Prepare()
	if err != nil {
		return &ExitError{2, err}
	}
	w, err := lab.LoadWorkload(o.SimOptions, opts.opener(cmd))
	if err != nil {
		return &ExitError{2, err}
	}
	var progress lab.Progress
	var bar *progressbar.ProgressBar
	stderr := cmd.ErrOrStderr()
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(len(algos)*1000+1000,
			progressbar.OptionSetWriter(stderr), progressbar.OptionSetWidth(30),
			progressbar.OptionSetDescription("upper bound"), progressbar.OptionClearOnFinish(),
			progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionSetPredictTime(true))
		stage := "upper bound"
		progress = func(s string, done, _ int) {
			if s != stage {
				stage = s
				bar.Describe(s)
			}
			bar.Set(done)
		}
	}
	res, err := lab.Simulate(w, algos, o.SimOptions, progress)
	if err != nil {
		return err
	}
	if bar != nil {
		bar.Finish()
	}

	if o.report != "" {
		page, err := reports.RenderSimulation(res.Report())
		if err != nil {
			return err
		}
		if err := opts.writeOut(cmd, o.report, page); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	if o.json {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	lab.WriteSimTable(cmd.OutOrStdout(), res)
	if o.report != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "\nreport: %s\n", o.report)
	}
	return nil
}
