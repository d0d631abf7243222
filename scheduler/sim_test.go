package scheduler

import (
	"bytes"
	"strings"
	"testing"
)

// The bar: on the MapReduce-like mix Basic-Econ accepts at least five
// times the value greedy first-fit accepts, and no algorithm beats the offline
// fractional upper bound.
func TestEconAcceptsFiveTimesGreedysValueOnTheMapReduceMix(t *testing.T) {
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
