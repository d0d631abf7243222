package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	_ "github.com/clearhouse/clearhouse/agent/simulate" // registers the simulate and print backends
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

// agentFlags is the reference agent's configuration.
type agentFlags struct {
	server, token, cluster string
	every, forDur          time.Duration
	once, simulate         bool
	failRate, finishEarly  float64
	useShare               float64
	seed                   uint64
	ownerUsage             agent.OwnerUsageSource
}

// validate checks the flags and names the one at fault.
func (f agentFlags) validate(cmd *cobra.Command) error {
	switch {
	case f.server == "":
		return errors.New("--server: required (the Clearhouse URL, e.g. http://127.0.0.1:8080)")
	case f.cluster == "":
		return errors.New("--cluster: required")
	case f.token == "":
		return errors.New("--token: required (issue one with clearhouse agent token --cluster " + f.cluster + ")")
	case f.every <= 0:
		return fmt.Errorf("--every %s: must be positive", f.every)
	case f.forDur < 0:
		return fmt.Errorf("--for %s: must not be negative", f.forDur)
	case f.failRate < 0 || f.failRate > 1:
		return fmt.Errorf("--fail-rate %g: must be a probability from 0 to 1", f.failRate)
	case f.finishEarly < 0 || f.finishEarly > 1:
		return fmt.Errorf("--finish-early %g: must be a probability from 0 to 1", f.finishEarly)
	case f.useShare <= 0 || f.useShare > 1:
		return fmt.Errorf("--use %g: must be a share above 0 and at most 1", f.useShare)
	case f.ownerUsage.File != "" && f.ownerUsage.Command != "":
		return errors.New("--owner-usage and --owner-usage-command: give one source of owners' usage")
	}
	if !f.simulate {
		for _, name := range []string{"fail-rate", "finish-early", "seed", "use"} {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s: only with --simulate", name)
			}
		}
	}
	return nil
}

func newAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the reference cluster agent: follow a cluster's reservation plan, or simulate the cluster",
		Long: `Follow one cluster's allocation of reservations, polling the server every --every,
and print the jobs (a reservation's request) to start and stop, and the jobs waiting
in their window. A waiting job the plan marks "may start now" (it fits from now for its
whole duration) is started early and the start reported, so the plan frees its
planned slots. It also prints the best-effort tasks on idle capacity to start and to
stop (preempted, cancelled, or past their job's maximum task duration); each poll of
an agent is when the server decides which best-effort tasks start and stop. Times
are UTC, the plan's zone.

With --simulate the agent plays the cluster: jobs it starts run and report their usage
(units times configuration, per pool; less with --use) at every poll, jobs waiting in their window
report their tasks, and with --finish-early or --fail-rate a job ends at a random
moment before its planned end (the same moments for the same --seed). Best-effort
tasks run for a random 15m to 3h (failing at --fail-rate) and are reported started,
done or failed; stops are confirmed; and each team's own usage of its quota
(owner_usage) follows a daily wave between 10% and 90% of the quota the allocation
lists, fixed by --seed, so owners take their idle quota back and best-effort tasks
on it are preempted. It prints the
server's answer when a report moved reservations, put them at risk or ended them.

Without --simulate the agent confirms the best-effort starts and stops it prints; a
task's end (done or failed) is for the cluster's own scheduler to report through
POST /api/v1/clusters/{cluster}/updates, since the reference agent does not run tasks.

Owners' own usage (everything a team's own work uses of its quota now, its
reservations' jobs included and best-effort tasks left out: a team's demand is the
larger of this and what its reservations hold, and best-effort tasks must give back
what it needs) comes from --owner-usage FILE, re-read at every
poll, or from the standard output of --owner-usage-command, run with sh -c at every
poll (10 s at most): a JSON array [{"team":"ads","pool":"us-east/cpu","units":40}].
Without either, a real agent reports none (idle quota is then all quota not
reserved) and a simulating one simulates it. A source that cannot be read is
printed and the poll reports everything else.

The agent runs until interrupted, for --for, or for one poll with --once. A token the
server refuses stops it at once with the server's message; other errors are printed
and retried at the next poll (with --once they fail the command).`,
		Example: `  export CLEARHOUSE_TOKEN=$(clearhouse agent token --cluster us-east | tail -n 1)
  clearhouse agent --server http://127.0.0.1:8080 --cluster us-east
  clearhouse agent --server http://127.0.0.1:8080 --cluster us-east \
    --simulate --finish-early 0.3 --fail-rate 0.05 --every 2s --for 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(cmd); err != nil {
				return &exitError{2, err}
			}
			client, err := agent.NewClient(f.server, f.cluster, f.token)
			if err != nil {
				return &exitError{2, err}
			}
			name := "print"
			if f.simulate {
				name = "simulate"
			}
			kind, err := agent.Lookup(name)
			if err != nil {
				return &exitError{2, err}
			}
			backend, err := kind.Open(cmd.Context(), agent.Setup{Cluster: f.cluster, Out: cmd.OutOrStdout(),
				Simulate: agent.Simulation{Seed: f.seed, FailRate: f.failRate, FinishEarly: f.finishEarly, Use: f.useShare}})
			if err != nil {
				return err
			}
			defer backend.Close()
			loop := &agent.Loop{Client: client, Backend: backend, Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr(),
				Now: time.Now, OwnerUsage: f.ownerUsage, Version: version, Every: f.every, MaxBackoff: max(f.every, 5*time.Minute)}
			if f.once {
				return loop.Poll(cmd.Context())
			}
			var stop <-chan time.Time
			if f.forDur > 0 {
				timer := time.NewTimer(f.forDur)
				defer timer.Stop()
				stop = timer.C
			}
			return loop.Run(cmd.Context(), stop)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.server, "server", "", "the Clearhouse server's URL (required)")
	fl.StringVar(&f.token, "token", "", "the cluster's agent token (required; see clearhouse agent token)")
	fl.StringVar(&f.cluster, "cluster", "", "the cluster this agent runs (required)")
	fl.DurationVar(&f.every, "every", 10*time.Second, "how often to poll the allocation")
	fl.BoolVar(&f.once, "once", false, "poll (and report) once, then exit")
	fl.BoolVar(&f.simulate, "simulate", false, "simulate the cluster: run the jobs and report usage, ends and waiting tasks")
	fl.Float64Var(&f.failRate, "fail-rate", 0, "with --simulate, the probability that a job fails before its planned end")
	fl.Float64Var(&f.finishEarly, "finish-early", 0, "with --simulate, the probability that a job finishes before its planned end")
	fl.Uint64Var(&f.seed, "seed", 1, "with --simulate, the seed of the random ends")
	fl.Float64Var(&f.useShare, "use", 1, "with --simulate, the share of its units a running job uses (below 1, the rest goes back to the plan each slot)")
	fl.DurationVar(&f.forDur, "for", 0, "stop after this long (0: run until interrupted)")
	fl.StringVar(&f.ownerUsage.File, "owner-usage", "", `a JSON file of owners' own usage, re-read at every poll: [{"team","pool","units"}]`)
	fl.StringVar(&f.ownerUsage.Command, "owner-usage-command", "", "a command (sh -c) printing owners' own usage as --owner-usage's JSON, run at every poll")
	f.ownerUsage.Timeout = 10 * time.Second
	cmd.AddCommand(newAgentTokenCmd())
	return cmd
}

func newAgentTokenCmd() *cobra.Command {
	var dsn, cluster, name string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Issue a cluster agent's API token; the token is printed on the last line",
		Long: `Issue a bearer token for one cluster's agent: it reads that cluster's allocation and
reports its updates, and nothing else. The token is shown once, on the last line of
the output; only its hash is stored.`,
		Example: `  TOKEN=$(clearhouse agent token --cluster us-east | tail -n 1)`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, dsn, func(db *store.DB) error {
				id := exchange.NewIdentity(db, time.Now, 0)
				if name == "" {
					name = "agent " + cluster + " " + time.Now().UTC().Format(time.DateOnly)
				}
				token, _, err := id.IssueAgentToken(cmd.Context(), cluster, name)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "agent token for cluster %s, shown once:\n%s\n", cluster, token)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&dsn, "db", defaultDB, "SQLite file or PostgreSQL URL")
	f.StringVar(&cluster, "cluster", "", "the cluster the agent runs (required)")
	f.StringVar(&name, "name", "", "a label for the token")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}
