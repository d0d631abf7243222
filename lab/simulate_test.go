package lab

import (
	"reflect"
	"strings"
	"testing"
)

// The library without the command: Prepare, LoadWorkload and Simulate give what
// `simulate --json` prints, the same twice for the same seeds, and the progress is
// told each stage in order, never going back, ending at the last algorithm's end.
func TestSimulateAsALibrary(t *testing.T) {
	o := DefaultSimOptions()
	o.Generate, o.Jobs, o.Seed, o.Capacity, o.Algorithms = "mapreduce", 600, 4, 50, "econ, greedy,econ"
	algos, err := o.Prepare()
	if err != nil || strings.Join(algos, ",") != "econ,greedy" {
		t.Fatalf("Prepare: %v %v; want econ,greedy (each once)", algos, err)
	}
	w, err := LoadWorkload(o, nil)
	if err != nil || len(w.Jobs) != 600 || w.Capacity != 50 || !strings.Contains(w.Title, "600 jobs") {
		t.Fatalf("LoadWorkload: %d jobs, %d units, %q, %v", len(w.Jobs), w.Capacity, w.Title, err)
	}
	var stages []string
	last, total := -1, 0
	res, err := Simulate(w, algos, o, func(stage string, done, n int) {
		if len(stages) == 0 || stages[len(stages)-1] != stage {
			stages = append(stages, stage)
		}
		if done < last || done > n {
			t.Fatalf("progress %d after %d, of %d", done, last, n)
		}
		last, total = done, n
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(stages, ",") != "upper bound,econ,greedy" || total != 3000 || last < 2900 {
		t.Errorf("progress: stages %v, last %d of %d", stages, last, total)
	}
	if res.Workload.Jobs != 600 || len(res.Algorithms) != 2 || res.UpperBoundValue <= 0 || res.Cloud != nil {
		t.Fatalf("%+v", res)
	}
	for _, a := range res.Algorithms {
		if a.AcceptedValue > res.UpperBoundValue || a.AcceptedJobs == 0 || a.UpperBoundShare <= 0 || a.UpperBoundShare > 1 {
			t.Errorf("%+v against the upper bound %v", a, res.UpperBoundValue)
		}
	}
	again, err := Simulate(w, algos, o, nil)
	if err != nil || !reflect.DeepEqual(again.Algorithms, res.Algorithms) || again.UpperBoundValue != res.UpperBoundValue {
		t.Errorf("the same run twice differs: %v", err)
	}
	if r := res.Report(); len(r.Algorithms) != 2 || len(r.Algorithms[0].Series) != res.Workload.Slots {
		t.Errorf("report: %d algorithms, %d points of %d slots", len(r.Algorithms), len(r.Algorithms[0].Series), res.Workload.Slots)
	}
	o.Supply = "weekly"
	if _, err := o.Prepare(); err == nil || !strings.Contains(err.Error(), "--supply") {
		t.Errorf("an unknown supply: %v", err)
	}
}

// ShareEvaluate and Compare as a library: the seed decides the windows and the
// mapping, so the same seed gives the same result and Compare's first seed is
// ShareEvaluate's run with it.
func TestShareExperimentAsALibrary(t *testing.T) {
	o := ShareOptions{Workload: "testdata/hpc2n-head.swf", Orgs: 3, Samples: 2, Seed: 7, Scenario: "zipf", Policies: "fairshare,round-robin"}
	if err := CheckShareOptions(o); err != nil {
		t.Fatal(err)
	}
	policies, err := ParseSharePolicies(o.Policies)
	if err != nil {
		t.Fatal(err)
	}
	log, err := ReadShareLog(o.Workload, openFile)
	if err != nil {
		t.Fatal(err)
	}
	orgs, err := ShareOrgs(o.Scenario, o.Orgs, log.Procs)
	if err != nil || len(orgs) != 3 || orgs[0].Processors <= orgs[2].Processors || orgs[0].Processors+orgs[1].Processors+orgs[2].Processors != log.Procs {
		t.Fatalf("zipf organizations of %d processors: %+v %v", log.Procs, orgs, err)
	}
	a, err := ShareEvaluate(log, orgs, policies, o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ShareEvaluate(log, orgs, policies, o)
	if !reflect.DeepEqual(a, b) || len(a.Samples) != 2 || len(a.Policies) != 2 {
		t.Fatalf("two runs of seed 7: %+v, %+v", a.Policies, b.Policies)
	}
	c, err := Compare(log, orgs, policies, []uint64{7, 8}, 0, CompareOptions{ShareOptions: o, Level: 0.9})
	if err != nil || len(c.Policies) != 2 || len(c.Against) != 1 || c.Against[0].Name != "round-robin" {
		t.Fatalf("Compare: %+v %v", c, err)
	}
	if got := c.Against[0].SamplesFairer + c.Against[0].SamplesLessFair + c.Against[0].SamplesTied; got != 4 {
		t.Errorf("Compare paired %d samples, want 2 seeds x 2", got)
	}
}
