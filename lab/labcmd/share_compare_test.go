package labcmd

import (
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/lab"
)

// `share compare`: per scenario, one interval per policy over the seeds and one
// paired comparison per other policy against the baseline; the counts of seeds and
// samples add up, the intervals hold their means, and the same flags give the same
// output.
func TestShareCompareJSON(t *testing.T) {
	args := []string{"share", "compare", "--workload", headSWF, "--orgs", "3", "--samples", "2", "--seeds", "1,2,3",
		"--scenarios", "equal,zipf", "--policies", "direct-simpl,direct-rel,fairshare", "--json"}
	code, out, errOut := runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	var res struct {
		Scenarios []struct {
			Scenario string              `json:"scenario"`
			Seeds    []uint64            `json:"seeds"`
			Policies []lab.ComparePolicy `json:"policies"`
			Against  []lab.CompareTest   `json:"against"`
		} `json:"scenarios"`
	}
	decodeStrict(t, out, &res)
	if len(res.Scenarios) != 2 || res.Scenarios[1].Scenario != "zipf" || len(res.Scenarios[0].Seeds) != 3 {
		t.Fatalf("%+v", res)
	}
	for _, sc := range res.Scenarios {
		if len(sc.Policies) != 3 || len(sc.Against) != 2 || sc.Against[0].Name != "direct-simpl" || sc.Against[1].Name != "direct-rel" {
			t.Fatalf("%s: %+v", sc.Scenario, sc)
		}
		for _, p := range sc.Policies {
			if !(p.ScoreLow <= p.Score && p.Score <= p.ScoreHigh && p.UnfairnessLow <= p.Unfairness && p.Unfairness <= p.UnfairnessHigh) {
				t.Fatalf("%s: an interval without its mean: %+v", sc.Scenario, p)
			}
		}
		for _, a := range sc.Against {
			if a.SeedsAbove+a.SeedsBelow+a.SeedsTied != 3 || a.SamplesFairer+a.SamplesLessFair+a.SamplesTied != 6 ||
				a.ScoreSignP <= 0 || a.ScoreSignP > 1 || a.SamplesSignP <= 0 || a.SamplesSignP > 1 {
				t.Fatalf("%s: %+v", sc.Scenario, a)
			}
		}
	}
	if _, again, _ := runCLI(t, "", args...); again != out {
		t.Fatal("the same flags gave different output")
	}
	for _, c := range []struct{ flag, want string }{
		{"--seeds=1", "--seeds: give 2 to 1,000"},
		{"--seeds=3-1", "--seeds"},
		{"--baseline=orig", "--baseline"},
		{"--scenarios=equal,moon", "--scenario: unknown"},
		{"--level=1", "--level"},
	} {
		code, out, errOut := runCLI(t, "", "share", "compare", "--workload", headSWF, c.flag)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: code %d stdout %q stderr %q", c.flag, code, out, errOut)
		}
	}
}
