package agentcmd

import (
	"fmt"
	"strings"
)

// long is the agent command's long help in the binary o describes.
func long(o Options) string {
	return fmt.Sprintf(`Follow one cluster's allocation, polling the server every --every, and drive the
cluster manager named by --backend to match it. Each poll the agent
  1. applies each team's limit per pool by the server's one rule (its holdings, quota on
     offer included until a sale settles, plus its reservations running now beyond its
     own quota), and apart from it the units granted to its best-effort tasks; takes
     back work beyond a limit when the operators' policy says so (evict after a grace);
  2. follows the reservation plan: the jobs (a reservation's request) to start and stop,
     the jobs waiting in their window, and a waiting job the plan marks "may start now"
     (it fits from now for its whole duration) started early, so the plan frees its
     planned slots;
  3. starts and stops the best-effort tasks on idle capacity (each poll of an agent is
     when the server decides which start and stop);
  4. measures what runs, and reports it all, with the agent's status (backend, drift
     corrected, errors: shown to operators on /operate), through
     POST /api/v1/clusters/{cluster}/updates.
Times are UTC, the plan's zone.

--backend is one of the backends built into this binary (%s):
  print       (the default) prints what to start and stop and confirms best-effort
              starts and stops; it runs nothing, so a task's end (done or failed) is
              for the cluster's own scheduler to report.
  simulate    (or --simulate) plays the cluster: jobs it starts run and report their
              usage (units times configuration, per pool; less with --use), jobs
              waiting in their window report their tasks, and with --finish-early or
              --fail-rate a job ends at a random moment before its planned end.
              Best-effort tasks run for a random 15m to 3h (failing at --fail-rate)
              and are reported started, done or failed; each team's own usage of its
              quota (owner_usage) follows a daily wave between 10%% and 90%% of it, so
              owners take their idle quota back and best-effort tasks on it are
              preempted. Every draw comes from --seed: the same seed, the same run.
  kubernetes, slurm: the real cluster managers; they need --config. %s carries
              every backend; the server's clearhouse agent leaves kubernetes out (so
              the server carries no Kubernetes client) and points at %s.
An unknown backend is refused, naming the known ones.

--config FILE is the cluster's configuration (YAML): its cluster name, each team's and
pool's names in the cluster manager, and the backend's own section; see
docs/agent-config.md. A bad file is refused at start as FILE:LINE: rule. With a config
file, every team and pool it maps gets a quota each poll (0 when the team holds none),
and a team or pool of the allocation it does not map is reported as an error.

Owners' own usage (everything a team's own work uses of its quota now, its
reservations' jobs included and best-effort tasks left out: a team's demand is the
larger of this and what its reservations hold, and best-effort tasks must give back
what it needs) is what the backend measures, or comes from --owner-usage FILE, re-read
at every poll, or from the standard output of --owner-usage-command, run with sh -c at
every poll (10 s at most): a JSON array [{"team":"ads","pool":"us-east/cpu","units":40}].
A source that cannot be read is printed and the poll reports everything else.

The agent prints the server's answer when a report moved reservations, put them at
risk or ended them. It runs until interrupted, for --for, or for one poll with --once.
A token the server refuses stops it at once with the server's message; other errors
are printed and retried after a backoff that doubles with each failure in a row (from
--every up to 5 minutes, with jitter); with --once they fail the command, and so do
the backend's errors in the cluster during the poll (reported all the same), and a
backend that cannot be opened at start (its cluster manager not answering): each
attempt's error is also reported to the server, shown to operators on /operate.

Every flag can also be set by an environment variable CLEARHOUSE_<FLAG>, with dashes
as underscores (--server becomes CLEARHOUSE_SERVER). A flag on the command line wins.
The token is issued on the server's side, by clearhouse agent token.`, strings.Join(o.backends(), ", "), Binary, Binary)
}

// example is the agent command's examples in the binary o describes; the kubernetes
// backend's runs clearhouse-agent, which carries it.
func example(o Options) string {
	return fmt.Sprintf(`  export CLEARHOUSE_TOKEN=$(clearhouse agent token --cluster us-east | tail -n 1)
  %[1]s --server http://127.0.0.1:8080 --cluster us-east
  %[1]s --server http://127.0.0.1:8080 --cluster us-east \
    --backend simulate --finish-early 0.3 --fail-rate 0.05 --every 2s --for 10m
  %[2]s --server http://127.0.0.1:8080 --cluster us-east \
    --backend kubernetes --config us-east.yaml`, o.Path, Binary)
}
