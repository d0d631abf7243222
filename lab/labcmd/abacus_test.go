package labcmd

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type abacusOut struct {
	Iterations int                           `json:"iterations"`
	Shares     map[string]map[string]float64 `json:"shares"`
	SubBudgets map[string]map[string]float64 `json:"sub_budgets"`
}

func decodeAbacusOut(t *testing.T, out string) abacusOut {
	t.Helper()
	var res abacusOut
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	return res
}

// Two jobs on one resource, each spending all of its budget there: at alpha 0.5 the
// shares are 10:5; at alpha 1, 100:25; at alpha 0, equal.
func TestAbacusSolveFromFileAndStdin(t *testing.T) {
	in := `{"resources":["cpu","ram"],"jobs":[{"id":"a","budget":100,"utility":"log","weights":{"cpu":1}},{"id":"b","budget":25,"weights":{"cpu":2}}]}`
	path := filepath.Join(t.TempDir(), "jobs.json")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		stdin string
		want  float64
	}{
		{[]string{"--in", path}, "", 10.0 / 15},
		{[]string{"--in", "-", "--alpha", "1"}, in, 100.0 / 125},
		{[]string{"--in", "-", "--alpha", "0", "--epsilon", "1e-6"}, in, 0.5},
	} {
		code, out, errOut := runCLI(t, c.stdin, append([]string{"abacus", "solve"}, c.args...)...)
		if code != 0 || errOut != "" {
			t.Fatalf("%v: code %d stderr %q", c.args, code, errOut)
		}
		res := decodeAbacusOut(t, out)
		if math.Abs(res.Shares["a"]["cpu"]-c.want) > 1e-12 || res.SubBudgets["b"]["cpu"] != 25 || res.Iterations != 1 {
			t.Errorf("%v: %+v, want a's cpu share %v", c.args, res, c.want)
		}
		if _, listed := res.Shares["a"]["ram"]; listed {
			t.Errorf("%v: a resource the job does not use is listed: %v", c.args, res.Shares)
		}
	}
}

