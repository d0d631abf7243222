package lab

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/sharing"
)

func openFile(path string) (io.ReadCloser, error) { return os.Open(path) }

// BenchmarkSimulate: `clearhouse simulate --generate mapreduce --jobs 2000 --seed 1
// --capacity 100` with econ and greedy, the upper bound included, per run; it reports
// the jobs replayed per second (each algorithm replays every job).
func BenchmarkSimulate(b *testing.B) {
	o := DefaultSimOptions()
	o.Generate, o.Jobs, o.Capacity, o.Algorithms = "mapreduce", 2000, 100, "econ,greedy"
	algos, err := o.Prepare()
	if err != nil {
		b.Fatal(err)
	}
	w, err := LoadWorkload(o, openFile)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Simulate(w, algos, o, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(w.Jobs)*len(algos))/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
}

// BenchmarkShareEvaluate: `share simulate` as the paper runs it, 20 samples, 5
// organizations, 5 policies (3,100 simulations), on the full HPC2N log
// docs/reproductions.md's tables come from (the log read once). Goal: under 10 s a run.
func BenchmarkShareEvaluate(b *testing.B) {
	o := ShareOptions{Workload: "testdata/hpc2n.swf", Orgs: 5, Samples: 20, Seed: 1, Scenario: "equal", Policies: strings.Join(sharing.Names(), ",")}
	policies, err := ParseSharePolicies(o.Policies)
	if err != nil {
		b.Fatal(err)
	}
	log, err := ReadShareLog(o.Workload, openFile)
	if err != nil {
		b.Fatal(err)
	}
	orgs, err := ShareOrgs(o.Scenario, o.Orgs, log.Procs)
	if err != nil {
		b.Fatal(err)
	}
	sims := 0
	for b.Loop() {
		res, err := ShareEvaluate(log, orgs, policies, o)
		if err != nil {
			b.Fatal(err)
		}
		sims = res.sims
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
	b.ReportMetric(float64(sims), "simulations/run")
}
