package lab

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse/sharing"
)

// CompareOptions are the flags of `clearhouse share compare`: the experiment's, and
// the seeds and scenarios it is run over, the baseline and the intervals' level.
type CompareOptions struct {
	ShareOptions
	Seeds, Scenarios string
	Baseline         string
	Level            float64
}

// ComparePolicy is a policy's mean score and unfairness over the seeds, with their intervals.
type ComparePolicy struct {
	Name           string  `json:"name"`
	Score          float64 `json:"score"`
	ScoreLow       float64 `json:"score_low"`
	ScoreHigh      float64 `json:"score_high"`
	Unfairness     float64 `json:"unfairness"`
	UnfairnessLow  float64 `json:"unfairness_low"`
	UnfairnessHigh float64 `json:"unfairness_high"`
}

// CompareTest is a policy against the baseline, paired per seed and per sample.
type CompareTest struct {
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

// CompareScenario is one scenario's comparison, as `share compare --json` prints it.
type CompareScenario struct {
	Scenario string          `json:"scenario"`
	Seeds    []uint64        `json:"seeds"`
	Policies []ComparePolicy `json:"policies"`
	Against  []CompareTest   `json:"against"`
}

// Compare runs the experiment of ShareEvaluate once per seed in o.Scenario, with the
// organizations ShareOrgs gave it, and summarises it: each policy's score and
// unfairness with their intervals, and each policy against the one at index base.
func Compare(log ShareLog, orgs []sharing.Org, policies []sharing.Policy, seeds []uint64, base int, o CompareOptions) (CompareScenario, error) {
	var names []string
	for _, p := range policies {
		names = append(names, p.Name())
	}
	score := make([][]float64, len(names))  // [policy][seed]
	unfair := make([][]float64, len(names)) // [policy][seed]: mean over samples
	perSample := make([][]float64, len(names))
	for _, seed := range seeds {
		o.Seed = seed
		res, err := ShareEvaluate(log, orgs, policies, o.ShareOptions)
		if err != nil {
			return CompareScenario{}, err
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
	return compareScenario(o.Scenario, seeds, names, base, score, unfair, perSample, o.Level), nil
}

// compareScenario summarises one scenario's runs: intervals per policy, and each
// policy against the baseline.
func compareScenario(sc string, seeds []uint64, names []string, base int, score, unfair, perSample [][]float64, level float64) CompareScenario {
	r := CompareScenario{Scenario: sc, Seeds: seeds}
	for p, name := range names {
		s, u := sharing.MeanInterval(score[p], level), sharing.MeanInterval(unfair[p], level)
		r.Policies = append(r.Policies, ComparePolicy{name, round3(s.Mean), round3(s.Low), round3(s.High), round3(u.Mean), round3(u.Low), round3(u.High)})
	}
	for p, name := range names {
		if p == base {
			continue
		}
		bySeed := sharing.ComparePaired(score[p], score[base], level)
		// fairer is lower unfairness: the baseline's minus the policy's.
		bySample := sharing.ComparePaired(perSample[base], perSample[p], level)
		r.Against = append(r.Against, CompareTest{Name: name, ScoreDiff: round3(bySeed.Diff.Mean), ScoreDiffLow: round3(bySeed.Diff.Low),
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

// WriteCompareTable prints the comparison as `share compare` does.
func WriteCompareTable(w io.Writer, out []CompareScenario, o CompareOptions, baseline string) {
	for k, sc := range out {
		if k > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "scenario %s: %d seeds (%s) of %d samples, %d organizations; %g%% intervals over the seeds\n",
			sc.Scenario, len(sc.Seeds), o.Seeds, o.Samples, o.Orgs, o.Level*100)
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

// ParseSeeds reads "a-b" or "a,b,c": 2 to 1,000 distinct seeds.
func ParseSeeds(s string) ([]uint64, error) {
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
