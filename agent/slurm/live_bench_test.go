package slurm

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/slurm/slurmtest"
)

// benchAccounts is how many accounts (teams) the poll benchmark maps.
const benchAccounts = 1000

// BenchmarkLivePoll is one poll of the Slurm backend as the agent's loop makes it
// (Measure, ApplyQuotas, FollowReservations, SyncTasks) against the real daemons,
// with 1,000 accounts mapped and CLEARHOUSE_SLURM_BENCH_JOBS (10,000) jobs queued
// across them, held by GrpTRES cpu=0. It also reports poll-to-limit: from the call
// that applies a new quota to sacctmgr showing it. The jobs stay queued for the next
// run (go test calls a benchmark several times): scancel --name=clearhouse-bench
// removes them.
func BenchmarkLivePoll(b *testing.B) {
	slurmtest.Require(b)
	ctx := context.Background()
	r := ExecRunner{}
	run := func(name string, args ...string) string {
		out, err := r.Run(ctx, "", name, args...)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	cluster := slurmtest.Cluster()
	accts := make([]string, benchAccounts)
	for i := range accts {
		accts[i] = fmt.Sprintf("bench%04d", i+1)
	}
	list := strings.Join(accts, ",")
	if have := run("sacctmgr", "--noheader", "--parsable2", "show", "assoc", "where", "cluster="+cluster, "account="+list, "user=root", "format=Account"); strings.Count(have, "\n") < benchAccounts {
		run("sacctmgr", "--immediate", "add", "account", list, "cluster="+cluster)
		run("sacctmgr", "--immediate", "add", "user", "root", "account="+list, "cluster="+cluster)
	}
	run("sacctmgr", "--immediate", "modify", "account", "where", "name="+list, "cluster="+cluster, "set", "GrpTRES=cpu=0,mem=0")

	jobs := 10000
	if n, err := strconv.Atoi(os.Getenv("CLEARHOUSE_SLURM_BENCH_JOBS")); err == nil {
		jobs = n
	}
	queued := strings.Count(run("squeue", "--noheader", "--name=clearhouse-bench", "--Format=JobID"), "\n")
	start := time.Now()
	for i := queued; i < jobs; i++ {
		if _, err := r.Run(ctx, "", "sbatch", "--parsable", "--job-name=clearhouse-bench", "--account="+accts[i%benchAccounts],
			"--cpus-per-task=1", "--mem=10M", "--output=/dev/null", "--wrap=true"); err != nil {
			b.Logf("queued %d of %d jobs, then: %v", i, jobs, err)
			break
		}
	}
	queued = strings.Count(run("squeue", "--noheader", "--name=clearhouse-bench", "--Format=JobID"), "\n")
	b.Logf("%d jobs queued (%s to submit the missing ones)", queued, time.Since(start).Round(time.Second))

	var yaml strings.Builder
	fmt.Fprintf(&yaml, "cluster: hpc\nslurm: {cluster: %s}\npools:\n  hpc/cpu: {tres: cpu, unit: \"1\"}\n  hpc/ram: {tres: mem, unit: \"1G\"}\nteams:\n", cluster)
	for i, a := range accts {
		fmt.Fprintf(&yaml, "  team%04d: {account: %s}\n", i+1, a)
	}
	cfg, err := agent.ParseConfig("bench.yaml", []byte(yaml.String()))
	if err != nil {
		b.Fatal(err)
	}
	timed := &timingRunner{run: r, took: map[string]time.Duration{}, calls: map[string]int{}}
	backend, err := Open(ctx, cfg, timed, nil, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	want := make([]agent.Quota, 0, 2*benchAccounts)
	for i := range accts {
		want = append(want, agent.Quota{Team: fmt.Sprintf("team%04d", i+1), Pool: "hpc/cpu"}, agent.Quota{Team: fmt.Sprintf("team%04d", i+1), Pool: "hpc/ram"})
	}
	poll := func() {
		now := time.Now()
		if _, err := backend.Measure(ctx, now); err != nil {
			b.Fatal(err)
		}
		if _, err := backend.ApplyQuotas(ctx, want); err != nil {
			b.Fatal(err)
		}
		if _, err := backend.FollowReservations(ctx, agent.Plan{Now: now}); err != nil {
			b.Fatal(err)
		}
		if _, err := backend.SyncTasks(ctx, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	poll() // settles every limit
	timed.reset()
	b.ResetTimer()
	for range b.N {
		poll()
	}
	b.StopTimer()
	b.Logf("per poll, by command (%d polls):\n%s", b.N, timed.report(b.N))
	b.ReportMetric(float64(queued), "queued-jobs")
	b.ReportMetric(benchAccounts, "accounts")

	// Poll-to-limit: team0001 buys 3 cores.
	want[0].Units = 3
	t0 := time.Now()
	if _, err := backend.ApplyQuotas(ctx, want); err != nil {
		b.Fatal(err)
	}
	for run("sacctmgr", "--noheader", "--parsable2", "show", "assoc", "where", "account=bench0001", "user=", "format=GrpTRES") != "cpu=3,mem=0\n" {
		if time.Since(t0) > time.Minute {
			b.Fatal("the new limit did not show within a minute")
		}
	}
	b.ReportMetric(float64(time.Since(t0).Milliseconds()), "poll-to-limit-ms")
	want[0].Units = 0
	if _, err := backend.ApplyQuotas(ctx, want); err != nil {
		b.Fatal(err)
	}
}

// timingRunner is a Runner that adds up the time each command (its name and the
// first words of its arguments that are not options) takes: where a poll's time goes.
// Commands run together add up their own times, so the sum can exceed the poll's.
type timingRunner struct {
	run   Runner
	mu    sync.Mutex
	took  map[string]time.Duration
	calls map[string]int
}

func (t *timingRunner) Run(ctx context.Context, stdin, name string, args ...string) (string, error) {
	key := name
	for _, a := range args {
		if len(key) > 40 {
			break
		}
		if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
			key += " " + a
		}
	}
	start := time.Now()
	out, err := t.run.Run(ctx, stdin, name, args...)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.took[key] += time.Since(start)
	t.calls[key]++
	return out, err
}

func (t *timingRunner) reset() { clear(t.took); clear(t.calls) }

// report lists each command's time per poll, the longest first.
func (t *timingRunner) report(polls int) string {
	keys := slices.SortedFunc(maps.Keys(t.took), func(a, b string) int { return cmp.Compare(t.took[b], t.took[a]) })
	var s strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&s, "  %-50s %3d calls %8.0f ms\n", k, t.calls[k]/polls, float64(t.took[k].Milliseconds())/float64(polls))
	}
	return s.String()
}
