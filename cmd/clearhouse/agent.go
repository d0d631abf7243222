package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store"
)

// agentFlags is the reference agent's configuration.
type agentFlags struct {
	server, token, cluster string
	backend, config        string
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
	if f.simulate {
		if cmd.Flags().Changed("backend") && f.backend != "simulate" {
			return fmt.Errorf("--simulate and --backend %s: --simulate means --backend simulate; give one", f.backend)
		}
	}
	if f.backendName() != "simulate" {
		for _, name := range []string{"fail-rate", "finish-early", "seed", "use"} {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s: only with --backend simulate", name)
			}
		}
	}
	return nil
}

// backendName is the backend to run: --backend, or simulate with --simulate.
func (f agentFlags) backendName() string {
	if f.simulate {
		return "simulate"
	}
	return f.backend
}

// openBackend looks the backend up, loads and validates the config file for it, and
// opens it. Errors in the flags or the file are usage errors (exit status 2). Unless
// --once, a backend that cannot be opened (its cluster manager unreachable) is tried
// again with backoff, each failure reported through client (agent.Opener).
func (f agentFlags) openBackend(cmd *cobra.Command, client *agent.Client) (agent.Backend, *agent.Config, error) {
	kind, err := agent.Lookup(f.backendName())
	if err != nil {
		return nil, nil, &exitError{2, fmt.Errorf("--backend: %w", err)}
	}
	var cfg *agent.Config
	switch {
	case f.config != "":
		if cfg, err = agent.LoadConfig(f.config, f.cluster, kind); err != nil {
			return nil, nil, &exitError{2, err}
		}
	case kind.NeedsConfig:
		return nil, nil, &exitError{2, fmt.Errorf("--config: required by --backend %s (see docs/agent-config.md)", kind.Name)}
	}
	setup := agent.Setup{Cluster: f.cluster, Config: cfg, Out: cmd.OutOrStdout(),
		Simulate: agent.Simulation{Seed: f.seed, FailRate: f.failRate, FinishEarly: f.finishEarly, Use: f.useShare}}
	open := func(ctx context.Context) (agent.Backend, error) { return kind.Open(ctx, setup) }
	var b agent.Backend
	if f.once {
		b, err = open(cmd.Context())
	} else {
		ctx := cmd.Context()
		if f.forDur > 0 { // --for bounds the attempts too
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, f.forDur)
			defer cancel()
		}
		b, err = agent.Opener{Name: kind.Name, Open: open, Client: client, Version: version, ErrOut: cmd.ErrOrStderr(),
			Every: f.every, Max: max(f.every, 5*time.Minute)}.Run(ctx)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--backend %s: %w", kind.Name, err)
	}
	return b, cfg, nil
}

// agentLong is the agent command's long help.
const agentLong = `Follow one cluster's allocation, polling the server every --every, and drive the
cluster manager named by --backend to match it. Each poll the agent
  1. applies each team's quota: its holdings plus its reservations running now, per pool;
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

--backend is one of the backends built into this binary:
  print       (the default) prints what to start and stop and confirms best-effort
              starts and stops; it runs nothing, so a task's end (done or failed) is
              for the cluster's own scheduler to report.
  simulate    (or --simulate) plays the cluster: jobs it starts run and report their
              usage (units times configuration, per pool; less with --use), jobs
              waiting in their window report their tasks, and with --finish-early or
              --fail-rate a job ends at a random moment before its planned end.
              Best-effort tasks run for a random 15m to 3h (failing at --fail-rate)
              and are reported started, done or failed; each team's own usage of its
              quota (owner_usage) follows a daily wave between 10% and 90% of it, so
              owners take their idle quota back and best-effort tasks on it are
              preempted. Every draw comes from --seed: the same seed, the same run.
  kubernetes, slurm: the real cluster managers, where built in; they need --config.
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
attempt's error is also reported to the server, shown to operators on /operate.`

// agentExample is the agent command's examples.
const agentExample = `  export CLEARHOUSE_TOKEN=$(clearhouse agent token --cluster us-east | tail -n 1)
  clearhouse agent --server http://127.0.0.1:8080 --cluster us-east
  clearhouse agent --server http://127.0.0.1:8080 --cluster us-east \
    --backend simulate --finish-early 0.3 --fail-rate 0.05 --every 2s --for 10m
  clearhouse agent --server http://127.0.0.1:8080 --cluster us-east \
    --backend kubernetes --config us-east.yaml`

// newAgentCmd returns the agent command, with its token subcommand.
func newAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:     "agent",
		Short:   "Run a cluster's agent: enforce its quotas, follow its reservation plan and best-effort tasks, or simulate the cluster",
		Long:    agentLong,
		Example: agentExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd)
		},
	}
	f.register(cmd.Flags())
	cmd.AddCommand(newAgentTokenCmd())
	return cmd
}

