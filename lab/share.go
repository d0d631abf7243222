package lab

import (
	"bytes"
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
)

// ShareScenarios are the paper's three ways of giving organizations processors.
var ShareScenarios = []string{"equal", "zipf", "background"}

// shareBackgroundShare is the share of users whose jobs are local background load in
// the background scenario.
const shareBackgroundShare = 0.3

// shareWindowHours is the length of a sample.
const shareWindowHours = 24

// ShareOptions are what CloudShare's experiment is run with: the flags of `clearhouse
// share simulate`, the same names.
type ShareOptions struct {
	Workload string // the SWF log's name
	Orgs     int
	Samples  int
	Seed     uint64
	Scenario string // of ShareScenarios
	Policies string // comma-separated, of sharing.Names
	// Shared: one set of coalition values for all policies; TiesHalf: a tie
	// scores half a point to each (both off: CloudShare's method).
	Shared   bool
	TiesHalf bool
}

// ShareResult is what ShareEvaluate found, as `share simulate --json` prints it;
// WriteShareTable prints it as a table, Report for the HTML report.
type ShareResult struct {
	Policies []SharePolicy `json:"policies"`
	Samples  []ShareSample `json:"samples"`
	title    string
	orgs     []sharing.Org
	names    []string
	unfair   [][]float64 // [sample][policy]
	pairwise [][]float64 // points of each policy against each other one
	tiesHalf bool
	exact    bool
	sims     int
}

// SharePolicy is one policy's score over the samples.
type SharePolicy struct {
	Name           string  `json:"name"`
	Score          float64 `json:"score"`
	MeanUnfairness float64 `json:"mean_unfairness"`
}

// ShareSample is one window of the log: the Shapley values and each policy's waits.
type ShareSample struct {
	Start          int64                         `json:"start"` // seconds, on the log's clock
	CoalitionValue float64                       `json:"coalition_value"`
	Shapley        map[string]float64            `json:"shapley"`
	Wait           map[string]map[string]float64 `json:"wait"`
	// PolicyCoalitionValue and PolicyShapley are each policy's own game (the
	// paper's): its grand coalition's total wait and its Shapley values.
	PolicyCoalitionValue map[string]float64            `json:"policy_coalition_value"`
	PolicyShapley        map[string]map[string]float64 `json:"policy_shapley"`
}

// ShareEvaluate runs CloudShare's experiment once: o.Samples windows of the log drawn
// with o.Seed, every policy on every coalition of orgs, scored.
func ShareEvaluate(log ShareLog, orgs []sharing.Org, policies []sharing.Policy, o ShareOptions) (ShareResult, error) {
	res := ShareResult{orgs: orgs, tiesHalf: o.TiesHalf, title: fmt.Sprintf("%s: %d jobs, %d processors", filepath.Base(o.Workload), len(log.jobs), log.Procs)}
	for _, p := range policies {
		res.names = append(res.names, p.Name())
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x5ba2e))
	for range o.Samples {
		start, jobs := log.sample(rng, orgs, o.Scenario == "background")
		ev, err := sharing.Evaluate(sharing.Experiment{Orgs: orgs, Jobs: jobs, Policies: policies, Seed: rng.Uint64(), SharedValues: o.Shared})
		if err != nil {
			return ShareResult{}, err
		}
		res.addSample(start, ev)
	}
	res.summarize()
	return res, nil
}

