package slurm

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// A team's holdings become its account's GrpTRES; a job beyond them waits for that
// reason and starts once the team holds more; only someone else's change is reported
// as drift (not the first write, nor a change because the team's holdings changed);
// running jobs' TRES are measured as the team's own usage and the pool's.
func TestLiveQuotaHoldsJobsBeyondIt(t *testing.T) {
	c := newLiveCluster(t)
	b := c.backend
	fixes, err := b.ApplyQuotas(c.ctx, []agent.Quota{{Team: "ads", Pool: "hpc/cpu", Units: 2}, {Team: "ads", Pool: "hpc/ram", Units: 8}})
	if err != nil {
		t.Fatal(err)
	}
	if len(fixes) != 0 {
		t.Fatalf("corrections %v of a first write: want none", fixes)
	}
	if got := c.sh("sacctmgr", "--noheader", "--parsable2", "show", "assoc", "where", "account="+c.ads, "user=", "format=GrpTRES"); got != "cpu=2,mem=8G,gres/gpu=0" && got != "cpu=2,gres/gpu=0,mem=8G" {
		t.Errorf("GrpTRES of %s %q, want cpu=2, mem=8G, gres/gpu=0", c.ads, got)
	}
	if fixes, err := b.ApplyQuotas(c.ctx, []agent.Quota{{Team: "ads", Pool: "hpc/cpu", Units: 2}, {Team: "ads", Pool: "hpc/ram", Units: 8}}); err != nil || len(fixes) != 0 {
		t.Fatalf("a second apply changed %v (%v): want nothing", fixes, err)
	}

	first := c.sbatch("--account="+c.ads, "--cpus-per-task=2", "--mem=1G", "--wrap=sleep 300")
	c.eventually("the first job running", func() bool { s, _ := c.jobState(first); return s == "RUNNING" })
	second := c.sbatch("--account="+c.ads, "--cpus-per-task=1", "--mem=1G", "--wrap=sleep 300")
	c.eventually("the second job pending for the account's CPU limit", func() bool {
		s, r := c.jobState(second)
		return s == "PENDING" && r == "AssocGrpCpuLimit"
	})

	m, err := b.Measure(c.ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(m.Owners, agent.OwnerUsage{Team: "ads", Pool: "hpc/cpu", Units: 2}) || !slices.Contains(m.Owners, agent.OwnerUsage{Team: "ads", Pool: "hpc/ram", Units: 1}) {
		t.Errorf("owners %v: want ads using 2 CPUs and 1 GiB", m.Owners)
	}
	if !slices.Contains(m.Owners, agent.OwnerUsage{Team: "ml", Pool: "hpc/cpu", Units: 0}) {
		t.Errorf("owners %v: want ml using nothing", m.Owners)
	}
	for _, p := range m.Pools {
		if p.Pool == "hpc/cpu" && (p.Used < 2 || p.Capacity < 2) {
			t.Errorf("pool %+v: want at least the 2 CPUs in use, of the nodes' capacity", p)
		}
	}

	// Someone raises the limit by hand: the next poll puts it back and says so.
	c.sh("sacctmgr", "--immediate", "modify", "account", "where", "name="+c.ads, "cluster="+b.cluster, "set", "GrpTRES=cpu=7")
	fixes, err = b.ApplyQuotas(c.ctx, []agent.Quota{{Team: "ads", Pool: "hpc/cpu", Units: 2}, {Team: "ads", Pool: "hpc/ram", Units: 8}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []agent.Correction{{Team: "ads", Pool: "hpc/cpu", Object: "assoc " + c.ads + " GrpTRES", Was: "cpu=7", Now: "cpu=2"}}; !slices.Equal(fixes, want) {
		t.Errorf("drift corrections %v, want %v", fixes, want)
	}

	// The team buys a third CPU: the waiting job starts; a change of want is no drift.
	if fixes, err := b.ApplyQuotas(c.ctx, []agent.Quota{{Team: "ads", Pool: "hpc/cpu", Units: 3}, {Team: "ads", Pool: "hpc/ram", Units: 8}}); err != nil || len(fixes) != 0 {
		t.Fatalf("buying a CPU: corrections %v, error %v; want none", fixes, err)
	}
	c.eventually("the second job running after the team holds 3 CPUs", func() bool { s, _ := c.jobState(second); return s == "RUNNING" })

	// A restarted agent finds a value someone changed while it was down: it puts it
	// back without calling it drift (it cannot tell who changed it) and says so.
	c.sh("sacctmgr", "--immediate", "modify", "account", "where", "name="+c.ads, "cluster="+b.cluster, "set", "GrpTRES=cpu=5")
	restarted := c.open()
	if fixes, err := restarted.ApplyQuotas(c.ctx, []agent.Quota{{Team: "ads", Pool: "hpc/cpu", Units: 3}, {Team: "ads", Pool: "hpc/ram", Units: 8}}); err != nil || len(fixes) != 0 {
		t.Fatalf("after a restart: corrections %v, error %v; want none", fixes, err)
	}
	if got := c.grpTRES(c.ads); got["cpu"] != 3 {
		t.Errorf("GrpTRES %v after the restarted agent's poll, want cpu=3", got)
	}
	if !strings.Contains(c.out.String(), "first write since the agent started") {
		t.Errorf("the restarted backend did not say it put a value back:\n%s", c.out.String())
	}
	// Its next poll knows what it set: a hand change is drift again.
	c.sh("sacctmgr", "--immediate", "modify", "account", "where", "name="+c.ads, "cluster="+b.cluster, "set", "GrpTRES=cpu=6")
	fixes, err = restarted.ApplyQuotas(c.ctx, []agent.Quota{{Team: "ads", Pool: "hpc/cpu", Units: 3}, {Team: "ads", Pool: "hpc/ram", Units: 8}})
	if want := []agent.Correction{{Team: "ads", Pool: "hpc/cpu", Object: "assoc " + c.ads + " GrpTRES", Was: "cpu=6", Now: "cpu=3"}}; err != nil || !slices.Equal(fixes, want) {
		t.Errorf("after a restart and a hand change: corrections %v, error %v; want %v", fixes, err, want)
	}
}