// run validates the flags, opens the backend and runs the agent's loop: one poll
// with --once, else until interrupted or for --for. Errors in the flags are usage
// errors (exit status 2).
func (f agentFlags) run(cmd *cobra.Command) error {
	if err := f.validate(cmd); err != nil {
		return &exitError{2, err}
	}
	client, err := agent.NewClient(f.server, f.cluster, f.token)
	if err != nil {
		return &exitError{2, err}
	}
	backend, cfg, err := f.openBackend(cmd, client)
	if err != nil {
		return err
	}
	defer backend.Close()
	loop := &agent.Loop{Client: client, Backend: backend, Config: cfg, Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr(),
		Now: time.Now, OwnerUsage: f.ownerUsage, Version: version, Every: f.every, MaxBackoff: max(f.every, 5*time.Minute)}
	if f.once {
		if err := loop.Poll(cmd.Context()); err != nil {
			return err
		}
		if errs := loop.PollErrors(); len(errs) > 0 {
			return fmt.Errorf("--backend %s: %d errors in the cluster this poll (printed above, reported to the server)", backend.Name(), len(errs))
		}
		return nil
	}
	var stop <-chan time.Time
	if f.forDur > 0 {
		timer := time.NewTimer(f.forDur)
		defer timer.Stop()
		stop = timer.C
	}
	return loop.Run(cmd.Context(), stop)
}

// register defines the agent's flags on fl, in the order help lists them, and sets
// the owners' usage command's timeout.
func (f *agentFlags) register(fl *pflag.FlagSet) {
	f.registerServer(fl)
	f.registerBackend(fl)
	f.registerSimulation(fl)
	fl.DurationVar(&f.forDur, "for", 0, "stop after this long (0: run until interrupted)")
	f.registerOwnerUsage(fl)
}

// registerServer defines the flags of the server to poll, the cluster and how
// often: --server, --token, --cluster, --every and --once.
func (f *agentFlags) registerServer(fl *pflag.FlagSet) {
	fl.StringVar(&f.server, "server", "", "the Clearhouse server's URL (required)")
	fl.StringVar(&f.token, "token", "", "the cluster's agent token (required; see clearhouse agent token)")
	fl.StringVar(&f.cluster, "cluster", "", "the cluster this agent runs (required)")
	fl.DurationVar(&f.every, "every", 10*time.Second, "how often to poll the allocation")
	fl.BoolVar(&f.once, "once", false, "poll (and report) once, then exit")
}

// registerBackend defines the flags of the cluster manager to drive: --backend,
// --config and --simulate.
func (f *agentFlags) registerBackend(fl *pflag.FlagSet) {
	fl.StringVar(&f.backend, "backend", "print", "the cluster manager to drive: "+strings.Join(agent.Kinds(), ", ")+" (kubernetes and slurm where built in)")
	fl.StringVar(&f.config, "config", "", "the cluster's config file (YAML: teams and pools to the cluster's names; see docs/agent-config.md)")
	fl.BoolVar(&f.simulate, "simulate", false, "the same as --backend simulate")
}

// registerSimulation defines the flags of --backend simulate: --fail-rate,
// --finish-early, --seed and --use.
func (f *agentFlags) registerSimulation(fl *pflag.FlagSet) {
	fl.Float64Var(&f.failRate, "fail-rate", 0, "with --backend simulate, the probability that a job fails before its planned end")
	fl.Float64Var(&f.finishEarly, "finish-early", 0, "with --backend simulate, the probability that a job finishes before its planned end")
	fl.Uint64Var(&f.seed, "seed", 1, "with --backend simulate, the seed of every random draw (the same seed, the same run)")
	fl.Float64Var(&f.useShare, "use", 1, "with --backend simulate, the share of its units a running job uses (below 1, the rest goes back to the plan each slot)")
}

// registerOwnerUsage defines the flags of owners' own usage (--owner-usage and
// --owner-usage-command) and sets the command's timeout.
func (f *agentFlags) registerOwnerUsage(fl *pflag.FlagSet) {
	fl.StringVar(&f.ownerUsage.File, "owner-usage", "", `a JSON file of owners' own usage, re-read at every poll: [{"team","pool","units"}]`)
	fl.StringVar(&f.ownerUsage.Command, "owner-usage-command", "", "a command (sh -c) printing owners' own usage as --owner-usage's JSON, run at every poll")
	f.ownerUsage.Timeout = 10 * time.Second
}

func newAgentTokenCmd() *cobra.Command {
	var cluster, name string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Issue a cluster agent's API token; the token is printed on the last line",
		Long: `Issue a bearer token for one cluster's agent: it reads that cluster's allocation and
reports its updates, and nothing else. The token is shown once, on the last line of
the output; only its hash is stored.`,
		Example: `  TOKEN=$(clearhouse agent token --cluster us-east | tail -n 1)`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, func(db *store.DB) error {
				id := identity.NewIdentity(db, time.Now, 0)
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
	f.StringVar(&cluster, "cluster", "", "the cluster the agent runs (required)")
	f.StringVar(&name, "name", "", "a label for the token")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}
