package agentcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/clearhouse/clearhouse/agent"
)

// flags is the agent's configuration, from its command line and CLEARHOUSE_*.
type flags struct {
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
func (f flags) validate(cmd *cobra.Command) error {
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
func (f flags) backendName() string {
	if f.simulate {
		return "simulate"
	}
	return f.backend
}

// openBackend looks the backend up among the binary's, loads and validates the config
// file for it, and opens it. Errors in the flags or the file are usage errors (exit
// status 2). Unless --once, a backend that cannot be opened (its cluster manager
// unreachable) is tried again with backoff, each failure reported through client
// (agent.Opener).
func (f flags) openBackend(cmd *cobra.Command, o Options, client *agent.Client) (agent.Backend, *agent.Config, error) {
	kind, err := o.lookup(f.backendName())
	if err != nil {
		return nil, nil, &ExitError{2, fmt.Errorf("--backend: %w", err)}
	}
	var cfg *agent.Config
	switch {
	case f.config != "":
		if cfg, err = agent.LoadConfig(f.config, f.cluster, kind); err != nil {
			return nil, nil, &ExitError{2, err}
		}
	case kind.NeedsConfig:
		return nil, nil, &ExitError{2, fmt.Errorf("--config: required by --backend %s (see docs/agent-config.md)", kind.Name)}
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
		b, err = agent.Opener{Name: kind.Name, Open: open, Client: client, Version: o.Version, ErrOut: cmd.ErrOrStderr(),
			Every: f.every, Max: max(f.every, 5*time.Minute)}.Run(ctx)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--backend %s: %w", kind.Name, err)
	}
	return b, cfg, nil
}

// run validates the flags, opens the backend and runs the agent's loop: one poll
// with --once, else until interrupted or for --for. Errors in the flags are usage
// errors (exit status 2).
func (f flags) run(cmd *cobra.Command, o Options) error {
	if err := f.validate(cmd); err != nil {
		return &ExitError{2, err}
	}
	client, err := agent.NewClient(f.server, f.cluster, f.token)
	if err != nil {
		return &ExitError{2, err}
	}
	backend, cfg, err := f.openBackend(cmd, o, client)
	if err != nil {
		return err
	}
	defer backend.Close()
	loop := &agent.Loop{Client: client, Backend: backend, Config: cfg, Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr(),
		Now: time.Now, OwnerUsage: f.ownerUsage, Version: o.Version, Every: f.every, MaxBackoff: max(f.every, 5*time.Minute)}
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
// the owners' usage command's timeout; backends are the binary's, for --backend's
// help.
func (f *flags) register(fl *pflag.FlagSet, backends []string) {
	f.registerServer(fl)
	f.registerBackend(fl, backends)
	f.registerSimulation(fl)
	fl.DurationVar(&f.forDur, "for", 0, "stop after this long (0: run until interrupted)")
	f.registerOwnerUsage(fl)
}

// registerServer defines the flags of the server to poll, the cluster and how
// often: --server, --token, --cluster, --every and --once.
func (f *flags) registerServer(fl *pflag.FlagSet) {
	fl.StringVar(&f.server, "server", "", "the Clearhouse server's URL (required)")
	fl.StringVar(&f.token, "token", "", "the cluster's agent token (required; see clearhouse agent token)")
	fl.StringVar(&f.cluster, "cluster", "", "the cluster this agent runs (required)")
	fl.DurationVar(&f.every, "every", 10*time.Second, "how often to poll the allocation")
	fl.BoolVar(&f.once, "once", false, "poll (and report) once, then exit")
}

// registerBackend defines the flags of the cluster manager to drive: --backend,
// --config and --simulate.
func (f *flags) registerBackend(fl *pflag.FlagSet, backends []string) {
	fl.StringVar(&f.backend, "backend", "print", "the cluster manager to drive: "+strings.Join(backends, ", "))
	fl.StringVar(&f.config, "config", "", "the cluster's config file (YAML: teams and pools to the cluster's names; see docs/agent-config.md)")
	fl.BoolVar(&f.simulate, "simulate", false, "the same as --backend simulate")
}

// registerSimulation defines the flags of --backend simulate: --fail-rate,
// --finish-early, --seed and --use.
func (f *flags) registerSimulation(fl *pflag.FlagSet) {
	fl.Float64Var(&f.failRate, "fail-rate", 0, "with --backend simulate, the probability that a job fails before its planned end")
	fl.Float64Var(&f.finishEarly, "finish-early", 0, "with --backend simulate, the probability that a job finishes before its planned end")
	fl.Uint64Var(&f.seed, "seed", 1, "with --backend simulate, the seed of every random draw (the same seed, the same run)")
	fl.Float64Var(&f.useShare, "use", 1, "with --backend simulate, the share of its units a running job uses (below 1, the rest goes back to the plan each slot)")
}

// registerOwnerUsage defines the flags of owners' own usage (--owner-usage and
// --owner-usage-command) and sets the command's timeout.
func (f *flags) registerOwnerUsage(fl *pflag.FlagSet) {
	fl.StringVar(&f.ownerUsage.File, "owner-usage", "", `a JSON file of owners' own usage, re-read at every poll: [{"team","pool","units"}]`)
	fl.StringVar(&f.ownerUsage.Command, "owner-usage-command", "", "a command (sh -c) printing owners' own usage as --owner-usage's JSON, run at every poll")
	f.ownerUsage.Timeout = 10 * time.Second
}
