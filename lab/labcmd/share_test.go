package labcmd

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/sharing"
)

const headSWF = "../testdata/hpc2n-head.swf"

type shareJSON struct {
	Policies []struct {
		Name           string  `json:"name"`
		Score          float64 `json:"score"`
		MeanUnfairness float64 `json:"mean_unfairness"`
	} `json:"policies"`
	Samples []struct {
		Start          int64                         `json:"start"`
		CoalitionValue float64                       `json:"coalition_value"`
		Shapley        map[string]float64            `json:"shapley"`
		Wait           map[string]map[string]float64 `json:"wait"`
		PolicyValue    map[string]float64            `json:"policy_coalition_value"`
		PolicyShapley  map[string]map[string]float64 `json:"policy_shapley"`
	} `json:"samples"`
}

// decodeStrict decodes exactly one JSON object with no field the struct lacks.
func decodeStrict(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || dec.More() {
		t.Fatalf("standard output is not one JSON object of the documented shape: %v\n%s", err, out)
	}
}

func TestShareSimulateJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "", "share", "simulate", "--workload", headSWF, "--orgs", "3", "--samples", "4",
		"--seed", "2", "--scenario", "zipf", "--json")
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	var res shareJSON
	decodeStrict(t, out, &res)
	var names []string
	scores := 0.0
	for _, p := range res.Policies {
		names = append(names, p.Name)
		scores += p.Score
		if p.Score < 0 || p.Score > 4*4 || p.Score != math.Trunc(p.Score) || p.MeanUnfairness < 0 {
			t.Fatalf("%+v", p)
		}
	}
	if !slices.Equal(names, sharing.Names()) || len(res.Samples) != 4 {
		t.Fatalf("policies %v, %d samples", names, len(res.Samples))
	}
	// The paper's points: one per sample and pair at most, a tie scoring nothing.
	if scores > 4*5*4/2 {
		t.Fatalf("points sum to %v, above 4 samples x 10 pairs", scores)
	}
	unfair := make([]float64, len(names))
	for _, s := range res.Samples {
		if len(s.Shapley) != 3 || s.Start%3600 != 0 {
			t.Fatalf("%+v", s)
		}
		sum := 0.0
		for _, x := range s.Shapley {
			sum += x
		}
		if math.Abs(sum-s.CoalitionValue) > 0.01 {
			t.Fatalf("Shapley values sum to %v, the coalition's value is %v", sum, s.CoalitionValue)
		}
		for p, name := range names {
			total, sq := 0.0, 0.0
			for org, w := range s.Wait[name] {
				total += w
				d := w - s.PolicyShapley[name][org]
				sq += d * d
			}
			own := 0.0
			for _, x := range s.PolicyShapley[name] {
				own += x
			}
			if math.Abs(own-s.PolicyValue[name]) > 0.01 || math.Abs(s.PolicyValue[name]-total) > 0.01 {
				t.Fatalf("%s: its own Shapley values sum to %v, its coalition value %v, its waits %v", name, own, s.PolicyValue[name], total)
			}
			if len(s.Wait[name]) != 3 || math.Abs(total-s.CoalitionValue) > 0.01 {
				t.Fatalf("%s: waits %v total %v, coalition value %v (no background load: every policy is work-conserving)", name, s.Wait[name], total, s.CoalitionValue)
			}
			unfair[p] += math.Sqrt(sq) / float64(len(res.Samples))
		}
	}
	for p := range names {
		if math.Abs(unfair[p]-res.Policies[p].MeanUnfairness) > 0.01 {
			t.Fatalf("%s: mean unfairness %v, recomputed from the samples %v", names[p], res.Policies[p].MeanUnfairness, unfair[p])
		}
	}
}

