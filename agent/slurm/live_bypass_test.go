package slurm

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// The best-effort QOS is no way around a team's quota (issue 37, hole 1): a team's own
// user (not the agent's) cannot submit in the QOS, under its own account nor under
// its best-effort account; best-effort tasks run under the best-effort account only
// up to the market's grant, which Slurm enforces; the team's own GrpTRES is exactly
// its units and never grows because of the tasks; no write is counted as drift.
func TestLiveBestEffortQOSIsNoWayAroundQuota(t *testing.T) {
	c := newLiveCluster(t)
	b := c.backend
	c.addTeamUser(c.ads)
	c.addTeamUser(c.ml)
	quotas := []agent.Quota{{Team: "ads", Pool: "hpc/cpu", Units: 2}, {Team: "ads", Pool: "hpc/ram", Units: 8}, {Team: "ml", Pool: "hpc/cpu", Units: 0}}
	if fixes, err := b.ApplyQuotas(c.ctx, quotas); err != nil || len(fixes) != 0 {
		t.Fatalf("first apply: corrections %v, error %v; want none (a first write is no drift)", fixes, err)
	}

	// The team's user asks for the best-effort QOS, under its account and under the
	// agent's best-effort account: both refused by Slurm.
	for _, acct := range []string{c.ads, BestEffortAccount(c.ads)} {
		out, err := c.sbatchAs("--account="+acct, "--qos="+DefaultQOS, "--cpus-per-task=8", "--wrap=sleep 300")
		t.Logf("the team's user: sbatch --account=%s --qos=%s: %q, %v", acct, DefaultQOS, out, err)
		if err == nil {
			state, reason := c.jobState(out)
			c.eventually("the team user's best-effort job held by a limit", func() bool {
				state, reason = c.jobState(out)
				return state == "PENDING" && strings.Contains(reason, "Limit")
			})
			t.Logf("account %s: job %s %s (%s)", acct, out, state, reason)
		} else if !strings.Contains(err.Error(), "Invalid qos") && !strings.Contains(err.Error(), "Invalid account") {
			t.Fatalf("account %s: sbatch refused for another reason: %v", acct, err)
		}
	}
	// Its own work within its quota runs (the user is a real member of the account).
	own, err := c.sbatchAs("--account="+c.ads, "--cpus-per-task=2", "--mem=1G", "--wrap=sleep 300")
	if err != nil {
		t.Fatal(err)
	}
	c.eventually("the team user's own job running", func() bool { s, _ := c.jobState(own); return s == "RUNNING" })

	// ml is granted 2 CPUs for one task; a second task beyond the grant waits for the
	// best-effort account's limit.
	grant := append(slices.Clone(quotas), agent.Quota{Team: "ml", Pool: "hpc/cpu", Units: 0, BestEffort: 2}, agent.Quota{Team: "ml", Pool: "hpc/ram", BestEffort: 2})
	if fixes, err := b.ApplyQuotas(c.ctx, grant); err != nil || len(fixes) != 0 {
		t.Fatalf("granting best-effort: corrections %v, error %v; want none (want changed)", fixes, err)
	}
	if got := c.grpTRES(BestEffortAccount(c.ml)); got["cpu"] != 2 || got["mem"] != 2048 {
		t.Fatalf("GrpTRES of %s %v, want cpu=2, mem=2G (the grant)", BestEffortAccount(c.ml), got)
	}
	base := 770000 + time.Now().UnixNano()%10000
	task := func(id int64) agent.Task {
		return agent.Task{ID: id, Job: 7, Team: "ml", Configuration: map[string]int64{"hpc/cpu": 2, "hpc/ram": 1},
			Workload: &agent.Workload{Slurm: &agent.SlurmWorkload{Command: "sleep 300"}}}
	}
	first, second := task(base), task(base+1)
	if _, err := b.SyncTasks(c.ctx, []agent.Task{first, second}, nil); err != nil {
		t.Fatal(err)
	}
	jobOf := func(task int64) (state, reason, acct string) {
		out := c.sh("squeue", "--noheader", "--name="+TaskJobName(task), "--Format=State:|,Reason:|,Account:")
		f := strings.Split(out, "|")
		for len(f) < 3 {
			f = append(f, "")
		}
		return f[0], f[1], f[2]
	}
	c.eventually("one task running and the other held by the grant", func() bool {
		s1, _, a1 := jobOf(first.ID)
		s2, r2, _ := jobOf(second.ID)
		running, held := s1 == "RUNNING", s2 == "PENDING" && r2 == "AssocGrpCpuLimit"
		if s2 == "RUNNING" {
			running, held = true, s1 == "PENDING"
		}
		return running && held && strings.EqualFold(a1, BestEffortAccount(c.ml))
	})
	if fixes, err := b.ApplyQuotas(c.ctx, grant); err != nil || len(fixes) != 0 {
		t.Fatalf("apply with a task running: corrections %v, error %v; want none", fixes, err)
	}
	if got := c.grpTRES(c.ml); got["cpu"] != 0 {
		t.Errorf("ml's own GrpTRES %v with its task running, want cpu=0: exactly its units", got)
	}
	if got := c.grpTRES(c.ads); got["cpu"] != 2 {
		t.Errorf("ads's own GrpTRES %v, want cpu=2: exactly its units", got)
	}
	m, err := b.Measure(c.ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(m.Owners, agent.OwnerUsage{Team: "ml", Pool: "hpc/cpu", Units: 0}) {
		t.Errorf("owners %v: a best-effort task is not its team's own usage", m.Owners)
	}

	// Someone raises the best-effort account's limit by hand: put back, and that is drift.
	c.sh("sacctmgr", "--immediate", "modify", "account", "where", "name="+BestEffortAccount(c.ml), "cluster="+b.cluster, "set", "GrpTRES=cpu=9")
	fixes, err := b.ApplyQuotas(c.ctx, grant)
	want := agent.Correction{Team: "ml", Pool: "hpc/cpu", Object: "assoc " + BestEffortAccount(c.ml) + " GrpTRES", Was: "cpu=9", Now: "cpu=2"}
	if err != nil || !slices.Equal(fixes, []agent.Correction{want}) {
		t.Errorf("after a hand change: corrections %v, error %v; want %v", fixes, err, want)
	}

	// Someone gives ads's account the QOS back: the next poll takes it away again.
	c.sh("sacctmgr", "--immediate", "modify", "account", "where", "name="+c.ads, "cluster="+b.cluster, "set", "QOS+="+DefaultQOS)
	fixes, err = b.ApplyQuotas(c.ctx, grant)
	if err != nil {
		t.Fatal(err)
	}
	if len(fixes) != 1 || fixes[0].Object != "assoc "+c.ads+" QOS" || !strings.Contains(fixes[0].Was, DefaultQOS) || strings.Contains(fixes[0].Now, DefaultQOS) {
		t.Errorf("corrections %v: want ads's QOS list put back without %s, as drift", fixes, DefaultQOS)
	}
	if qos := c.sh("sacctmgr", "--noheader", "--parsable2", "show", "assoc", "where", "account="+c.ads, "format=QOS"); strings.Contains(qos, DefaultQOS) {
		t.Errorf("ads's associations' QOS %q after a poll, want no %s", qos, DefaultQOS)
	}
	if _, err := c.sbatchAs("--account="+c.ads, "--qos="+DefaultQOS, "--cpus-per-task=1", "--wrap=sleep 300"); err == nil || !strings.Contains(err.Error(), "Invalid qos") {
		t.Errorf("the team's user submitting in %s after the poll: %v, want refused (Invalid qos)", DefaultQOS, err)
	}
}
