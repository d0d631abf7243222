package scheduler

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/internal/racetest"
)

// skipLongSimulation skips a simulation of thousands of jobs under -short (each
// takes several seconds).
func skipLongSimulation(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a simulation of thousands of jobs")
	}
	racetest.SkipUnderRace(t, "the simulator runs on one goroutine")
}

// The bar: on the MapReduce-like mix Basic-Econ accepts at least five
// times the value greedy first-fit accepts, and no algorithm beats the offline
// fractional upper bound.
func TestEconAcceptsFiveTimesGreedysValueOnTheMapReduceMix(t *testing.T) {
	skipLongSimulation(t)
	for _, seed := range []uint64{1, 2} {
		jobs := GenerateMapReduce(10000, seed, 100)
		bound := UpperBound(jobs, 100)
		greedy, err := Simulate(jobs, 100, Greedy{UnitPrice: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		econ, err := Simulate(jobs, 100, BasicEcon{Predictor: NewSeasonal(300)})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: greedy %.3f of requested value, econ %.3f (%.2fx); econ %.3f of the upper bound",
			seed, greedy.ValueShare, econ.ValueShare, econ.AcceptedValue/greedy.AcceptedValue, econ.AcceptedValue/bound.Value)
		if econ.AcceptedValue < 5*greedy.AcceptedValue {
			t.Errorf("seed %d: econ accepted $%.0f, less than five times greedy's $%.0f", seed, econ.AcceptedValue, greedy.AcceptedValue)
		}
		for _, o := range []Outcome{greedy, econ} {
			n := 0
			for _, c := range o.ByClass {
				n += c[1]
				if c[0] > c[1] {
					t.Fatalf("%s accepted more of a class than it got: %v", o.Name, c)
				}
			}
			if n != len(jobs) || o.Utilization > 1 || o.AcceptedJobs > len(jobs) || o.AcceptedValue > bound.Value+1e-6 {
				t.Fatalf("%s: %d jobs counted, utilization %v, accepted $%v against a bound of $%v",
					o.Name, n, o.Utilization, o.AcceptedValue, bound.Value)
			}
		}
		if low := econ.ByClass["large-backfill"]; low[0]*10 > low[1] {
			t.Errorf("econ took %d of %d large low-value jobs", low[0], low[1])
		}
	}
}

func TestFractionalPredictorAlsoBeatsGreedy(t *testing.T) {
	skipLongSimulation(t)
	jobs := GenerateMapReduce(6000, 5, 100)
	greedy, _ := Simulate(jobs, 100, Greedy{UnitPrice: 0.5})
	frac, err := Simulate(jobs, 100, BasicEcon{Predictor: NewFractional(300, map[string]int64{SimPool: 100})})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("greedy %.3f, econ with the fractional predictor %.3f", greedy.ValueShare, frac.ValueShare)
	if frac.AcceptedValue < 3*greedy.AcceptedValue {
		t.Fatalf("fractional econ accepted $%.0f, greedy $%.0f", frac.AcceptedValue, greedy.AcceptedValue)
	}
}

func TestGenerateMapReduceIsSeededAndValid(t *testing.T) {
	a, b := GenerateMapReduce(500, 3, 100), GenerateMapReduce(500, 3, 100)
	classes := map[string]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("one seed gave two workloads")
		}
		if err := a[i].validate(); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		classes[a[i].Class] = true
	}
	if len(classes) != 6 {
		t.Fatalf("%d classes, want 6", len(classes))
	}
}

func TestReadCSV(t *testing.T) {
	jobs, err := ReadCSV(strings.NewReader("id,team,arrival,deadline,duration,width,value\nj1,search,0,48,6,20,1200.0\nj2,ads,5,9,4,1,3\n"))
	if err != nil || len(jobs) != 2 || jobs[0].Width != 20 || jobs[1].Submit != 5 {
		t.Fatalf("%+v %v", jobs, err)
	}
	for want, in := range map[string]string{
		"line 1":        "id,team\n",
		"line 3":        "id,team,arrival,deadline,duration,width,value\nj1,s,0,48,6,20,1\nj2,s,5,4,1,1,1\n",
		"line 2: value": "id,team,arrival,deadline,duration,width,value\nj1,s,0,48,6,20,lots\n",
	} {
		if _, err := ReadCSV(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v", want, err)
		}
	}
}

