package labcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clearhouse/clearhouse/lab"
	"github.com/clearhouse/clearhouse/sharing"
	"github.com/clearhouse/clearhouse/templates/reports"
)

// NewShareSimulate returns `share simulate`: CloudShare's fairness experiment on an
// SWF log, once (lab.ShareEvaluate).
func NewShareSimulate(opts Options) *cobra.Command {
	var o shareOptions
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Compare sharing policies' fairness against the Shapley value on an SWF log",
		Long: `Reproduce the evaluation of CloudShare (Pacholczyk and Rzadca 2018, section 5): take
--samples random 24-hour windows of an SWF log, map its users to --orgs organizations
at random, give the organizations the log's processors (--scenario equal: equal
shares; zipf: Zipf-distributed shares; background: equal shares, and 30% of the users
become local background load that runs only on its organization's processors, before
anything else there), split every job into one-processor, one-hour tasks, and simulate
every policy on every coalition of organizations. As CloudShare does, a coalition's
value under a policy is the total wait that policy gives it (2^n - 1 runs per policy);
the Shapley values of that game are each organization's fair wait under the policy;
the policy's unfairness is the Euclidean distance between the organizations' waits
under it and those Shapley values (task-hours); its score is how many times, over
the samples, it was fairer than another policy (a tie scores nothing: CloudShare's
Table 1). --coalitions shared measures every policy against one game instead, whose
value is the smallest total wait any policy gives the coalition; --ties half gives
half a point to each policy of a tie.

Shapley values are exact up to 12 organizations (all 2^n - 1 coalitions), sampled
beyond (200 seeded random orders). The same seed gives the same output, byte for byte.`,
		Example: `  clearhouse share simulate --workload lab/testdata/hpc2n.swf --orgs 5 --samples 20 --seed 1 --scenario equal
  clearhouse share simulate --workload log.swf --scenario zipf --policies direct-orig,fairshare --json
  clearhouse share simulate --workload log.swf --scenario background --report share.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runShareSimulate(cmd, opts, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Workload, "workload", "", "an SWF log (the Parallel Workloads Archive's format)")
	f.IntVar(&o.Orgs, "orgs", 5, "organizations, 1 to 32")
	f.IntVar(&o.Samples, "samples", 20, "random 24-hour windows, 1 to 1,000")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the windows, the users' organizations and the policies")
	f.StringVar(&o.Scenario, "scenario", "equal", "processors per organization: "+strings.Join(lab.ShareScenarios, ", "))
	f.StringVar(&o.Policies, "policies", strings.Join(sharing.Names(), ","), "comma-separated: "+strings.Join(sharing.Names(), ", "))
	f.BoolVar(&o.json, "json", false, "print one JSON object and nothing else")
	f.StringVar(&o.report, "report", "", "write a self-contained HTML report with charts to this file")
	f.Var(choiceFlag{&o.Shared, "per-policy", "shared"}, "coalitions", "coalition values: per-policy (each policy's own runs, the paper's) or shared (the smallest total wait of any policy)")
	f.Var(choiceFlag{&o.TiesHalf, "none", "half"}, "ties", "what a tie scores: none (the paper's) or half (half a point each)")
	return cmd
}

// choiceFlag is a flag with two values, off and on, that sets a bool.
type choiceFlag struct {
	v       *bool
	off, on string
}

func (c choiceFlag) String() string {
	if c.v != nil && *c.v {
		return c.on
	}
	return c.off
}

func (c choiceFlag) Set(s string) error {
	switch s {
	case c.off:
		*c.v = false
	case c.on:
		*c.v = true
	default:
		return fmt.Errorf("must be %s or %s", c.off, c.on)
	}
	return nil
}

func (c choiceFlag) Type() string { return c.off + "|" + c.on }

// shareOptions are the flags of `clearhouse share simulate`: the experiment's and
// the output's.
type shareOptions struct {
	lab.ShareOptions
	json   bool
	report string
}

func runShareSimulate(cmd *cobra.Command, opts Options, o shareOptions) error {
	policies, err := lab.ParseSharePolicies(o.Policies)
	if err != nil {
		return &ExitError{2, err}
	}
	if err := lab.CheckShareOptions(o.ShareOptions); err != nil {
		return &ExitError{2, err}
	}
	log, err := lab.ReadShareLog(o.Workload, opts.opener(cmd))
	if err != nil {
		return &ExitError{2, err}
	}
	orgs, err := lab.ShareOrgs(o.Scenario, o.Orgs, log.Procs)
	if err != nil {
		return &ExitError{2, err}
	}
	res, err := lab.ShareEvaluate(log, orgs, policies, o.ShareOptions)
	if err != nil {
		return err
	}
	if o.report != "" {
		page, err := reports.RenderShare(res.Report(o.ShareOptions))
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
	lab.WriteShareTable(cmd.OutOrStdout(), res, o.ShareOptions)
	if o.report != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "\nreport: %s\n", o.report)
	}
	return nil
}

// NewShareCompare returns `share compare`: CloudShare's experiment over many seeds
// and every scenario (lab.Compare).
func NewShareCompare(opts Options) *cobra.Command {
	var o shareCompareOptions
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "CloudShare's experiment over many seeds and every scenario, with confidence intervals and paired tests",
		Long: `Run the experiment of 'share simulate' once per seed of --seeds and scenario of
--scenarios (--samples windows each), and report per scenario, for every policy, the
mean over the seeds of its score (points against the other policies, of samples x
(policies - 1)) and of its mean unfairness, each with a --level Student-t confidence
interval over the seeds. Then each policy against --baseline (fairshare by default):
paired per seed on the score (mean difference with its interval, seeds above / below /
tied, one-sided paired t-test and exact sign test p-values for "above the baseline"),
and paired per sample on unfairness (how much less unfair than the baseline, with its
interval; samples fairer / less fair / tied over all seeds, one-sided sign test). Seeds are independent runs: different windows, different
mappings of users to organizations.

Output: a table, or with --json {"scenarios":[{"scenario","seeds","policies":[{"name",
"score","score_low","score_high","unfairness","unfairness_low","unfairness_high"}],
"against":[{"name","score_diff","score_diff_low","score_diff_high","seeds_above",
"seeds_below","seeds_tied","score_t_p","score_sign_p","unfairness_gain",
"unfairness_gain_low","unfairness_gain_high","samples_fairer",
"samples_less_fair","samples_tied","samples_sign_p"}]}]}.`,
		Example: `  clearhouse share compare --workload lab/testdata/hpc2n.swf --seeds 1-10
  clearhouse share compare --workload log.swf --seeds 1,2,3 --scenarios zipf --samples 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runShareCompare(cmd, opts, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Workload, "workload", "", "an SWF log (the Parallel Workloads Archive's format)")
	f.IntVar(&o.Orgs, "orgs", 5, "organizations, 1 to 32")
	f.IntVar(&o.Samples, "samples", 20, "random 24-hour windows per seed, 1 to 1,000")
	f.StringVar(&o.Seeds, "seeds", "1-10", "seeds: a range a-b or a comma-separated list, 2 to 1,000 of them")
	f.StringVar(&o.Scenarios, "scenarios", strings.Join(lab.ShareScenarios, ","), "comma-separated: "+strings.Join(lab.ShareScenarios, ", "))
	f.StringVar(&o.Policies, "policies", strings.Join(sharing.Names(), ","), "comma-separated: "+strings.Join(sharing.Names(), ", "))
	f.StringVar(&o.Baseline, "baseline", "fairshare", "the policy the others are tested against (one of --policies)")
	f.Float64Var(&o.Level, "level", 0.95, "confidence level of the intervals, in (0, 1)")
	f.BoolVar(&o.json, "json", false, "print one JSON object and nothing else")
	return cmd
}

