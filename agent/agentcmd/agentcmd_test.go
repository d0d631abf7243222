package agentcmd_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/clearhouse/clearhouse/agent/agentcmd"
	_ "github.com/clearhouse/clearhouse/agent/kubernetes" // as cmd/clearhouse-agent
	_ "github.com/clearhouse/clearhouse/agent/simulate"
	_ "github.com/clearhouse/clearhouse/agent/slurm"
)

// everything is clearhouse-agent's options: every registered backend.
var everything = agentcmd.Options{Path: agentcmd.Binary, Version: "9.9.9-test"}

func runAgent(t *testing.T, o agentcmd.Options, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := agentcmd.Run(context.Background(), o, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// clearhouse-agent carries every backend: kubernetes is known (and needs its config
// file), and an unknown backend is refused naming all four; flag errors exit 2.
func TestAgentBinaryOffersEveryBackendAndValidatesFlags(t *testing.T) {
	base := []string{"--server", "http://x", "--cluster", "c", "--token", "t"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", "http://x", "--cluster", "c"}, "--token"},
		{append(base, "--backend", "kubernetes"), "--config: required by --backend kubernetes"},
		{append(base, "--backend", "slurm"), "--config: required by --backend slurm"},
		{append(base, "--backend", "nope"), `(known: kubernetes, print, simulate, slurm)`},
		{append(base, "--backend", "print", "--seed", "2"), "only with --backend simulate"},
		{append(base, "--every", "0s"), "--every"},
	} {
		code, _, errOut := runAgent(t, everything, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || !strings.HasPrefix(errOut, "clearhouse-agent: ") {
			t.Errorf("clearhouse-agent %v: code %d, stderr %q: want 2 naming %s", tc.args, code, errOut, tc.want)
		}
	}
}

// A binary that leaves a backend out says what to run instead, with status 2, and
// lists only its own backends.
func TestAgentLeftOutBackendPointsElsewhere(t *testing.T) {
	server := agentcmd.Options{Path: "clearhouse agent", Backends: []string{"print", "simulate"},
		Elsewhere: map[string]string{"kubernetes": "run clearhouse-agent"}}
	code, _, errOut := runAgent(t, server, "--server", "http://x", "--cluster", "c", "--token", "t", "--backend", "kubernetes")
	if code != 2 || !strings.Contains(errOut, `backend "kubernetes": not built into clearhouse: run clearhouse-agent`) {
		t.Errorf("--backend kubernetes where it is left out: %d %q", code, errOut)
	}
	code, _, errOut = runAgent(t, server, "--server", "http://x", "--cluster", "c", "--token", "t", "--backend", "slurm")
	if code != 2 || !strings.Contains(errOut, "(known: print, simulate)") {
		t.Errorf("--backend slurm where it is not offered: %d %q", code, errOut)
	}
	var help bytes.Buffer
	cmd := agentcmd.New(server)
	cmd.SetOut(&help)
	if err := cmd.Help(); err != nil || !strings.Contains(help.String(), "drive: print, simulate (default") ||
		!strings.Contains(help.String(), "clearhouse agent --server") {
		t.Errorf("help of a binary with print and simulate: %v\n%s", err, help.String())
	}
}

// clearhouse-agent's help names its backends, the config file's documentation and the
// environment variables; --version prints the version.
func TestAgentBinaryHelpAndVersion(t *testing.T) {
	code, out, errOut := runAgent(t, everything, "--help")
	for _, want := range []string{"--backend string", "kubernetes, print, simulate, slurm", "--config string", "docs/agent-config.md",
		"FILE:LINE: rule", "CLEARHOUSE_SERVER", "clearhouse-agent --server http://127.0.0.1:8080"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("clearhouse-agent --help: %d, missing %q\n%s%s", code, want, out, errOut)
		}
	}
	if code, out, _ := runAgent(t, everything, "--version"); code != 0 || !strings.Contains(out, "9.9.9-test") {
		t.Errorf("--version: %d %q", code, out)
	}
	for _, args := range [][]string{{"--no-such-flag"}, {"serve"}} {
		if code, _, errOut := runAgent(t, everything, args...); code != 1 || !strings.Contains(errOut, "Run 'clearhouse-agent --help'") {
			t.Errorf("clearhouse-agent %v: %d %q; want 1 and a pointer to --help", args, code, errOut)
		}
	}
}

// Flags come from CLEARHOUSE_<FLAG> too, and a flag on the command line wins.
func TestAgentBinaryReadsTheEnvironment(t *testing.T) {
	t.Setenv("CLEARHOUSE_SERVER", "http://x")
	t.Setenv("CLEARHOUSE_CLUSTER", "c")
	t.Setenv("CLEARHOUSE_TOKEN", "t")
	t.Setenv("CLEARHOUSE_BACKEND", "nope")
	code, _, errOut := runAgent(t, everything)
	if code != 2 || !strings.Contains(errOut, `backend "nope"`) {
		t.Fatalf("from the environment: %d %q; want the backend of CLEARHOUSE_BACKEND refused", code, errOut)
	}
	config := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(config, []byte("cluster: d\nteams:\n  ads: {}\npools:\n  d/cpu: {unit: \"1\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runAgent(t, everything, "--backend", "print", "--config", config)
	if code != 2 || !strings.Contains(errOut, `cluster: "d" must equal --cluster "c"`) {
		t.Fatalf("--backend print over CLEARHOUSE_BACKEND: %d %q", code, errOut)
	}
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	cmd.Flags().Int("every-n", 1, "")
	err := agentcmd.BindEnv(cmd, func(name string) (string, bool) { return "ten", name == "CLEARHOUSE_EVERY_N" })
	if err == nil || !strings.Contains(err.Error(), `CLEARHOUSE_EVERY_N="ten"`) {
		t.Errorf("a bad value in the environment: %v", err)
	}
}