func TestReadSWF(t *testing.T) {
	log := "; comment\n    1        0 308434  31405   30  31405    -1   30  37980    -1  1   1   1  -1 -1  1 -1 -1\n" +
		"    2        8 308426     -1   30  31039    -1   30  37980    -1  0   1   1  -1 -1  1 -1 -1\n"
	jobs, err := ReadSWF(strings.NewReader(log), DefaultSWFModel)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("%+v %v", jobs, err)
	}
	j := jobs[0]
	if j.Width != 30 || j.Duration != 105 || j.Team != "user1" || j.Deadline < j.Arrival+j.Duration || j.Value <= 0 {
		t.Fatalf("%+v", j)
	}
	if _, err := ReadSWF(strings.NewReader("1 2 3\n"), DefaultSWFModel); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("short line: %v", err)
	}
	// Processors are rounded up as run time is: half a processor is one unit, never a
	// job of width 0 (lab's FuzzSWFWorkload found it).
	half := "1 0 0 600 0.5 -1 -1 -1 -1 -1 1 7 -1 -1 -1 -1 -1 -1\n"
	if jobs, err := ReadSWF(strings.NewReader(half), DefaultSWFModel); err != nil || len(jobs) != 1 || jobs[0].Width != 1 || jobs[0].validate() != nil {
		t.Fatalf("half a processor: %+v %v", jobs, err)
	}
}

func FuzzReadWorkloads(f *testing.F) {
	f.Add([]byte("id,team,arrival,deadline,duration,width,value\nj1,search,0,48,6,20,1200.0\n"))
	f.Add([]byte("    1        0 308434  31405   30  31405    -1   30  37980    -1  1   1   1  -1 -1  1 -1 -1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if jobs, err := ReadCSV(bytes.NewReader(data)); err == nil {
			for _, j := range jobs {
				if err := j.validate(); err != nil {
					t.Fatalf("ReadCSV returned an invalid job: %v", err)
				}
			}
		}
		if jobs, err := ReadSWF(bytes.NewReader(data), DefaultSWFModel); err == nil {
			for _, j := range jobs {
				if err := j.validate(); err != nil {
					t.Fatalf("ReadSWF returned an invalid job %+v: %v", j, err)
				}
			}
		}
	})
}

