package abacus

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
)

// fakeClock advances one millisecond on every reading.
func fakeClock() func() time.Time {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

func TestSimulateIsSeededAndSummarizesRuns(t *testing.T) {
	cfg := SimConfig{Seed: 7, Runs: 40, Options: DefaultOptions(), Rows: Sweep([]Utility{Linear, Log}, []int{8, 32}, []int{2}, []float64{0.3, 1})}
	cfg.Options.MaxIterations = 20
	if len(cfg.Rows) != 10 || cfg.Rows[0] != (Experiment{"users", Linear, 8, PaperResources, PaperAlpha}) || cfg.Rows[9] != (Experiment{"alpha", Log, PaperUsers, PaperResources, 1}) {
		t.Fatalf("sweep %v", cfg.Rows)
	}
	a, err := Simulate(cfg, fakeClock())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Simulate(cfg, fakeClock())
	for k := range a {
		if a[k] != b[k] {
			t.Fatalf("row %d differs between two runs with seed 7: %+v and %+v", k, a[k], b[k])
		}
		r := a[k]
		if r.Runs != 40 || r.MeanTime != time.Millisecond || r.MedianTime != time.Millisecond || !(float64(r.P95Iterations) >= r.MeanIterations*0.5) || r.P95Iterations > r.MaxIterations || r.MaxIterations > 20 {
			t.Errorf("row %d: %+v", k, r)
		}
	}
	// Linear at alpha 1 (row 4) hits the bound of 20 rounds on some draws.
	if a[4].Alpha != 1 || a[4].NotConverged == 0 || a[4].MaxIterations != 20 {
		t.Errorf("linear, alpha 1: %+v", a[4])
	}
	cfg.Seed = 8
	c, _ := Simulate(cfg, fakeClock())
	if c[0].MeanIterations == a[0].MeanIterations && c[1].MeanIterations == a[1].MeanIterations && c[5].MeanIterations == a[5].MeanIterations {
		t.Error("seeds 7 and 8 gave the same means: the seed is not used")
	}
}

func TestSimulateRefusesBadPlans(t *testing.T) {
	ok := SimConfig{Runs: 1, Options: DefaultOptions(), Rows: []Experiment{{"alpha", Linear, 4, 2, 0.5}}}
	for _, c := range []struct {
		edit func(*SimConfig)
		want string
	}{
		{func(c *SimConfig) { c.Runs = 0 }, "runs"},
		{func(c *SimConfig) { c.Rows[0].Alpha = 2 }, "rows[0]: alpha"},
		{func(c *SimConfig) { c.Rows[0].Users = 0 }, "rows[0]: users"},
		{func(c *SimConfig) { c.Options.Epsilon = -1 }, "epsilon"},
	} {
		cfg := ok
		cfg.Rows = append([]Experiment(nil), ok.Rows...)
		c.edit(&cfg)
		if _, err := Simulate(cfg, fakeClock()); clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want EINVALID containing %q", err, c.want)
		}
	}
}

// The engine stays pure: no database, HTTP or template package among its imports.
func TestAbacusIsPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/clearhouse/clearhouse/sharing/abacus").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "gonum.org/v1/gonum/mat") {
		t.Fatalf("go list -deps printed no dependencies we know of:\n%s", out)
	}
	for _, banned := range []string{"gorm.io/", "github.com/gin-gonic/", "github.com/a-h/templ", "database/sql", "net/http"} {
		if strings.Contains(string(out), banned) {
			t.Errorf("sharing/abacus depends on %s", banned)
		}
	}
}