func TestShareSimulateIsReproducible(t *testing.T) {
	args := []string{"share", "simulate", "--workload", headSWF, "--orgs", "4", "--samples", "3", "--scenario", "background", "--json"}
	_, first, _ := runCLI(t, "", append(args, "--seed", "7")...)
	_, second, _ := runCLI(t, "", append(args, "--seed", "7")...)
	_, other, _ := runCLI(t, "", append(args, "--seed", "8")...)
	if first == "" || first != second {
		t.Fatal("the same seed gave different output")
	}
	if first == other {
		t.Fatal("another seed gave the same output")
	}
}

func TestShareSimulateTableAndReport(t *testing.T) {
	report := filepath.Join(t.TempDir(), "share.html")
	code, out, errOut := runCLI(t, "", "share", "simulate", "--workload", headSWF, "--orgs", "3", "--samples", "3",
		"--policies", "direct-orig,fairshare", "--report", report)
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	for _, want := range []string{"hpc2n-head.swf", "scenario equal", "3 organizations", "score", "mean unfairness",
		"direct-orig", "fairshare", "against the column's", "a tie scores nothing", "report: " + report} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "round-robin") {
		t.Error("a policy not asked for is listed")
	}
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	if strings.Count(html, `<svg class="chart"`) != 2 || strings.Contains(html, "<script") || strings.Contains(html, "http://") && !strings.Contains(html, "http://www.w3.org") {
		t.Fatal("the report is not two inline SVG charts and nothing external")
	}
	for _, want := range []string{"Unfairness per sample and policy", "against its Shapley value", `data-testid="share-policies"`, `data-testid="share-pairwise"`, "<rect"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

func TestShareSimulateRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	job := func(id, submit string) string {
		return id + " " + submit + " 0 3600 4 -1 -1 4 3600 -1 1 1 1 -1 -1 1 -1 -1\n"
	}
	short := write("short.swf", "; MaxProcs: 8\n"+job("1", "0")+job("2", "3600"))
	noProcs := write("noprocs.swf", job("1", "0")+job("2", "200000"))
	broken := write("broken.swf", "; MaxProcs: 8\n"+job("1", "0")+"2 3 4\n")
	small := write("small.swf", "; MaxProcs: 8\n"+job("1", "0")+job("2", "200000"))
	report := filepath.Join(dir, "r.html")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--orgs", "0"}, "--orgs"},
		{[]string{"--orgs", "33"}, "--orgs"},
		{[]string{"--samples", "0"}, "--samples"},
		{[]string{"--scenario", "pareto"}, `--scenario: unknown scenario "pareto"`},
		{[]string{"--policies", "direct-orig,lottery"}, `--policies: unknown policy "lottery"`},
		{[]string{"--policies", ","}, "--policies"},
		{[]string{"--workload", ""}, "--workload: give an SWF log"},
		{[]string{"--workload", filepath.Join(dir, "x.csv")}, "must end in .swf"},
		{[]string{"--workload", filepath.Join(dir, "missing.swf")}, "--workload"},
		{[]string{"--workload", short}, "spans less than 24 hours"},
		{[]string{"--workload", noProcs}, "no MaxProcs header"},
		{[]string{"--workload", broken}, "line 3"},
		{[]string{"--workload", small, "--orgs", "9"}, "--orgs: 9 organizations, but the log has only 8 processors"},
	} {
		args := append([]string{"share", "simulate", "--workload", headSWF, "--report", report}, tc.args...)
		code, out, errOut := runCLI(t, "", args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: code %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if _, err := os.Stat(report); !os.IsNotExist(err) {
		t.Fatal("refused input left a report")
	}
}

// `share simulate` as the paper runs it: 20 samples, 5 organizations, 5 policies
// (3,100 simulations), on the HPC2N log docs/reproductions.md's tables come from. Goal: under 10 s.
func BenchmarkShareSimulate(b *testing.B) {
	for b.Loop() {
		var out, errb bytes.Buffer
		code := run(b.Context(), []string{"share", "simulate", "--workload", "../testdata/hpc2n.swf", "--orgs", "5", "--samples", "20", "--seed", "1", "--json"},
			strings.NewReader(""), &out, &errb)
		if code != 0 {
			b.Fatal(errb.String())
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
}
