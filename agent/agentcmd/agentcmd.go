// Package agentcmd is the cluster agent's command line, shared by the two binaries
// that run it: clearhouse-agent, which carries every backend, and the server's
// `clearhouse agent`, which leaves out the backends whose client libraries would
// weigh on the server (kubernetes: its client and Kueue's API are 450 packages).
// It owns the agent's flags, their CLEARHOUSE_* variables, its help and its exit
// statuses; the poll loop and the backends are package agent's and its
// subpackages'.
package agentcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/clearhouse/clearhouse/agent"
)

// Binary is the name of the agent's own binary, which carries every backend.
const Binary = "clearhouse-agent"

// Options says which binary the agent command is part of.
type Options struct {
	// Path is the command as a user types it: "clearhouse agent" in the server's
	// binary, "clearhouse-agent" in the agent's own. Help and examples use it.
	Path string
	// Version is the binary's version, reported to the server with each report.
	Version string
	// Backends are the backends this binary offers, each registered (agent.Register)
	// by an import of its package; empty means every registered one.
	Backends []string
	// Elsewhere names, for a backend this binary leaves out, what to run instead;
	// --backend with it is refused with that advice.
	Elsewhere map[string]string
}

// backends is the sorted list of the backends the binary offers.
func (o Options) backends() []string {
	if len(o.Backends) == 0 {
		return agent.Kinds()
	}
	return slices.Sorted(slices.Values(o.Backends))
}

// lookup returns the backend kind of that name if the binary offers it; else an
// error naming what to run instead, or the known backends.
func (o Options) lookup(name string) (agent.Kind, error) {
	if !slices.Contains(o.backends(), name) {
		if instead, ok := o.Elsewhere[name]; ok {
			return agent.Kind{}, fmt.Errorf("backend %q: not built into %s: %s", name, strings.Fields(o.Path)[0], instead)
		}
		return agent.Kind{}, fmt.Errorf("backend %q: not known (known: %s)", name, strings.Join(o.backends(), ", "))
	}
	return agent.Lookup(name)
}

// ExitError carries a process exit status through cobra: 2 for a usage error (a bad
// flag, config file or backend name).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// New returns the agent command: follow one cluster's allocation and drive its
// cluster manager with one of o's backends. Its errors in flags, the config file or
// the backend's name are *ExitError with status 2.
func New(o Options) *cobra.Command {
	var f flags
	path := strings.Fields(o.Path)
	cmd := &cobra.Command{
		Use:     path[len(path)-1],
		Short:   "Run a cluster's agent: enforce its quotas, follow its reservation plan and best-effort tasks, or simulate the cluster",
		Long:    long(o),
		Example: example(o),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, o)
		},
	}
	f.register(cmd.Flags(), o.backends())
	return cmd
}

// BindEnv sets every flag of cmd that was not given on the command line from the
// environment variable CLEARHOUSE_<NAME> (upper case, dashes as underscores), so that
// one configuration can come from flags, the environment, or both. Both binaries
// apply this one rule to every command.
func BindEnv(cmd *cobra.Command, lookup func(string) (string, bool)) error {
	var firstErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if firstErr != nil || f.Changed || f.Name == "help" || f.Name == "version" {
			return
		}
		name := "CLEARHOUSE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := lookup(name); ok {
			if err := cmd.Flags().Set(f.Name, v); err != nil {
				firstErr = fmt.Errorf("%s=%q: %w", name, v, err)
			}
		}
	})
	return firstErr
}

// Root returns clearhouse-agent's command: the agent command as a binary's root, with
// --version and its flags read from CLEARHOUSE_* too.
func Root(o Options) *cobra.Command {
	root := New(o)
	root.Version = o.Version
	root.SilenceUsage, root.SilenceErrors = true, true
	root.CompletionOptions.DisableDefaultCmd = true
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return BindEnv(cmd, os.LookupEnv) }
	return root
}

// Run executes clearhouse-agent's command line args with o and returns the process
// exit status: 0, 1 for a failure, 2 for a usage error. Errors go to stderr after
// the binary's name.
func Run(ctx context.Context, o Options, args []string, stdout, stderr io.Writer) int {
	root := Root(o)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code := 1
	var ee *ExitError
	if errors.As(err, &ee) {
		code = ee.Code
	}
	fmt.Fprintf(stderr, "%s: %v\n", o.Path, err)
	if msg := err.Error(); strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") || strings.HasPrefix(msg, "unknown shorthand flag") {
		fmt.Fprintf(stderr, "Run '%s --help' for its flags.\n", o.Path)
	}
	return code
}

// Main runs clearhouse-agent's command line (os.Args) until it ends or is
// interrupted, and exits with its status. The first SIGINT or SIGTERM stops the agent
// (its context ends); a second one ends the process at once.
func Main(o Options) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // the signals' default action again: a second one ends the process
	}()
	code := Run(ctx, o, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
