package labcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// run executes a command line of the lab's commands mounted as the clearhouse binary
// mounts them (share's simulate and compare under share), and returns the exit
// status: an ExitError's, else 1 for an error, printed after "clearhouse: ".
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := &cobra.Command{Use: "clearhouse", Args: cobra.NoArgs, SilenceUsage: true, SilenceErrors: true}
	share := &cobra.Command{Use: "share", Args: cobra.NoArgs}
	share.AddCommand(NewShareSimulate(Options{}), NewShareCompare(Options{}))
	root.AddCommand(NewSimulate(Options{}), NewAbacus(Options{}), share)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "clearhouse:", err)
	if ee, ok := errors.AsType[*ExitError](err); ok {
		return ee.Code
	}
	return 1
}

// runCLI runs a command line and returns its exit status, standard output and error.
func runCLI(t testing.TB, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}
