package slurm

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// Measurements never go stale (issue 37, hole 7 of the issue): once a team's last job
// ended, its own usage is measured 0 (a row of 0 for every mapped team and pool, so
// the server replaces the old figure); while slurmctld cannot be reached, Measure
// fails and returns no rows at all, rather than old or partial ones.
func TestLiveMeasureAfterLastJobAndWhenSlurmIsDown(t *testing.T) {
	c := newLiveCluster(t)
	b := c.backend
	if _, err := b.ApplyQuotas(c.ctx, []agent.Quota{{Team: "ads", Pool: "hpc/cpu", Units: 4}, {Team: "ads", Pool: "hpc/ram", Units: 4}}); err != nil {
		t.Fatal(err)
	}
	id := c.sbatch("--account="+c.ads, "--cpus-per-task=3", "--mem=1G", "--wrap=sleep 300")
	c.eventually("the team's job running", func() bool { s, _ := c.jobState(id); return s == "RUNNING" })
	m, err := b.Measure(c.ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(m.Owners, agent.OwnerUsage{Team: "ads", Pool: "hpc/cpu", Units: 3}) {
		t.Fatalf("owners %v: want ads using 3 cores", m.Owners)
	}
	c.sh("scancel", id)
	c.eventually("the team's last job gone", func() bool { s, _ := c.jobState(id); return s != "RUNNING" && s != "COMPLETING" })
	m, err = b.Measure(c.ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, pool := range []string{"hpc/cpu", "hpc/ram", "hpc/gpu"} {
		for _, team := range []string{"ads", "ml"} {
			if !slices.Contains(m.Owners, agent.OwnerUsage{Team: team, Pool: pool, Units: 0}) {
				t.Errorf("owners %v: want a row of 0 for %s in %s after its last job ended", m.Owners, team, pool)
			}
		}
	}

	// slurmctld unreachable: the same slurm.conf with a port nothing listens on, and a
	// MessageTimeout of 2 s instead of the default 10: a Slurm command tries to
	// connect for about that long before it says it cannot (9 s, now 1 s).
	dir := t.TempDir()
	conf, err := os.ReadFile(os.Getenv("SLURM_CONF"))
	if err != nil {
		t.Fatal(err)
	}
	down := regexp.MustCompile(`(?m)^SlurmctldPort=.*$`).ReplaceAll(conf, []byte("SlurmctldPort=6899"))
	down = append(regexp.MustCompile(`(?m)^MessageTimeout=.*$`).ReplaceAll(down, nil), "\nMessageTimeout=2\n"...)
	for _, f := range []string{"gres.conf", "cgroup.conf"} {
		if data, err := os.ReadFile(filepath.Join(filepath.Dir(os.Getenv("SLURM_CONF")), f)); err == nil {
			_ = os.WriteFile(filepath.Join(dir, f), data, 0o600)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "slurm.conf"), down, 0o600); err != nil {
		t.Fatal(err)
	}
	live := b.run
	b.run = ExecRunner{Env: []string{"SLURM_CONF=" + filepath.Join(dir, "slurm.conf")}}
	// The cleanup lists the test's reservations through this backend: on the live
	// cluster, not the unreachable one (where scontrol waited 59 s to say it could
	// not connect).
	defer func() { b.run = live }()
	m, err = b.Measure(c.ctx, time.Now())
	if err == nil || !strings.Contains(err.Error(), "Unable to contact slurm controller") {
		t.Errorf("Measure with slurmctld unreachable: error %v, want it to say so", err)
	}
	if len(m.Pools)+len(m.Owners) != 0 {
		t.Errorf("Measure with slurmctld unreachable returned %d pools and %d owners' rows, want none", len(m.Pools), len(m.Owners))
	}
}