// A seeded cloud that loses capacity and fails tasks: some accepted jobs are
// late, the same seed gives the same outcome, and the simulated cluster never
// runs more than the cloud has (SimulateWith fails if it does).
func TestSimulatedCloudWithLossesAndFailures(t *testing.T) {
	jobs := GenerateMapReduce(2000, 3, 100)
	cloud := Cloud{Seed: 5, LossesPerDay: 3, LossShare: 0.5, LossSlots: 24, FailureShare: 0.05}
	run := func() Outcome {
		out, err := SimulateWith(jobs, BasicEcon{Predictor: NewSeasonal(300)}, SimConfig{Capacity: 100, Cloud: cloud})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := run(), run()
	if a.LateJobs != b.LateJobs || a.AcceptedValue != b.AcceptedValue || a.AtRisk != b.AtRisk {
		t.Fatalf("one seed, two outcomes: %d/%d late, %v/%v accepted", a.LateJobs, b.LateJobs, a.AcceptedValue, b.AcceptedValue)
	}
	if a.AtRisk == 0 || a.Failed == 0 || a.LateJobs < a.Failed || a.LateJobs > a.AcceptedJobs || a.LateShare <= 0 || a.LateShare >= 0.5 {
		t.Fatalf("late %d (%.3f) of %d accepted: %d at risk, %d failed", a.LateJobs, a.LateShare, a.AcceptedJobs, a.AtRisk, a.Failed)
	}
	if a.LostValue[LostNotHonoured] <= 0 || a.LostValue[LostNoRoom]+a.LostValue[LostPricedOut] <= 0 {
		t.Fatalf("lost value %v", a.LostValue)
	}
	calm, _ := Simulate(jobs, 100, BasicEcon{Predictor: NewSeasonal(300)})
	if calm.LateJobs != 0 || calm.AtRisk != 0 || calm.AcceptedValue <= a.AcceptedValue*0.9 {
		t.Fatalf("a calm cloud: %d late, %d at risk, accepted %v against %v", calm.LateJobs, calm.AtRisk, calm.AcceptedValue, a.AcceptedValue)
	}
}

// Jobs that finish early let waiting reservations start early when the
// cluster starts what the engine offers as "may start now".
func TestSimulatedClusterStartsEarly(t *testing.T) {
	jobs := GenerateMapReduce(2000, 4, 100)
	cfg := SimConfig{Capacity: 100, Cloud: Cloud{Seed: 2, FinishEarlyShare: 0.5}}
	lazy, err := SimulateWith(jobs, Greedy{UnitPrice: 0.5}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.StartEarly = true
	eager, err := SimulateWith(jobs, Greedy{UnitPrice: 0.5}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if lazy.EarlyStarts != 0 || eager.EarlyStarts == 0 || eager.LateJobs != 0 {
		t.Fatalf("early starts: %d without, %d with (%d late)", lazy.EarlyStarts, eager.EarlyStarts, eager.LateJobs)
	}
	if eager.AcceptedValue < lazy.AcceptedValue {
		t.Fatalf("starting early accepted less: $%.0f against $%.0f", eager.AcceptedValue, lazy.AcceptedValue)
	}
}

// The Azure-style setting: the scheduler plans with its share of the cluster,
// loses some of it to background load, and econ's prices stay between the
// largest discount and the ceiling.
func TestAzureSettingSharesTheClusterWithBackgroundLoad(t *testing.T) {
	jobs := GenerateMapReduce(2000, 6, 50)
	cfg := SimConfig{Capacity: 100, Cloud: Cloud{Seed: 1, Share: 0.5, BackgroundLoad: 0.6}}
	econ := BasicEcon{Predictor: NewSeasonal(300), Ceiling: 6, Floor: 6 * (1 - 0.5)}
	out, err := SimulateWith(jobs, econ, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if out.AtRisk == 0 || out.LateJobs == 0 || out.Utilization <= 0 || out.Utilization > 1 {
		t.Fatalf("background load: %d at risk, %d late, utilization %v", out.AtRisk, out.LateJobs, out.Utilization)
	}
	e := NewEngine(100, map[string]int64{"c/cpu": 10}, BasicEcon{Predictor: LoadCurve{Base: 1, Steep: 100, Capacity: 10}, Ceiling: 6, Floor: 3})
	for range 12 {
		r, ok, _ := e.MakeReservation(0, Bid{Requests: []Request{req(3, 4, 0, 40)}, Value: 1e6})
		if per := r.Price / 12; ok && (per < 3 || per > 6) {
			t.Fatalf("price per unit-slot %v outside [3, 6]", per)
		}
	}
}

// Groups of rows are bids: an ORDER group runs its rows in sequence, and an
// old file without the new columns reads as before.
func TestWorkloadGroupsAreBids(t *testing.T) {
	csv := "id,team,arrival,deadline,duration,width,value,group,language,overhead\n" +
		"m,etl,0,20,4,6,100,g1,order,1\n" +
		"r,etl,0,20,3,6,100,g1,ORDER,\n" +
		"x,ads,0,10,2,2,30,,,\n"
	jobs, err := ReadCSV(strings.NewReader(csv))
	if err != nil || len(jobs) != 3 || jobs[0].Group != "g1" || jobs[0].Language != BidOrder || jobs[0].Overhead != 1 || jobs[2].Group != "" {
		t.Fatalf("%+v %v", jobs, err)
	}
	out, err := Simulate(jobs, 10, Greedy{UnitPrice: 1})
	if err != nil || out.Jobs != 2 || out.AcceptedJobs != 2 || out.RequestedValue != 130 {
		t.Fatalf("%+v %v", out, err)
	}
	// Map takes 7 units (overhead) over [0, 4), reduce 6 over [4, 7), x 2 over [0, 2).
	want := []int64{9, 9, 7, 7, 6, 6, 6, 0}
	for s, u := range want {
		if out.Series[s].Used != u {
			t.Fatalf("slot %d ran %d units, want %d (%v)", s, out.Series[s].Used, u, out.Series[:8])
		}
	}
	for want, in := range map[string]string{
		"share team":    "id,team,arrival,deadline,duration,width,value,group\na,x,0,9,1,1,5,g\nb,y,0,9,1,1,5,g\n",
		"language":      "id,team,arrival,deadline,duration,width,value,group,language\na,x,0,9,1,1,5,g,SOMETIMES\n",
		"needs a group": "id,team,arrival,deadline,duration,width,value,language\na,x,0,9,1,1,5,ANY\n",
		"overhead":      "id,team,arrival,deadline,duration,width,value,overhead\na,x,0,9,1,1,5,-2\n",
	} {
		if _, err := ReadCSV(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v", want, err)
		}
	}
}

// A group's value is earned once in the bound, however many rows it has.
func TestWorkloadBoundCountsAGroupOnce(t *testing.T) {
	row := func(group string, lang BidLanguage) Job {
		return Job{Arrival: 0, Deadline: 10, Duration: 2, Width: 1, Value: 100, Group: group, Language: lang}
	}
	if b := WorkloadBound([]Job{row("g", BidAll), row("g", BidAll), row("g", BidAll)}, 10); math.Abs(b.Value-100) > 1e-9 {
		t.Fatalf("ALL group of three rows worth $100: bound %v", b.Value)
	}
	if b := WorkloadBound([]Job{row("g", BidAny), row("g", BidAny)}, 10); math.Abs(b.Value-200) > 1e-9 {
		t.Fatalf("ANY group: each row may earn the value, bound %v", b.Value)
	}
	if b := WorkloadBound([]Job{{Arrival: 0, Deadline: 1, Duration: 1, Width: 2, Overhead: 2, Value: 8}}, 2); math.Abs(b.Value-4) > 1e-9 {
		t.Fatalf("overhead counts: 4 units on a 2-unit pool earn half, bound %v", b.Value)
	}
}
