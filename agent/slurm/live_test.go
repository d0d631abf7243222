package slurm

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/slurm/slurmtest"
)

// The tests in this file run against real Slurm daemons (scripts/slurm-up.sh, which
// prints the environment): they are skipped unless CLEARHOUSE_TEST_SLURM is set.
// Each test makes its own accounts, so tests and runs do not meet.

// liveCluster is a test's view of the real cluster: two fresh accounts for teams ads
// and ml, and a backend configured for them.
type liveCluster struct {
	t       *testing.T
	ctx     context.Context
	ads, ml string // the accounts
	cfg     *agent.Config
	backend *Backend
	out     strings.Builder
	runner  ExecRunner
}

func newLiveCluster(t *testing.T) *liveCluster {
	t.Helper()
	slurmtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	suffix := fmt.Sprintf("%x", time.Now().UnixNano()%(1<<30))
	c := &liveCluster{t: t, ctx: ctx, ads: "ads" + suffix, ml: "ml" + suffix}
	slurmtest.AddAccounts(t, []string{c.ads, c.ml}, []string{BestEffortAccount(c.ads), BestEffortAccount(c.ml)})
	yaml := fmt.Sprintf(`cluster: hpc
teams:
  ads: {account: %s}
  ml: {account: %s}
pools:
  hpc/cpu: {tres: cpu, unit: "1"}
  hpc/ram: {tres: mem, unit: "1G"}
  hpc/gpu: {tres: gres/gpu, unit: "1"}
slurm: {cluster: %s}
`, c.ads, c.ml, liveSlurmCluster(t))
	cfg, err := agent.ParseConfig("hpc.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate("hpc"); err != nil {
		t.Fatal(err)
	}
	if err := Validate(cfg); err != nil {
		t.Fatal(err)
	}
	c.cfg = cfg
	c.backend = c.open()
	return c
}

// open opens a backend on the cluster, as an agent's start does.
func (c *liveCluster) open() *Backend {
	c.t.Helper()
	b, err := Open(c.ctx, c.cfg, c.runner, &c.out, time.Now)
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

func liveSlurmCluster(*testing.T) string { return slurmtest.Cluster() }

func (c *liveCluster) sh(name string, args ...string) string {
	c.t.Helper()
	out, err := c.runner.Run(c.ctx, "", name, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// sbatch submits a job and returns its id.
func (c *liveCluster) sbatch(args ...string) string {
	c.t.Helper()
	return c.sh("sbatch", append([]string{"--parsable", "--chdir=" + os.TempDir(), "--output=/dev/null"}, args...)...)
}

// jobState is a job's state and reason, as squeue shows them ("" when gone).
func (c *liveCluster) jobState(id string) (state, reason string) {
	out, _ := c.runner.Run(c.ctx, "", "squeue", "--noheader", "--states=all", "--jobs="+id, "--Format=State:|,Reason:")
	state, reason, _ = strings.Cut(strings.TrimSpace(out), "|")
	return state, reason
}

// eventually polls cond every 100 ms for up to a minute: Slurm's scheduler runs
// every few seconds, and at each submission; a poll (squeue) takes about 10 ms.
func (c *liveCluster) eventually(what string, cond func() bool) {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
	}
	c.t.Fatalf("after a minute: not %s\nbackend said:\n%s", what, c.out.String())
}

// teamUser is the machine's user the tests submit as a team's member: not the agent's
// (root), so what it may do is what any team's user may do.
const teamUser = "nobody"

// addTeamUser makes teamUser a user of acct in Slurm.
func (c *liveCluster) addTeamUser(acct string) {
	c.t.Helper()
	c.sh("sacctmgr", "--immediate", "add", "user", teamUser, "account="+acct, "cluster="+liveSlurmCluster(c.t))
}

// sbatchAs submits a job as teamUser and returns sbatch's output and error.
func (c *liveCluster) sbatchAs(args ...string) (string, error) {
	out, err := c.runner.Run(c.ctx, "", "runuser", append([]string{"-u", teamUser, "--", "env", "SLURM_CONF=" + os.Getenv("SLURM_CONF"),
		"sbatch", "--parsable", "--chdir=/tmp", "--output=/dev/null"}, args...)...)
	return strings.TrimSpace(out), err
}

// grpTRES is an account's own association's GrpTRES as sacctmgr prints it.
func (c *liveCluster) grpTRES(acct string) tres {
	c.t.Helper()
	t, err := parseTRES(c.sh("sacctmgr", "--noheader", "--parsable2", "show", "assoc", "where", "account="+acct, "user=", "format=GrpTRES"))
	if err != nil {
		c.t.Fatal(err)
	}
	return t
}
