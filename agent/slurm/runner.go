package slurm

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Runner runs one of Slurm's command-line tools and returns its standard output. The
// backend speaks to Slurm only through a Runner, so its parsing is tested on outputs
// captured from real daemons (testdata/) and its commands on a live cluster.
type Runner interface {
	// Run runs name with args, stdin (may be empty) on its standard input, and returns
	// its standard output; a command that exits non-zero is an error carrying its
	// standard error.
	Run(ctx context.Context, stdin, name string, args ...string) (string, error)
}

// ExecRunner runs Slurm's tools as processes, with the agent's environment (SLURM_CONF
// names the cluster's slurm.conf when it is not /etc/slurm/slurm.conf).
type ExecRunner struct{}

// Run implements Runner.
func (ExecRunner) Run(ctx context.Context, stdin, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}
