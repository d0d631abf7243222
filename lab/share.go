package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/clearhouse/clearhouse/scheduler"
	"github.com/clearhouse/clearhouse/sharing"
	"github.com/clearhouse/clearhouse/templates/reports"
	"github.com/spf13/cobra"
)

// shareScenarios are the paper's three ways of giving organizations processors.
var shareScenarios = []string{"equal", "zipf", "background"}

// shareBackgroundShare is the share of users whose jobs are local background load in
// the background scenario.
const shareBackgroundShare = 0.3

// shareWindowHours is the length of a sample.
const shareWindowHours = 24

type shareOptions struct {
	workload string
	orgs     int
	samples  int
	seed     uint64
	scenario string
	policies string
	json     bool
	report   string
	// shared: one set of coalition values for all policies; tiesHalf: a tie
	// scores half a point to each (both off: CloudShare's method).
	shared   bool
	tiesHalf bool
}

func newShareCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "share",
		Short: "Idle capacity shared among teams: the fairness experiment of CloudShare",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newShareSimulateCmd(), newShareCompareCmd(), newShareFairnessCmd(), newShareHistoryCmd())
	return cmd
}

func newShareSimulateCmd() *cobra.Command {
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
		Example: `  clearhouse share simulate --workload cmd/clearhouse/testdata/hpc2n.swf --orgs 5 --samples 20 --seed 1 --scenario equal
  clearhouse share simulate --workload log.swf --scenario zipf --policies direct-orig,fairshare --json
  clearhouse share simulate --workload log.swf --scenario background --report share.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runShareSimulate(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.workload, "workload", "", "an SWF log (the Parallel Workloads Archive's format)")
	f.IntVar(&o.orgs, "orgs", 5, "organizations, 1 to 32")
	f.IntVar(&o.samples, "samples", 20, "random 24-hour windows, 1 to 1,000")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the windows, the users' organizations and the policies")
	f.StringVar(&o.scenario, "scenario", "equal", "processors per organization: "+strings.Join(shareScenarios, ", "))
	f.StringVar(&o.policies, "policies", strings.Join(sharing.Names(), ","), "comma-separated: "+strings.Join(sharing.Names(), ", "))
	f.BoolVar(&o.json, "json", false, "print one JSON object and nothing else")
	f.StringVar(&o.report, "report", "", "write a self-contained HTML report with charts to this file")
	f.Var(choiceFlag{&o.shared, "per-policy", "shared"}, "coalitions", "coalition values: per-policy (each policy's own runs, the paper's) or shared (the smallest total wait of any policy)")
	f.Var(choiceFlag{&o.tiesHalf, "none", "half"}, "ties", "what a tie scores: none (the paper's) or half (half a point each)")
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

// shareResult is the JSON the command prints.
type shareResult struct {
	Policies []sharePolicy `json:"policies"`
	Samples  []shareSample `json:"samples"`
	title    string
	orgs     []sharing.Org
	names    []string
	unfair   [][]float64 // [sample][policy]
	pairwise [][]float64 // points of each policy against each other one
	tiesHalf bool
	exact    bool
	sims     int
}

type sharePolicy struct {
	Name           string  `json:"name"`
	Score          float64 `json:"score"`
	MeanUnfairness float64 `json:"mean_unfairness"`
}

type shareSample struct {
	Start          int64                         `json:"start"` // seconds, on the log's clock
	CoalitionValue float64                       `json:"coalition_value"`
	Shapley        map[string]float64            `json:"shapley"`
	Wait           map[string]map[string]float64 `json:"wait"`
	// PolicyCoalitionValue and PolicyShapley are each policy's own game (the
	// paper's): its grand coalition's total wait and its Shapley values.
	PolicyCoalitionValue map[string]float64            `json:"policy_coalition_value"`
	PolicyShapley        map[string]map[string]float64 `json:"policy_shapley"`
}

func runShareSimulate(cmd *cobra.Command, o shareOptions) error {
	policies, err := parseSharePolicies(o.policies)
	if err != nil {
		return &exitError{2, err}
	}
	if err := checkShareOptions(o); err != nil {
		return &exitError{2, err}
	}
	log, err := readShareLog(cmd, o.workload)
	if err != nil {
		return &exitError{2, err}
	}
	orgs, err := shareOrgs(o.scenario, o.orgs, log.procs)
	if err != nil {
		return &exitError{2, err}
	}
	res, err := shareEvaluate(log, orgs, policies, o)
	if err != nil {
		return err
	}
	if o.report != "" {
		page, err := reports.RenderShare(res.report(o))
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
	printShareTable(cmd.OutOrStdout(), res, o)
	if o.report != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "\nreport: %s\n", o.report)
	}
	return nil
}

// shareEvaluate runs CloudShare's experiment once: o.samples windows of the log drawn
// with o.seed, every policy on every coalition of orgs, scored.
func shareEvaluate(log shareLog, orgs []sharing.Org, policies []sharing.Policy, o shareOptions) (shareResult, error) {
	res := shareResult{orgs: orgs, tiesHalf: o.tiesHalf, title: fmt.Sprintf("%s: %d jobs, %d processors", filepath.Base(o.workload), len(log.jobs), log.procs)}
	for _, p := range policies {
		res.names = append(res.names, p.Name())
	}
	rng := rand.New(rand.NewPCG(o.seed, o.seed^0x5ba2e))
	for range o.samples {
		start, jobs := log.sample(rng, orgs, o.scenario == "background")
		ev, err := sharing.Evaluate(sharing.Experiment{Orgs: orgs, Jobs: jobs, Policies: policies, Seed: rng.Uint64(), SharedValues: o.shared})
		if err != nil {
			return shareResult{}, err
		}
		res.addSample(start, ev)
	}
	res.summarize()
	return res, nil
}

func parseSharePolicies(list string) ([]sharing.Policy, error) {
	var out []sharing.Policy
	var seen []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" || slices.Contains(seen, name) {
			continue
		}
		p, err := sharing.ByName(name)
		if err != nil {
			return nil, fmt.Errorf("--policies: unknown policy %q (known: %s)", name, strings.Join(sharing.Names(), ", "))
		}
		seen = append(seen, name)
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--policies: name at least one of %s", strings.Join(sharing.Names(), ", "))
	}
	return out, nil
}

func checkShareOptions(o shareOptions) error {
	switch {
	case o.orgs < 1 || o.orgs > 32:
		return errors.New("--orgs: must be between 1 and 32")
	case o.samples < 1 || o.samples > 1000:
		return errors.New("--samples: must be between 1 and 1,000")
	case !slices.Contains(shareScenarios, o.scenario):
		return fmt.Errorf("--scenario: unknown scenario %q (known: %s)", o.scenario, strings.Join(shareScenarios, ", "))
	case o.workload == "":
		return errors.New("--workload: give an SWF log")
	case strings.ToLower(filepath.Ext(o.workload)) != ".swf":
		return fmt.Errorf("--workload: %s: the name must end in .swf", o.workload)
	}
	return nil
}

// shareLog is an SWF log in hours: jobs (arrival hour, hours, processors, user), the
// users in order, and the log's processors.
type shareLog struct {
	jobs        []scheduler.Job
	users       []string
	procs       int64
	first, last scheduler.Slot
}

func readShareLog(cmd *cobra.Command, path string) (shareLog, error) {
	in, err := openIn(cmd, path)
	if err != nil {
		return shareLog{}, fmt.Errorf("--workload: %w", err)
	}
	defer in.Close()
	data, err := io.ReadAll(in)
	if err != nil {
		return shareLog{}, fmt.Errorf("--workload: %w", err)
	}
	var l shareLog
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() && l.procs == 0 {
		if m := maxProcs.FindStringSubmatch(sc.Text()); m != nil {
			l.procs, _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	if l.procs <= 0 {
		return shareLog{}, fmt.Errorf("--workload: %s: the log has no MaxProcs header", path)
	}
	model := scheduler.DefaultSWFModel
	model.SlotSeconds = 3600
	if l.jobs, err = scheduler.ReadSWF(strings.NewReader(string(data)), model); err != nil {
		return shareLog{}, fmt.Errorf("--workload: %s: %w", path, err)
	}
	if len(l.jobs) == 0 {
		return shareLog{}, fmt.Errorf("--workload: %s: the log has no job with a run time and processors", path)
	}
	users := map[string]bool{}
	l.first, l.last = l.jobs[0].Arrival, l.jobs[0].Arrival
	for _, j := range l.jobs {
		users[j.Team] = true
		l.first, l.last = min(l.first, j.Arrival), max(l.last, j.Arrival)
	}
	if l.last-l.first < shareWindowHours {
		return shareLog{}, fmt.Errorf("--workload: %s: the log spans less than %d hours", path, shareWindowHours)
	}
	for u := range users {
		l.users = append(l.users, u)
	}
	slices.Sort(l.users)
	return l, nil
}

// shareOrgs gives n organizations the log's processors: equal shares (the remainder
// to the first ones), or shares proportional to 1/rank (Zipf), at least one each.
func shareOrgs(scenario string, n int, procs int64) ([]sharing.Org, error) {
	if procs < int64(n) {
		return nil, fmt.Errorf("--orgs: %d organizations, but the log has only %d processors", n, procs)
	}
	weights := make([]float64, n)
	for i := range weights {
		weights[i] = 1
		if scenario == "zipf" {
			weights[i] = 1 / float64(i+1)
		}
	}
	counts := largestRemainder(weights, procs-int64(n))
	orgs := make([]sharing.Org, n)
	for i := range orgs {
		orgs[i] = sharing.Org{Name: fmt.Sprintf("org%d", i+1), Processors: 1 + counts[i]}
	}
	return orgs, nil
}

// largestRemainder splits total whole units in proportion to weights.
func largestRemainder(weights []float64, total int64) []int64 {
	sum := 0.0
	for _, w := range weights {
		sum += w
	}
	out := make([]int64, len(weights))
	rem := make([]float64, len(weights))
	given := int64(0)
	for i, w := range weights {
		x := float64(total) * w / sum
		out[i] = int64(math.Floor(x))
		rem[i] = x - float64(out[i])
		given += out[i]
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case rem[a] > rem[b]:
			return -1
		case rem[a] < rem[b]:
			return 1
		}
		return 0
	})
	for k := 0; given < total; k++ {
		out[order[k%len(order)]]++
		given++
	}
	return out
}

// sample draws a window and a mapping of users to organizations (and, for the
// background scenario, which users are background load), and returns the window's
// start (seconds) and its jobs split into one-processor, one-hour tasks.
func (l shareLog) sample(rng *rand.Rand, orgs []sharing.Org, background bool) (int64, []sharing.SimJob) {
	start := l.first + scheduler.Slot(rng.Int64N(int64(l.last-l.first-shareWindowHours)+1))
	orgOf := map[string]string{}
	local := map[string]bool{}
	for _, u := range l.users {
		orgOf[u] = orgs[rng.IntN(len(orgs))].Name
	}
	if background {
		for _, u := range l.users {
			local[u] = rng.Float64() < shareBackgroundShare
		}
	}
	var jobs []sharing.SimJob
	for _, j := range l.jobs {
		if j.Arrival < start || j.Arrival >= start+shareWindowHours {
			continue
		}
		jobs = append(jobs, sharing.SimJob{ID: j.ID, Team: orgOf[j.Team], Release: float64(j.Arrival - start),
			Tasks: int(j.Width) * int(j.Duration), TaskHours: 1, Background: local[j.Team]})
	}
	return int64(start) * 3600, jobs
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func (r *shareResult) addSample(start int64, ev sharing.Evaluation) {
	s := shareSample{Start: start, CoalitionValue: round3(ev.CoalitionValue), Shapley: map[string]float64{}, Wait: map[string]map[string]float64{},
		PolicyCoalitionValue: map[string]float64{}, PolicyShapley: map[string]map[string]float64{}}
	for i, o := range r.orgs {
		s.Shapley[o.Name] = round3(ev.Shapley[i])
	}
	for p, name := range r.names {
		s.Wait[name] = map[string]float64{}
		s.PolicyShapley[name] = map[string]float64{}
		s.PolicyCoalitionValue[name] = round3(ev.PolicyCoalitionValue[p])
		for i, o := range r.orgs {
			s.Wait[name][o.Name] = round3(ev.Wait[p][i])
			s.PolicyShapley[name][o.Name] = round3(ev.PolicyShapley[p][i])
		}
	}
	r.Samples = append(r.Samples, s)
	r.unfair = append(r.unfair, ev.Unfairness)
	r.exact = ev.Exact
	r.sims += ev.Coalitions * len(r.names)
}

func (r *shareResult) summarize() {
	score, pairwise := sharing.Scores(r.unfair, r.tiesHalf)
	r.pairwise = pairwise
	for p, name := range r.names {
		sum := 0.0
		for _, u := range r.unfair {
			sum += u[p]
		}
		r.Policies = append(r.Policies, sharePolicy{Name: name, Score: round3(score[p]), MeanUnfairness: round3(sum / float64(len(r.unfair)))})
	}
}

func printShareTable(w io.Writer, r shareResult, o shareOptions) {
	procs := make([]string, len(r.orgs))
	for i, org := range r.orgs {
		procs[i] = strconv.FormatInt(org.Processors, 10)
	}
	how := "exact"
	if !r.exact {
		how = "sampled"
	}
	fmt.Fprintf(w, "%s\nscenario %s: %d organizations with %s processors; %d samples of %d hours; seed %d\n",
		r.title, o.scenario, len(r.orgs), strings.Join(procs, "/"), len(r.Samples), shareWindowHours, o.seed)
	values := "each policy's own coalition values (the paper's)"
	if o.shared {
		values = "shared coalition values (the smallest total wait of any policy)"
	}
	fmt.Fprintf(w, "Shapley values %s, from %s; %d simulations\n\n", how, values, r.sims)
	tw := newTable(w)
	fmt.Fprintln(tw, "policy\tscore\tmean unfairness (task-hours)\t")
	for _, p := range r.Policies {
		fmt.Fprintf(tw, "%s\t%g\t%.1f\t\n", p.Name, p.Score, p.MeanUnfairness)
	}
	tw.Flush()
	fmt.Fprintf(w, "\npoints of the row's policy against the column's: samples in which it was fairer, of %d (%s):\n", len(r.Samples), tieWords(r.tiesHalf))
	tw = newTable(w)
	fmt.Fprintf(tw, "\t%s\t\n", strings.Join(r.names, "\t"))
	for a, name := range r.names {
		fmt.Fprintf(tw, "%s\t", name)
		for b := range r.names {
			if a == b {
				fmt.Fprint(tw, "-\t")
			} else {
				fmt.Fprintf(tw, "%g\t", r.pairwise[a][b])
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// report is what the HTML report shows of the result.
func (r shareResult) report(o shareOptions) reports.Share {
	s := reports.Share{Title: r.title, Scenario: o.scenario, Seed: o.seed, Exact: r.exact, Simulations: r.sims, Ties: tieWords(r.tiesHalf),
		Orgs: r.orgs, Unfairness: r.unfair, Pairwise: r.pairwise}
	for _, p := range r.Policies {
		s.Policies = append(s.Policies, reports.SharePolicy(p))
	}
	for _, sample := range r.Samples {
		s.Samples = append(s.Samples, reports.ShareSample{Shapley: sample.Shapley, Wait: sample.Wait})
	}
	return s
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// tieWords says what a tie scores.
func tieWords(half bool) string {
	if half {
		return "a tie scores half a point to each"
	}
	return "a tie scores nothing"
}