func TestAbacusSolveRefusesBadInputAndPrintsNothing(t *testing.T) {
	for _, c := range []struct{ name, in, flag, want string }{
		{"negative budget", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":-1}]}`, "", `job "etl": budget: must not be negative`},
		{"zero weight", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":1,"weights":{"cpu":0}}]}`, "", `job "etl": weights["cpu"]: must be positive`},
		{"unknown resource", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":1,"weights":{"gpu":1}}]}`, "", `job "etl": weights: unknown resource "gpu"`},
		{"duplicate key", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":1,"budget":2}]}`, "", `job "etl": key "budget" given twice`},
		{"unknown field", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":1,"deadline":3}]}`, "", `job "etl": json: unknown field "deadline"`},
		{"bad utility", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":1,"utility":"cubic"}]}`, "", `job "etl": utility`},
		{"malformed", `{"resources":["cpu"],`, "", `standard input: instance:`},
		{"alpha out of range", `{"resources":["cpu"],"jobs":[]}`, "--alpha=1.5", `--alpha: must be in [0, 1], got 1.5`},
		{"epsilon not positive", `{"resources":["cpu"],"jobs":[]}`, "--epsilon=0", `--epsilon: must be a positive number`},
		{"epsilon below rounding", `{"resources":["cpu"],"jobs":[{"id":"a","budget":1e12}]}`, "--epsilon=1e-4", `--epsilon: must be at least 1e-12 of the largest budget`},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"abacus", "solve", "--in", "-"}
			if c.flag != "" {
				args = append(args, c.flag)
			}
			code, out, errOut := runCLI(t, c.in, args...)
			if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
				t.Errorf("code %d stdout %q stderr %q; want 2, nothing, a message with %q", code, out, errOut, c.want)
			}
		})
	}
	if code, out, _ := runCLI(t, "", "abacus", "solve", "--in", filepath.Join(t.TempDir(), "missing.json")); code != 2 || out != "" {
		t.Errorf("missing file: code %d, stdout %q", code, out)
	}
}

// Above alpha 0.5 the auction may not settle: exit 1, the last round still printed.
func TestAbacusSolveReportsNonConvergence(t *testing.T) {
	var jobs []string
	for i, w := range [][2]float64{{2, 1}, {1, 2}, {1.5, 0.5}, {0.7, 1.9}, {1, 1}, {0.6, 1.4}} {
		jobs = append(jobs, `{"id":"j`+string(rune('0'+i))+`","budget":`+[]string{"50", "80", "120", "160", "190", "70"}[i]+
			`,"weights":{"cpu":`+ftoa(w[0])+`,"ram":`+ftoa(w[1])+`}}`)
	}
	in := `{"resources":["cpu","ram"],"jobs":[` + strings.Join(jobs, ",") + `]}`
	code, out, errOut := runCLI(t, in, "abacus", "solve", "--in", "-", "--alpha", "1", "--max-iterations", "2")
	if code != 1 || !strings.Contains(errOut, "did not converge in 2 rounds") {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	if res := decodeAbacusOut(t, out); res.Iterations != 2 || len(res.Shares) != 6 {
		t.Errorf("printed %+v", res)
	}
}

func ftoa(f float64) string { b, _ := json.Marshal(f); return string(b) }

type abacusSimOut struct {
	Seed, Runs    int
	Epsilon       float64
	MaxIterations int `json:"max_iterations"`
	Rows          []struct {
		Utility, Vary    string
		Users, Resources int
		Alpha            float64
		MeanIterations   float64 `json:"mean_iterations"`
		P95Iterations    int     `json:"p95_iterations"`
		MaxIterations    int     `json:"max_iterations"`
		NotConverged     int     `json:"not_converged"`
	}
}

func TestAbacusSimulate(t *testing.T) {
	args := []string{"abacus", "simulate", "--runs", "30", "--seed", "5", "--users", "4,32", "--resources", "2", "--alphas", "0.5,1", "--max-iterations", "10", "--json"}
	code, out, errOut := runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	var a abacusSimOut
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if a.Seed != 5 || a.Runs != 30 || a.MaxIterations != 10 || len(a.Rows) != 10 {
		t.Fatalf("%+v", a)
	}
	r := a.Rows[4] // linear, vary alpha, alpha 1
	if r.Utility != "linear" || r.Vary != "alpha" || r.Alpha != 1 || r.Users != 32 || r.Resources != 4 || r.NotConverged == 0 || r.MaxIterations != 10 {
		t.Errorf("linear at alpha 1: %+v", r)
	}
	_, again, _ := runCLI(t, "", args...)
	var b abacusSimOut
	_ = json.Unmarshal([]byte(again), &b)
	for k := range a.Rows {
		x, y := a.Rows[k], b.Rows[k]
		if x.MeanIterations != y.MeanIterations || x.P95Iterations != y.P95Iterations || x.MaxIterations != y.MaxIterations {
			t.Errorf("row %d: round counts differ between two runs with the same seed", k)
		}
	}
	code, table, _ := runCLI(t, "", "abacus", "simulate", "--runs", "5", "--users", "8", "--resources", "2", "--alphas", "0.5", "--utilities", "log")
	if code != 0 || !strings.Contains(table, "mean rounds") || strings.Count(table, "\n") != 7 {
		t.Errorf("table (code %d):\n%s", code, table)
	}
}

func TestAbacusSimulateRefusesBadFlags(t *testing.T) {
	for _, c := range []struct{ flag, want string }{
		{"--alphas=0.5,1.5", "--alphas: each must be in [0, 1], got 1.5"},
		{"--users=0", "--users: each must be from 1"},
		{"--resources=x", `--resources: "x" is not a whole number`},
		{"--runs=0", "--runs: must be from 1"},
		{"--utilities=cubic", "--utilities: utility"},
		{"--epsilon=-1", "--epsilon: must be a positive number"},
	} {
		code, out, errOut := runCLI(t, "", "abacus", "simulate", c.flag)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: code %d stdout %q stderr %q", c.flag, code, out, errOut)
		}
	}
}

// `abacus efficiency` (section 7.1.3): one row per workload and number of users,
// each scheduler's makespan no shorter than the map slots allow; the table1 workload
// (jobs arriving for 30 minutes) never finishes before its last submission.
func TestAbacusEfficiencyJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "", "abacus", "efficiency", "--users", "2,8", "--runs", "10", "--json")
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	var res struct {
		Rows []struct {
			Workload       string  `json:"workload"`
			Users          int     `json:"users"`
			Runs           int     `json:"runs"`
			FIFOMakespan   float64 `json:"fifo_makespan"`
			AbacusMakespan float64 `json:"abacus_makespan"`
			FIFOCompl      float64 `json:"fifo_completion"`
			AbacusCompl    float64 `json:"abacus_completion"`
		} `json:"rows"`
	}
	decodeStrict(t, out, &res)
	if len(res.Rows) != 4 || res.Rows[0].Users != 2 || res.Rows[1].Users != 8 || res.Rows[1].Runs != 10 ||
		res.Rows[0].Workload != "batch" || res.Rows[2].Workload != "table1" || res.Rows[3].Users != 8 {
		t.Fatalf("%+v", res)
	}
	for _, r := range res.Rows[2:] {
		if min(r.FIFOMakespan, r.AbacusMakespan) < 1700 || r.FIFOCompl > r.FIFOMakespan || r.AbacusCompl > r.AbacusMakespan {
			t.Fatalf("table1: %+v", r)
		}
	}
	for _, r := range res.Rows[:2] {
		if min(r.FIFOMakespan, r.AbacusMakespan) < float64(20*r.Users)/20+1 || r.FIFOCompl > r.FIFOMakespan || r.AbacusCompl > r.AbacusMakespan {
			t.Fatalf("a makespan below the map slots' bound: %+v", r)
		}
	}
	if code, _, errOut := runCLI(t, "", "abacus", "efficiency", "--runs", "0"); code != 2 || !strings.Contains(errOut, "--runs") {
		t.Fatalf("zero runs: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "abacus", "efficiency", "--workloads", "hadoop"); code != 2 || !strings.Contains(errOut, "workload") {
		t.Fatalf("unknown workload: %d %s", code, errOut)
	}
}
