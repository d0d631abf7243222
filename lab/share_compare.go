package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse/sharing"
	"github.com/spf13/cobra"
)

// shareCompareOptions are the flags of `clearhouse share compare`.
type shareCompareOptions struct {
	shareOptions
	seeds, scenarios string
	baseline         string
	level            float64
}

func newShareCompareCmd() *cobra.Command {
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
		Example: `  clearhouse share compare --workload cmd/clearhouse/testdata/hpc2n.swf --seeds 1-10
  clearhouse share compare --workload log.swf --seeds 1,2,3 --scenarios zipf --samples 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runShareCompare(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.workload, "workload", "", "an SWF log (the Parallel Workloads Archive's format)")
	f.IntVar(&o.orgs, "orgs", 5, "organizations, 1 to 32")
	f.IntVar(&o.samples, "samples", 20, "random 24-hour windows per seed, 1 to 1,000")
	f.StringVar(&o.seeds, "seeds", "1-10", "seeds: a range a-b or a comma-separated list, 2 to 1,000 of them")
	f.StringVar(&o.scenarios, "scenarios", strings.Join(shareScenarios, ","), "comma-separated: "+strings.Join(shareScenarios, ", "))
	f.StringVar(&o.policies, "policies", strings.Join(sharing.Names(), ","), "comma-separated: "+strings.Join(sharing.Names(), ", "))
	f.StringVar(&o.baseline, "baseline", "fairshare", "the policy the others are tested against (one of --policies)")
	f.Float64Var(&o.level, "level", 0.95, "confidence level of the intervals, in (0, 1)")
	f.BoolVar(&o.json, "json", false, "print one JSON object and nothing else")
	return cmd
}

type shareComparePolicy struct {
	Name           string  `json:"name"`
	Score          float64 `json:"score"`
	ScoreLow       float64 `json:"score_low"`
	ScoreHigh      float64 `json:"score_high"`
	Unfairness     float64 `json:"unfairness"`
	UnfairnessLow  float64 `json:"unfairness_low"`
	UnfairnessHigh float64 `json:"unfairness_high"`
}

type shareCompareTest struct {
	Name            string  `json:"name"`
	ScoreDiff       float64 `json:"score_diff"`
	ScoreDiffLow    float64 `json:"score_diff_low"`
	ScoreDiffHigh   float64 `json:"score_diff_high"`
	SeedsAbove      int     `json:"seeds_above"`
	SeedsBelow      int     `json:"seeds_below"`
	SeedsTied       int     `json:"seeds_tied"`
	ScoreTP         float64 `json:"score_t_p"`
	ScoreSignP      float64 `json:"score_sign_p"`
	UnfairnessGain  float64 `json:"unfairness_gain"`
	UnfairnessLow   float64 `json:"unfairness_gain_low"`
	UnfairnessHigh  float64 `json:"unfairness_gain_high"`
	SamplesFairer   int     `json:"samples_fairer"`
	SamplesLessFair int     `json:"samples_less_fair"`
	SamplesTied     int     `json:"samples_tied"`
	SamplesSignP    float64 `json:"samples_sign_p"`
}

type shareCompareScenario struct {
	Scenario string               `json:"scenario"`
	Seeds    []uint64             `json:"seeds"`
	Policies []shareComparePolicy `json:"policies"`
	Against  []shareCompareTest   `json:"against"`
}

func runShareCompare(cmd *cobra.Command, o shareCompareOptions) error {
	policies, err := parseSharePolicies(o.policies)
	if err != nil {
		return &exitError{2, err}
	}
	seeds, err := parseSeeds(o.seeds)
	if err != nil {
		return &exitError{2, err}
	}
	var names []string
	for _, p := range policies {
		names = append(names, p.Name())
	}
	base := slices.Index(names, o.baseline)
	if base < 0 {
		return &exitError{2, fmt.Errorf("--baseline: %q is not one of --policies", o.baseline)}
	}
	if !(o.level > 0 && o.level < 1) {
		return &exitError{2, errors.New("--level: must be in (0, 1)")}
	}
	var scenarios []string
	for _, s := range strings.Split(o.scenarios, ",") {
		o.scenario = strings.TrimSpace(s)
		if err := checkShareOptions(o.shareOptions); err != nil {
			return &exitError{2, err}
		}
		scenarios = append(scenarios, o.scenario)
	}
	log, err := readShareLog(cmd, o.workload)
	if err != nil {
		return &exitError{2, err}
	}
	var out []shareCompareScenario
	for _, sc := range scenarios {
		o.scenario = sc
		orgs, err := shareOrgs(sc, o.orgs, log.procs)
		if err != nil {
			return &exitError{2, err}
		}
		score := make([][]float64, len(names))  // [policy][seed]
		unfair := make([][]float64, len(names)) // [policy][seed]: mean over samples
		perSample := make([][]float64, len(names))
		for _, seed := range seeds {
			o.seed = seed
			res, err := shareEvaluate(log, orgs, policies, o.shareOptions)
			if err != nil {
				return err
			}
			for p, pol := range res.Policies {
				score[p] = append(score[p], pol.Score)
				unfair[p] = append(unfair[p], pol.MeanUnfairness)
			}
			for _, u := range res.unfair {
				for p := range names {
					perSample[p] = append(perSample[p], u[p])
				}
			}
		}
		out = append(out, compareScenario(sc, seeds, names, base, score, unfair, perSample, o.level))
	}
	w := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"scenarios": out})
	}
	printShareCompare(w, out, o, names[base])
	return nil
}

// compareScenario summarises one scenario's runs: intervals per policy, and each
// policy against the baseline.
func compareScenario(sc string, seeds []uint64, names []string, base int, score, unfair, perSample [][]float64, level float64) shareCompareScenario {
	r := shareCompareScenario{Scenario: sc, Seeds: seeds}
	for p, name := range names {
		s, u := sharing.MeanInterval(score[p], level), sharing.MeanInterval(unfair[p], level)
		r.Policies = append(r.Policies, shareComparePolicy{name, round3(s.Mean), round3(s.Low), round3(s.High), round3(u.Mean), round3(u.Low), round3(u.High)})
	}
	for p, name := range names {
		if p == base {
			continue
		}
		bySeed := sharing.ComparePaired(score[p], score[base], level)
		// fairer is lower unfairness: the baseline's minus the policy's.
		bySample := sharing.ComparePaired(perSample[base], perSample[p], level)
		r.Against = append(r.Against, shareCompareTest{Name: name, ScoreDiff: round3(bySeed.Diff.Mean), ScoreDiffLow: round3(bySeed.Diff.Low),
			ScoreDiffHigh: round3(bySeed.Diff.High), SeedsAbove: bySeed.Wins, SeedsBelow: bySeed.Losses, SeedsTied: bySeed.Ties,
			ScoreTP: pround(bySeed.TP), ScoreSignP: pround(bySeed.SignP), UnfairnessGain: round3(bySample.Diff.Mean),
			UnfairnessLow: round3(bySample.Diff.Low), UnfairnessHigh: round3(bySample.Diff.High), SamplesFairer: bySample.Wins, SamplesLessFair: bySample.Losses,
			SamplesTied: bySample.Ties, SamplesSignP: pround(bySample.SignP)})
	}
	return r
}

// pround keeps four significant digits of a p-value.
func pround(p float64) float64 {
	x, _ := strconv.ParseFloat(strconv.FormatFloat(p, 'g', 4, 64), 64)
	return x
}

func printShareCompare(w io.Writer, out []shareCompareScenario, o shareCompareOptions, baseline string) {
	for k, sc := range out {
		if k > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "scenario %s: %d seeds (%s) of %d samples, %d organizations; %g%% intervals over the seeds\n",
			sc.Scenario, len(sc.Seeds), o.seeds, o.samples, o.orgs, o.level*100)
		tw := newTable(w)
		fmt.Fprintln(tw, "policy\tmean score\tinterval\tmean unfairness\tinterval\t")
		for _, p := range sc.Policies {
			fmt.Fprintf(tw, "%s\t%.1f\t[%.1f, %.1f]\t%.1f\t[%.1f, %.1f]\t\n", p.Name, p.Score, p.ScoreLow, p.ScoreHigh, p.Unfairness, p.UnfairnessLow, p.UnfairnessHigh)
		}
		tw.Flush()
		fmt.Fprintf(w, "against %s: score per seed (paired), unfairness per sample (paired); p one-sided for \"above %s\"\n", baseline, baseline)
		tw = newTable(w)
		fmt.Fprintln(tw, "policy\tscore diff\tinterval\tseeds above/below/tied\tt-test p\tsign p\tunfairness less by\tinterval\tsamples fairer/less/tied\tsign p\t")
		for _, a := range sc.Against {
			fmt.Fprintf(tw, "%s\t%+.1f\t[%.1f, %.1f]\t%d/%d/%d\t%.3g\t%.3g\t%+.1f\t[%.1f, %.1f]\t%d/%d/%d\t%.3g\t\n", a.Name, a.ScoreDiff, a.ScoreDiffLow, a.ScoreDiffHigh,
				a.SeedsAbove, a.SeedsBelow, a.SeedsTied, a.ScoreTP, a.ScoreSignP, a.UnfairnessGain, a.UnfairnessLow, a.UnfairnessHigh,
				a.SamplesFairer, a.SamplesLessFair, a.SamplesTied, a.SamplesSignP)
		}
		tw.Flush()
	}
}

// parseSeeds reads "a-b" or "a,b,c": 2 to 1,000 distinct seeds.
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	if lo, hi, ok := strings.Cut(s, "-"); ok && !strings.Contains(s, ",") {
		var a, b uint64
		if _, err := fmt.Sscanf(lo+" "+hi, "%d %d", &a, &b); err != nil || b < a || b-a >= 1000 {
			return nil, fmt.Errorf("--seeds: %q is not a range a-b of at most 1,000 seeds", s)
		}
		for x := a; x <= b; x++ {
			out = append(out, x)
		}
	} else {
		for _, f := range strings.Split(s, ",") {
			var x uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(f), "%d", &x); err != nil || slices.Contains(out, x) {
				return nil, fmt.Errorf("--seeds: %q is not a list of distinct whole numbers", s)
			}
			out = append(out, x)
		}
	}
	if len(out) < 2 || len(out) > 1000 {
		return nil, fmt.Errorf("--seeds: give 2 to 1,000 seeds, got %d", len(out))
	}
	return out, nil
}
