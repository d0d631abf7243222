// Package slurmtest is what tests against real Slurm daemons share: the switch that
// enables them, a lock so that tests of different packages (which `go test` runs at
// once) do not share the one node, and a test's own accounts, made and removed.
package slurmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
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

// AddAccounts adds accounts to the cluster, each with root as a user, in two sacctmgr
// commands for all of them (each command is a round trip through slurmdbd to its
// database), and removes them and extra (accounts the code under test may have made
// for them: best-effort ones) with RemoveAccounts when the test ends.
func AddAccounts(t testing.TB, accounts, extra []string) {
	t.Helper()
	t.Cleanup(func() { RemoveAccounts(append(slices.Clone(accounts), extra...)) })
	list := strings.Join(accounts, ",")
	for _, args := range [][]string{
		{"--immediate", "add", "account", list, "cluster=" + Cluster()},
		{"--immediate", "add", "user", "root", "account=" + list, "cluster=" + Cluster()},
	} {
		if out, err := exec.Command("sacctmgr", args...).CombinedOutput(); err != nil {
			t.Fatalf("sacctmgr %v: %v: %s", args, err, out)
		}
	}
}

// RemoveAccounts cancels the accounts' jobs, waits until squeue lists none of them
// (at most 30 s: Slurm refuses to delete a reservation or an account with jobs still
// queued or ending), then deletes the reservations made for the accounts, their users
// and the accounts. Accounts that do not exist are passed over.
func RemoveAccounts(accounts []string) {
	list := strings.Join(accounts, ",")
	for _, acct := range accounts { // scancel --account takes one account: with a list it cancels nothing
		_ = exec.Command("scancel", "--account="+acct).Run()
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if out, err := exec.Command("squeue", "--noheader", "--account="+list).Output(); err == nil && strings.TrimSpace(string(out)) == "" {
			break
		}
	}
	out, _ := exec.Command("scontrol", "--oneliner", "show", "reservations").Output()
	for _, line := range strings.Split(string(out), "\n") {
		name, holders := "", ""
		for _, field := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(field, "ReservationName="); ok {
				name = v
			} else if v, ok := strings.CutPrefix(field, "Accounts="); ok {
				holders = v
			}
		}
		if name != "" && slices.ContainsFunc(strings.Split(holders, ","), func(a string) bool {
			return slices.ContainsFunc(accounts, func(b string) bool { return strings.EqualFold(a, b) })
		}) {
			_ = exec.Command("scontrol", "delete", "ReservationName="+name).Run()
		}
	}
	// Every account's users in one command, but sacctmgr refuses that when it takes a
	// user's default account while the user still has another of them (a user in two
	// of the accounts): then account by account, the first account last.
	if exec.Command("sacctmgr", "--immediate", "delete", "user", "where", "account="+list).Run() != nil {
		for _, acct := range slices.Backward(accounts) {
			_ = exec.Command("sacctmgr", "--immediate", "delete", "user", "where", "account="+acct).Run()
		}
	}
	_ = exec.Command("sacctmgr", "--immediate", "delete", "account", list).Run()
}
