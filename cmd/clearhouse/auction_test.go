package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
)

func TestAuctionGenSolveCheck(t *testing.T) {
	dir := t.TempDir()
	inst, res := filepath.Join(dir, "inst.json"), filepath.Join(dir, "res.json")
	if code, _, errOut := runCLI(t, "", "auction", "gen", "--seed", "3", "--clusters", "4", "--bidders", "50", "--out", inst); code != 0 {
		t.Fatal(errOut)
	}
	if code, _, errOut := runCLI(t, "", "auction", "solve", "--in", inst, "--out", res, "--final-seconds", "1"); code != 0 {
		t.Fatal(errOut)
	}
	raw, _ := os.ReadFile(res)
	var r auction.Result
	if err := json.Unmarshal(raw, &r); err != nil || !r.Converged {
		t.Fatalf("result %s: %v", raw, err)
	}
	code, out, errOut := runCLI(t, "", "auction", "check", "--in", inst, "--result", res)
	if code != 0 || !strings.HasPrefix(out, "ok:") {
		t.Fatalf("check: %d %q %q", code, out, errOut)
	}
	// A tampered result fails the check.
	r.Prices = map[string]float64{}
	raw, _ = json.Marshal(r)
	os.WriteFile(res, raw, 0o644)
	if code, _, _ := runCLI(t, "", "auction", "check", "--in", inst, "--result", res); code != 1 {
		t.Fatalf("a tampered result passed the check (code %d)", code)
	}
}

func TestAuctionSolveFromStdinToStdout(t *testing.T) {
	code, out, errOut := runCLI(t, `{"pools":[{"id":"p","supply":1,"reserve_price":2}],"bidders":[{"id":"b","limit":5,"bundles":[{"p":1}]}]}`,
		"auction", "solve", "--in", "-", "--out", "-")
	if code != 0 || !strings.Contains(out, `"winners"`) || !strings.Contains(out, `"id": "b"`) {
		t.Fatalf("%d %q %q", code, out, errOut)
	}
}

func TestAuctionSolveRefusesBadInstancesAndWritesNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "res.json")
	code, _, errOut := runCLI(t, `{"pools":[{"id":"p","supply":1,"reserve_price":1}],"bidders":[{"id":"b","limit":1,"bundles":[{"q":1}]}]}`,
		"auction", "solve", "--in", "-", "--out", out)
	if code != 2 || !strings.Contains(errOut, `bidder "b"`) || !strings.Contains(errOut, `"q"`) {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("a refused instance left an output file")
	}
}

func TestAuctionSolveReportsNonConvergence(t *testing.T) {
	out := filepath.Join(t.TempDir(), "res.json")
	code, _, errOut := runCLI(t, `{"pools":[{"id":"p","supply":1,"reserve_price":1}],"bidders":[{"id":"a","limit":1e9,"bundles":[{"p":1}]},{"id":"b","limit":1e9,"bundles":[{"p":1}]}],"params":{"max_rounds":5}}`,
		"auction", "solve", "--in", "-", "--out", out)
	if code != 1 || !strings.Contains(errOut, "did not converge") || !strings.Contains(errOut, "[p]") {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	if raw, err := os.ReadFile(out); err != nil || !strings.Contains(string(raw), `"converged": false`) {
		t.Fatalf("the non-converged result was not written: %v", err)
	}
}

// complements is a market where the clock strands value: the final round gives a
// and b to the two small buyers rather than to the one that wants both.
const complements = `{"pools":[{"id":"a","supply":1,"reserve_price":1},{"id":"b","supply":1,"reserve_price":1}],
"bidders":[{"id":"small-a","limit":6,"bundles":[{"a":1}]},{"id":"small-b","limit":6,"bundles":[{"b":1}]},
{"id":"both","limit":10,"bundles":[{"a":1,"b":1}]},{"id":"late-a","limit":5,"bundles":[{"a":1}]}]%s}`

// solve writes the final round as the format says: final_round with welfare,
// clock_welfare, bound, optimal and seconds; each winner's payment and at_prices;
// and the result passes auction check.
func TestAuctionSolveWritesTheFinalRound(t *testing.T) {
	dir := t.TempDir()
	inst, res := filepath.Join(dir, "inst.json"), filepath.Join(dir, "res.json")
	os.WriteFile(inst, []byte(fmt.Sprintf(complements, "")), 0o644)
	if code, _, errOut := runCLI(t, "", "auction", "solve", "--in", inst, "--out", res); code != 0 {
		t.Fatal(errOut)
	}
	raw, _ := os.ReadFile(res)
	var m struct {
		Winners    []map[string]any   `json:"winners"`
		FinalRound map[string]any     `json:"final_round"`
		Prices     map[string]float64 `json:"prices"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"welfare", "clock_welfare", "bound", "optimal", "seconds"} {
		if _, ok := m.FinalRound[k]; !ok {
			t.Fatalf("final_round lacks %q: %s", k, raw)
		}
	}
	if m.FinalRound["welfare"].(float64) != 10 || m.FinalRound["optimal"] != true || m.FinalRound["bound"].(float64) != 10 {
		t.Fatalf("final round %v, want welfare 10 proved optimal", m.FinalRound)
	}
	won := map[string]bool{}
	for _, w := range m.Winners {
		won[w["id"].(string)] = true
		pay, ok1 := w["payment"].(float64)
		at, ok2 := w["at_prices"].(float64)
		if !ok1 || !ok2 || pay > 6 {
			t.Fatalf("winner %v: payment and at_prices must be numbers, payment within the limit 6", w)
		}
		if want := m.Prices[strings.TrimPrefix(w["id"].(string), "small-")]; at != want {
			t.Fatalf("winner %v: at_prices %v, its pool's price is %v", w, at, want)
		}
	}
	if len(won) != 2 || !won["small-a"] || !won["small-b"] {
		t.Fatalf("winners %v, want small-a and small-b", m.Winners)
	}
	if code, out, errOut := runCLI(t, "", "auction", "check", "--in", inst, "--result", res); code != 0 || !strings.Contains(out, "welfare 10.00") {
		t.Fatalf("check: %d %q %q", code, out, errOut)
	}
}

// params.final_round.off and --no-final-round keep the clock's allocation: no
// final_round in the result, and every payment is the bundle at the prices.
func TestAuctionSolveWithoutTheFinalRound(t *testing.T) {
	for _, c := range []struct {
		params string
		flags  []string
	}{
		{`,"params":{"final_round":{"off":true}}`, nil},
		{"", []string{"--no-final-round"}},
	} {
		args := append([]string{"auction", "solve", "--in", "-", "--out", "-"}, c.flags...)
		code, out, errOut := runCLI(t, fmt.Sprintf(complements, c.params), args...)
		if code != 0 {
			t.Fatal(errOut)
		}
		var r auction.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.FinalRound != nil || strings.Contains(out, "final_round") {
			t.Fatalf("%v %v: the final round ran: %s", c.params, c.flags, out)
		}
		for _, w := range r.Winners {
			if w.Payment != w.AtPrices {
				t.Fatalf("clock alone: %s pays %v, at prices %v", w.ID, w.Payment, w.AtPrices)
			}
		}
	}
}

// A bad final_round is refused, naming the field.
func TestAuctionSolveRefusesABadFinalRound(t *testing.T) {
	code, _, errOut := runCLI(t, fmt.Sprintf(complements, `,"params":{"final_round":{"seconds":-1}}`), "auction", "solve", "--in", "-", "--out", "-")
	if code != 2 || !strings.Contains(errOut, "params.final_round.seconds") {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
}