// ParseSharePolicies reads a comma-separated list of sharing policies, each once.
func ParseSharePolicies(list string) ([]sharing.Policy, error) {
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

// CheckShareOptions refuses options out of range, before the log is read.
func CheckShareOptions(o ShareOptions) error {
	switch {
	case o.Orgs < 1 || o.Orgs > 32:
		return errors.New("--orgs: must be between 1 and 32")
	case o.Samples < 1 || o.Samples > 1000:
		return errors.New("--samples: must be between 1 and 1,000")
	case !slices.Contains(ShareScenarios, o.Scenario):
		return fmt.Errorf("--scenario: unknown scenario %q (known: %s)", o.Scenario, strings.Join(ShareScenarios, ", "))
	case o.Workload == "":
		return errors.New("--workload: give an SWF log")
	case strings.ToLower(filepath.Ext(o.Workload)) != ".swf":
		return fmt.Errorf("--workload: %s: the name must end in .swf", o.Workload)
	}
	return nil
}

// ShareLog is an SWF log in hours: jobs (arrival hour, hours, processors, user), the
// users in order, and the log's processors.
type ShareLog struct {
	jobs        []scheduler.Job
	users       []string
	Procs       int64
	first, last scheduler.Slot
}

// ReadShareLog reads the SWF log at path (opened with open) in hours: it needs a
// MaxProcs header, a job with a run time and processors, and a day.
func ReadShareLog(path string, open func(string) (io.ReadCloser, error)) (ShareLog, error) {
	in, err := open(path)
	if err != nil {
		return ShareLog{}, fmt.Errorf("--workload: %w", err)
	}
	defer in.Close()
	data, err := io.ReadAll(in)
	if err != nil {
		return ShareLog{}, fmt.Errorf("--workload: %w", err)
	}
	var l ShareLog
	if l.Procs = SWFMaxProcs(data); l.Procs <= 0 {
		return ShareLog{}, fmt.Errorf("--workload: %s: the log has no MaxProcs header", path)
	}
	model := scheduler.DefaultSWFModel
	model.SlotSeconds = 3600
	if l.jobs, err = scheduler.ReadSWF(bytes.NewReader(data), model); err != nil {
		return ShareLog{}, fmt.Errorf("--workload: %s: %w", path, err)
	}
	if len(l.jobs) == 0 {
		return ShareLog{}, fmt.Errorf("--workload: %s: the log has no job with a run time and processors", path)
	}
	users := map[string]bool{}
	l.first, l.last = l.jobs[0].Arrival, l.jobs[0].Arrival
	for _, j := range l.jobs {
		users[j.Team] = true
		l.first, l.last = min(l.first, j.Arrival), max(l.last, j.Arrival)
	}
	if l.last-l.first < shareWindowHours {
		return ShareLog{}, fmt.Errorf("--workload: %s: the log spans less than %d hours", path, shareWindowHours)
	}
	for u := range users {
		l.users = append(l.users, u)
	}
	slices.Sort(l.users)
	return l, nil
}

// ShareOrgs gives n organizations the log's processors: equal shares (the remainder
// to the first ones), or shares proportional to 1/rank (Zipf), at least one each.
func ShareOrgs(scenario string, n int, procs int64) ([]sharing.Org, error) {
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
func (l ShareLog) sample(rng *rand.Rand, orgs []sharing.Org, background bool) (int64, []sharing.SimJob) {
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

func (r *ShareResult) addSample(start int64, ev sharing.Evaluation) {
	s := ShareSample{Start: start, CoalitionValue: round3(ev.CoalitionValue), Shapley: map[string]float64{}, Wait: map[string]map[string]float64{},
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

func (r *ShareResult) summarize() {
	score, pairwise := sharing.Scores(r.unfair, r.tiesHalf)
	r.pairwise = pairwise
	for p, name := range r.names {
		sum := 0.0
		for _, u := range r.unfair {
			sum += u[p]
		}
		r.Policies = append(r.Policies, SharePolicy{Name: name, Score: round3(score[p]), MeanUnfairness: round3(sum / float64(len(r.unfair)))})
	}
}

// WriteShareTable prints the result as `share simulate` does.
func WriteShareTable(w io.Writer, r ShareResult, o ShareOptions) {
	procs := make([]string, len(r.orgs))
	for i, org := range r.orgs {
		procs[i] = strconv.FormatInt(org.Processors, 10)
	}
	how := "exact"
	if !r.exact {
		how = "sampled"
	}
	fmt.Fprintf(w, "%s\nscenario %s: %d organizations with %s processors; %d samples of %d hours; seed %d\n",
		r.title, o.Scenario, len(r.orgs), strings.Join(procs, "/"), len(r.Samples), shareWindowHours, o.Seed)
	values := "each policy's own coalition values (the paper's)"
	if o.Shared {
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

// Report is what the HTML report shows of the result.
func (r ShareResult) Report(o ShareOptions) reports.Share {
	s := reports.Share{Title: r.title, Scenario: o.Scenario, Seed: o.Seed, Exact: r.exact, Simulations: r.sims, Ties: tieWords(r.tiesHalf),
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
