package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
)

// BenchmarkAuctionSolveProcess runs `clearhouse auction solve --no-final-round` on
// the generated 10,000 x 1,000 market (auction gen --seed 2 --clusters 100
// --resources 10 --bidders 10000) as a whole process, start-up, JSON decoding,
// the clock and the result's encoding included, and reports its wall and CPU
// (user + system) time. The process is this test binary re-run as the command line
// (cliEnv), so its start-up includes the test binary's own package set.
func BenchmarkAuctionSolveProcess(b *testing.B) {
	data, err := json.Marshal(auction.Generate(auction.GenConfig{Seed: 2, Clusters: 100, Resources: 10, Bidders: 10_000, Scarcity: 1.5}))
	if err != nil {
		b.Fatal(err)
	}
	in := filepath.Join(b.TempDir(), "market.json")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		b.Fatal(err)
	}
	args := strings.Join([]string{"auction", "solve", "--no-final-round", "--in", in, "--out", os.DevNull}, "\x1f")
	var cpu time.Duration
	for b.Loop() {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), cliEnv+"="+args)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("auction solve: %v\n%s", err, out)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
