package main

import (
	"encoding/json"
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
	if code, _, errOut := runCLI(t, "", "auction", "solve", "--in", inst, "--out", res); code != 0 {
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
