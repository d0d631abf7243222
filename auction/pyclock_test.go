package auction_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
)

// pyClock is the plain-Python reference clock, tools/pyclock/clock.py, that
// docs/benchmarks.md compares `auction solve` with.
var pyClock = filepath.Join("..", "tools", "pyclock", "clock.py")

// runPyClock runs the reference clock on inst and returns its result. Python 3 is
// required in CI (.ci/run installs it); elsewhere a missing python3 skips.
func runPyClock(t *testing.T, inst auction.Instance) auction.Result {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is not installed; .ci/run installs it")
		}
		t.Skip("python3 is not installed (apt-get install python3)")
	}
	in, err := json.Marshal(inst)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, pyClock)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) { // 1: not converged, result written
		t.Fatalf("%s: %v\n%s", pyClock, err, stderr.Bytes())
	}
	var res auction.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%s wrote no result: %v\n%s", pyClock, err, out)
	}
	return res
}

// TestPythonClockAgreesWithTheEngine holds the reference clock to the engine: on
// generated markets (buyers with XOR alternatives, sellers, traders, per-bundle
// limits), ties, a free pool and a run cut short, both give the same rounds,
// prices, winners with their bundles and payments, and demand, exactly (both work
// on the same micro-dollar grid with the same float operations), with the final
// round off, since the reference is the clock alone.
func TestPythonClockAgreesWithTheEngine(t *testing.T) {
	t.Parallel()
	cases := map[string]auction.Instance{
		"ties": {
			Pools: []auction.Pool{{ID: "x", Supply: 10, ReservePrice: 2}, {ID: "y", Supply: 10, ReservePrice: 2}},
			Bidders: []auction.Bidder{
				{ID: "t", Limit: lim(100), Bundles: []auction.Bundle{{"y": 5}, {"x": 5}}},
				{ID: "u", Limits: []float64{30, 30}, Bundles: []auction.Bundle{{"x": 10}, {"y": 10}}},
				{ID: "v", Limit: lim(30), Bundles: []auction.Bundle{{"x": 10}, {"y": 10}}},
			},
		},
		"free pool and a seller": {
			Pools: []auction.Pool{{ID: "free", Supply: 3, ReservePrice: 0}, {ID: "paid", Supply: 0, ReservePrice: 1.0000004}},
			Bidders: []auction.Bidder{
				{ID: "a", Limit: lim(7.5), Bundles: []auction.Bundle{{"free": 2, "paid": 1}}},
				{ID: "b", Limit: lim(4.25), Bundles: []auction.Bundle{{"free": 2}}},
				{ID: "s", Limit: lim(-1.5), Bundles: []auction.Bundle{{"paid": -1, "free": 0}}},
			},
		},
		"cut short": {
			Pools: []auction.Pool{{ID: "p", Supply: 1, ReservePrice: 1}},
			Bidders: []auction.Bidder{
				{ID: "a", Limit: lim(1e9), Bundles: []auction.Bundle{{"p": 1}}},
				{ID: "b", Limit: lim(1e9), Bundles: []auction.Bundle{{"p": 1}}},
			},
			Params: auction.Params{MaxRounds: 20},
		},
	}
	for seed := range uint64(4) {
		cfg := auction.GenConfig{Seed: seed + 1, Clusters: 2 + 3*int(seed), Resources: 3 + int(seed), Bidders: 40 + 80*int(seed), Scarcity: []float64{1.2, 1.6, 2, 2.4}[seed]}
		cases[fmt.Sprintf("generated %+v", cfg)] = auction.Generate(cfg)
	}
	for name, inst := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inst.Params.FinalRound = &auction.FinalParams{Off: true}
			want, err := auction.Solve(inst, auction.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := runPyClock(t, inst)
			if got.Converged != want.Converged || got.Rounds != want.Rounds {
				t.Fatalf("python: converged %v in %d rounds; engine: %v in %d", got.Converged, got.Rounds, want.Converged, want.Rounds)
			}
			if len(want.Winners) == 0 && len(inst.Bidders) > 3 {
				t.Fatalf("no winners: the case shows nothing")
			}
			for field, pair := range map[string][2]any{
				"prices":        {got.Prices, want.Prices},
				"winners":       {got.Winners, want.Winners},
				"operator_sold": {got.OperatorSold, want.OperatorSold},
				"excess_demand": {got.ExcessDemand, want.ExcessDemand},
			} {
				if !reflect.DeepEqual(pair[0], pair[1]) {
					t.Errorf("%s differ:\npython %v\nengine %v", field, pair[0], pair[1])
				}
			}
		})
	}
}
