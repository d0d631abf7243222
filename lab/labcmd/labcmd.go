// Package labcmd is the command line of the research tools over the engines:
// `simulate` (the reservation scheduler's algorithms replayed on a workload), `share
// simulate` and `share compare` (CloudShare's fairness experiment) and `abacus`
// (the Abacus auction and its paper's experiments). Each command parses its flags,
// runs package lab (or sharing/abacus) and prints a table, JSON or a report;
// cmd/clearhouse mounts them, with its own file handling (Options).
package labcmd

import (
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// Options are what the binary lends the commands: how an input file is opened and
// an output file (--report) written. The zero Options open files with os.Open and
// write them with os.WriteFile, "-" being standard input or output.
type Options struct {
	// Open opens a file for reading, or standard input for "-".
	Open func(cmd *cobra.Command, path string) (io.ReadCloser, error)
	// WriteOut writes data where an output flag points, or to standard output for "-".
	WriteOut func(cmd *cobra.Command, path string, data []byte) error
}

func (o Options) open(cmd *cobra.Command, path string) (io.ReadCloser, error) {
	if o.Open != nil {
		return o.Open(cmd, path)
	}
	if path == "-" {
		return io.NopCloser(cmd.InOrStdin()), nil
	}
	return os.Open(path)
}

func (o Options) writeOut(cmd *cobra.Command, path string, data []byte) error {
	if o.WriteOut != nil {
		return o.WriteOut(cmd, path, data)
	}
	if path == "-" {
		_, err := cmd.OutOrStdout().Write(data)
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// opener is open for one command, as package lab takes it.
func (o Options) opener(cmd *cobra.Command) func(string) (io.ReadCloser, error) {
	return func(path string) (io.ReadCloser, error) { return o.open(cmd, path) }
}

// ExitError carries a process exit status through cobra: 2 when the input or a flag
// is refused (nothing is printed), 1 when a run did not succeed (abacus solve's
// auction did not converge).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}
