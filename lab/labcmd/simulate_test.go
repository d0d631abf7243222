package labcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimulateGeneratedJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "", "simulate", "--generate", "mapreduce", "--jobs", "3000", "--seed", "4",
		"--capacity", "100", "--algorithms", "econ,greedy", "--json")
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	var res struct {
		Workload struct {
			Jobs           int     `json:"jobs"`
			RequestedValue float64 `json:"requested_value"`
		} `json:"workload"`
		UpperBound float64 `json:"upper_bound_value"`
		Algorithms []struct {
			Name          string  `json:"name"`
			AcceptedJobs  int     `json:"accepted_jobs"`
			AcceptedValue float64 `json:"accepted_value"`
			ValueShare    float64 `json:"value_share"`
			Revenue       float64 `json:"revenue"`
			Utilization   float64 `json:"utilization"`
		} `json:"algorithms"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&res); err != nil || dec.More() {
		t.Fatalf("standard output is not one JSON object: %v\n%s", err, out)
	}
	if res.Workload.Jobs != 3000 || len(res.Algorithms) != 2 || res.Algorithms[0].Name != "econ" || res.Algorithms[1].Name != "greedy" {
		t.Fatalf("%+v", res)
	}
	if res.UpperBound <= 0 || res.UpperBound > res.Workload.RequestedValue {
		t.Fatalf("upper bound %v of requested %v", res.UpperBound, res.Workload.RequestedValue)
	}
	for _, a := range res.Algorithms {
		if a.AcceptedValue > res.UpperBound || a.Utilization <= 0 || a.Utilization > 1 || a.AcceptedJobs == 0 {
			t.Fatalf("%+v", a)
		}
		if share := a.AcceptedValue / res.Workload.RequestedValue; share-a.ValueShare > 1e-3 || a.ValueShare-share > 1e-3 {
			t.Fatalf("%s: value_share %v, accepted over requested %v", a.Name, a.ValueShare, share)
		}
	}
	if res.Algorithms[0].AcceptedValue <= res.Algorithms[1].AcceptedValue {
		t.Fatalf("econ $%v not above greedy $%v", res.Algorithms[0].AcceptedValue, res.Algorithms[1].AcceptedValue)
	}
}

func TestSimulateTableAndReport(t *testing.T) {
	dir := t.TempDir()
	swf := filepath.Join(dir, "head.swf")
	data, err := os.ReadFile("../testdata/hpc2n-head.swf")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(swf, data, 0o644)
	report := filepath.Join(dir, "sim.html")
	code, out, errOut := runCLI(t, "", "simulate", "--workload", swf, "--report", report)
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	for _, want := range []string{"240 units", "upper bound", "econ", "greedy", "ondemand", "accepted jobs by class", "report: " + report} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	if strings.Count(html, `<svg class="chart"`) != 4 || strings.Contains(html, "<script") || strings.Contains(html, "http://") && !strings.Contains(html, "http://www.w3.org") {
		t.Fatalf("the report is not four inline SVG charts and nothing external")
	}
	for _, want := range []string{"Utilization over time", "Price over time", "Accepted jobs by class", "Value accepted against the upper bound", `<path class="series"`, `<rect class="bar"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

func TestSimulateRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("id,team,arrival,deadline,duration,width,value\nj1,a,0,10,2,1,5\nj2,a,5,3,1,1,1\n"), 0o644)
	report := filepath.Join(dir, "r.html")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", bad, "--capacity", "10", "--report", report}, "line 3"},
		{[]string{"--workload", bad}, "--capacity"},
		{[]string{"--generate", "mapreduce", "--algorithms", "econ,fifo"}, `unknown algorithm "fifo"`},
		{[]string{"--generate", "poisson"}, "unknown generator"},
		{[]string{"--generate", "mapreduce", "--jobs", "0"}, "--jobs"},
		{[]string{}, "give a workload"},
		{[]string{"--workload", filepath.Join(dir, "x.txt"), "--capacity", "5"}, ".csv or .swf"},
		{[]string{"--generate", "mapreduce", "--task-failures", "1.5"}, "failure share"},
		{[]string{"--generate", "mapreduce", "--max-discount", "0.3"}, "needs a ceiling"},
		{[]string{"--generate", "mapreduce", "--share", "-1"}, "share"},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"simulate"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: code %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if _, err := os.Stat(report); !os.IsNotExist(err) {
		t.Fatal("a refused workload left a report")
	}
}

func TestSimulateCloudSettingsJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "", "simulate", "--generate", "mapreduce", "--jobs", "1500", "--seed", "2", "--capacity", "100",
		"--algorithms", "econ,econ-fractional,greedy", "--capacity-losses", "3", "--task-failures", "0.05", "--finish-early", "0.3",
		"--start-early", "--share", "0.6", "--background-load", "0.5", "--price-ceiling", "8", "--max-discount", "0.5", "--json")
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	var res struct {
		UpperBound float64 `json:"upper_bound_value"`
		Cloud      *struct {
			Share        float64 `json:"share"`
			PriceCeiling float64 `json:"price_ceiling"`
			StartEarly   bool    `json:"start_early"`
		} `json:"cloud"`
		Algorithms []struct {
			Name          string             `json:"name"`
			AcceptedJobs  int                `json:"accepted_jobs"`
			AcceptedValue float64            `json:"accepted_value"`
			ValueShare    *float64           `json:"value_share"`
			Utilization   float64            `json:"utilization"`
			LateJobs      int                `json:"late_jobs"`
			LateShare     float64            `json:"late_share"`
			EarlyStarts   int                `json:"early_starts"`
			LostValue     map[string]float64 `json:"lost_value"`
		} `json:"algorithms"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Cloud == nil || res.Cloud.Share != 0.6 || res.Cloud.PriceCeiling != 8 || !res.Cloud.StartEarly || len(res.Algorithms) != 3 {
		t.Fatalf("%+v", res)
	}
	for _, a := range res.Algorithms {
		if a.ValueShare == nil || a.AcceptedJobs == 0 || a.LateJobs == 0 || a.LateShare <= 0 || a.LateShare > 1 || a.EarlyStarts == 0 ||
			a.LostValue["no-room"]+a.LostValue["priced-out"] <= 0 || a.Utilization <= 0 || a.Utilization > 1 {
			t.Fatalf("%+v", a)
		}
	}
	code, out, _ = runCLI(t, "", "simulate", "--generate", "mapreduce", "--jobs", "300", "--capacity-losses", "2")
	if code != 0 || !strings.Contains(out, "the simulated cloud:") || !strings.Contains(out, "late jobs") {
		t.Fatalf("the table has no cloud section: %s", out)
	}
}

// --setting era-azure is ERA's Azure Batch experiment as one run: 20% of a
// 500-unit cluster, econ at most $10 and at most 35% off, greedy at 65% of it,
// on-demand at it, econ with the linear and the learned predictor, each with and
// without the penalty for later starts.
func TestSimulateERAAzureSetting(t *testing.T) {
	code, out, errOut := runCLI(t, "", "simulate", "--setting", "era-azure", "--jobs", "600", "--json")
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	var res struct {
		Workload struct {
			Capacity int64 `json:"capacity"`
		} `json:"workload"`
		Cloud *struct {
			Share        float64 `json:"share"`
			PriceCeiling float64 `json:"price_ceiling"`
			MaxDiscount  float64 `json:"max_discount"`
			Supply       string  `json:"supply"`
			PlanShare    float64 `json:"plan_share"`
			Rerun        bool    `json:"rerun"`
			Failures     float64 `json:"task_failures"`
		} `json:"cloud"`
		Algorithms []struct {
			Name      string  `json:"name"`
			MeanPrice float64 `json:"mean_price"`
			Failed    int     `json:"failed"`
			Reruns    int     `json:"reruns"`
		} `json:"algorithms"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var names []string
	for _, a := range res.Algorithms {
		names = append(names, a.Name)
		if a.Failed == 0 || a.Reruns == 0 || a.Reruns > a.Failed {
			t.Errorf("%s: %d jobs with a failed task, %d re-run", a.Name, a.Failed, a.Reruns)
		}
		// Revenue over the unit-slots run: at least the 35%-off floor for the
		// econ variants (jobs that could not be honoured ran less than they paid for).
		if strings.HasPrefix(a.Name, "econ") && a.MeanPrice > 0 && a.MeanPrice < 6.5-1e-9 {
			t.Errorf("%s: mean price %v below the paper's floor", a.Name, a.MeanPrice)
		}
	}
	want := "econ-seasonal,econ-seasonal-penalty,econ-linear,econ-linear-penalty,greedy,ondemand"
	if strings.Join(names, ",") != want || res.Workload.Capacity != 500 || res.Cloud == nil || res.Cloud.Share != 0.2 ||
		res.Cloud.PriceCeiling != 10 || res.Cloud.MaxDiscount != 0.35 || res.Cloud.Supply != "daily" || res.Cloud.PlanShare != 0.8 ||
		!res.Cloud.Rerun || res.Cloud.Failures != 0.05 {
		t.Fatalf("%+v (algorithms %v)", res, names)
	}
	if code, _, errOut := runCLI(t, "", "simulate", "--setting", "nope", "--generate", "mapreduce"); code != 2 || !strings.Contains(errOut, "--setting") {
		t.Fatalf("an unknown setting: %d %s", code, errOut)
	}
}
