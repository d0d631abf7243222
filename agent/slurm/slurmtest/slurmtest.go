// Package slurmtest is what tests against real Slurm daemons share: the switch that
// enables them and a lock so that tests of different packages (which `go test` runs at
// once) do not share the one node.
package slurmtest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Require skips the test under -short or unless CLEARHOUSE_TEST_SLURM is set
// (scripts/slurm-up.sh prints it), then holds the machine-wide Slurm test lock until the test ends: a test
// that fills the node must not meet another package's jobs.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the test needs a real Slurm")
	}
	if os.Getenv("CLEARHOUSE_TEST_SLURM") == "" {
		t.Skip("CLEARHOUSE_TEST_SLURM is not set (run scripts/slurm-up.sh and eval its output)")
	}
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "clearhouse-slurm-tests.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() }) // closing releases the lock
}

// Cluster is the Slurm cluster's name: CLEARHOUSE_SLURM_CLUSTER, or slurm-up.sh's
// default.
func Cluster() string {
	if name := os.Getenv("CLEARHOUSE_SLURM_CLUSTER"); name != "" {
		return name
	}
	return "clearhouse"
}