// shareCompareOptions are the flags of `clearhouse share compare`.
type shareCompareOptions struct {
	lab.CompareOptions
	json bool
}

func runShareCompare(cmd *cobra.Command, opts Options, o shareCompareOptions) error {
	policies, err := lab.ParseSharePolicies(o.Policies)
	if err != nil {
		return &ExitError{2, err}
	}
	seeds, err := lab.ParseSeeds(o.Seeds)
	if err != nil {
		return &ExitError{2, err}
	}
	var names []string
	for _, p := range policies {
		names = append(names, p.Name())
	}
	base := slices.Index(names, o.Baseline)
	if base < 0 {
		return &ExitError{2, fmt.Errorf("--baseline: %q is not one of --policies", o.Baseline)}
	}
	if !(o.Level > 0 && o.Level < 1) {
		return &ExitError{2, errors.New("--level: must be in (0, 1)")}
	}
	var scenarios []string
	for _, s := range strings.Split(o.Scenarios, ",") {
		o.Scenario = strings.TrimSpace(s)
		if err := lab.CheckShareOptions(o.ShareOptions); err != nil {
			return &ExitError{2, err}
		}
		scenarios = append(scenarios, o.Scenario)
	}
	log, err := lab.ReadShareLog(o.Workload, opts.opener(cmd))
	if err != nil {
		return &ExitError{2, err}
	}
	var out []lab.CompareScenario
	for _, sc := range scenarios {
		o.Scenario = sc
		orgs, err := lab.ShareOrgs(sc, o.Orgs, log.Procs)
		if err != nil {
			return &ExitError{2, err}
		}
		r, err := lab.Compare(log, orgs, policies, seeds, base, o.CompareOptions)
		if err != nil {
			return err
		}
		out = append(out, r)
	}
	w := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"scenarios": out})
	}
	lab.WriteCompareTable(w, out, o.CompareOptions, names[base])
	return nil
}
