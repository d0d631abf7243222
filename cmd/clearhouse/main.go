// Command clearhouse is the one binary of the Clearhouse compute-quota market: it
// serves the web application, applies migrations, solves auction instances, replays
// scheduler workloads and more. Run `clearhouse --help` for the list.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/clearhouse/clearhouse/audit"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// exitError carries a process exit code through cobra without printing usage.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	again := make(chan os.Signal, 1)
	go exitOnSecondSignal(ctx, stop, again, os.Stderr, os.Exit)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// exitOnSecondSignal waits for the first interrupt (ctx ends: a graceful shutdown
// begins), then exits at once with status 130 on a second one, however long the
// shutdown would still take.
func exitOnSecondSignal(ctx context.Context, stop context.CancelFunc, again chan os.Signal, stderr io.Writer, exit func(int)) {
	<-ctx.Done()
	signal.Notify(again, os.Interrupt, syscall.SIGTERM) // before stop, so no signal falls back to the default action unseen
	stop()
	<-again
	fmt.Fprintln(stderr, "clearhouse: second interrupt: exiting at once")
	exit(130)
}

// run executes the command line args and returns the process exit code. Tests call it
// directly with their own streams.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if err := unknownCommand(args); err != nil {
		fmt.Fprintln(stderr, "clearhouse:", err)
		fmt.Fprintln(stderr, hint(err))
		return 1
	}
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(audit.WithActor(ctx, cliActor())); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.err != nil && ee.err.Error() != "" {
				fmt.Fprintln(stderr, "clearhouse:", ee.err)
				if h := hint(ee.err); h != "" {
					fmt.Fprintln(stderr, h)
				}
			}
			return ee.code
		}
		fmt.Fprintln(stderr, "clearhouse:", err)
		if h := hint(err); h != "" {
			fmt.Fprintln(stderr, h)
		}
		return 1
	}
	return 0
}

// unknownCommand refuses a command line whose verb does not exist under a command
// that only groups others ("clearhouse nosuch --help", "clearhouse auction nosuch"):
// cobra answers those with the group's help and exit status 0, as if they had
// worked. It parses on a command tree of its own, so the one run is untouched.
func unknownCommand(args []string) error {
	root := newRootCmd()
	root.InitDefaultHelpCmd() // the commands cobra adds as it executes
	root.InitDefaultCompletionCmd()
	cmd, rest, err := root.Find(args)
	if err == nil && cmd.Name() == "help" && cmd.Parent() == root && len(rest) > 0 {
		// "clearhouse help nosuch": cobra says "Unknown help topic" and exits 0.
		topic, extra, err := root.Find(rest)
		switch {
		case err != nil || topic == root:
			return fmt.Errorf("unknown command %q for %q", rest[0], root.CommandPath())
		case len(extra) > 0 && !strings.HasPrefix(extra[0], "-"):
			return fmt.Errorf("unknown command %q for %q", extra[0], topic.CommandPath())
		}
		return nil
	}
	if err != nil || !cmd.HasAvailableSubCommands() {
		return nil // cobra reports its own errors
	}
	cmd.InitDefaultHelpFlag()
	if err := cmd.ParseFlags(rest); err != nil {
		return nil
	}
	if pos := cmd.Flags().Args(); len(pos) > 0 {
		return fmt.Errorf("unknown command %q for %q", pos[0], cmd.CommandPath())
	}
	return nil
}

// hint is what to do about a failed command, for the errors a newcomer meets first:
// a mistyped command or flag, and a port another program holds.
func hint(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return "Another program is listening on that address: stop it, or choose another with --addr (for example --addr " + freeAddr() + ", which is free now)."
	case strings.HasPrefix(msg, "unknown command"), strings.HasPrefix(msg, "unknown flag"), strings.HasPrefix(msg, "unknown shorthand flag"):
		return "Run 'clearhouse --help' for the commands, or 'clearhouse COMMAND --help' for a command's flags."
	}
	return ""
}

// freeAddr is a local address nothing listens on now, to suggest with --addr: the
// first free port from 8081, or one the system picks.
func freeAddr() string {
	for port := 8081; port < 8100; port++ {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			addr := l.Addr().String()
			l.Close()
			return addr
		}
	}
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		defer l.Close()
		return l.Addr().String()
	}
	return "127.0.0.1:8081"
}

// dbFlag is the database every command opens: the root's persistent --db (or
// CLEARHOUSE_DB), defaultDB unless given. A command that opens no database ignores it.
func dbFlag(cmd *cobra.Command) string { return cmd.Flag("db").Value.String() }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "clearhouse",
		Short: "An internal market for compute quota",
		Long: `Clearhouse is an internal market for compute quota: teams hold budgets, bid for
quota in clusters through a periodic ascending clock auction, and reserve short-term
capacity through a scheduler that prices and places jobs with deadlines.

Every flag can also be set by an environment variable CLEARHOUSE_<FLAG>, with dashes
as underscores (--db becomes CLEARHOUSE_DB). A flag on the command line wins.`,
		Version:       version,
		Args:          cobra.NoArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return bindEnv(cmd, os.LookupEnv)
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.PersistentFlags().String("db", defaultDB, "database: a SQLite file or a postgres:// URL")
	// Each subcommand lives in its own file as newXxxCmd(); add it here.
	root.AddCommand(
		newServeCmd(),
		newMigrateCmd(),
		newAuctionCmd(),
		newTeamCmd(),
		newUserCmd(),
		newSimulateCmd(),
		newAgentCmd(),
		newVerifyCmd(),
		newAbacusCmd(),
		newShareCmd(),
		newUtilizationCmd(),
		newCapacityCmd(),
		newNotifyCmd(),
		newHealthCmd(),
		newBackupCmd(),
		newRestoreCmd(),
		newChargeCmd(),
		newAuditCmd(),
		newExportCmd(),
	)
	return root
}
