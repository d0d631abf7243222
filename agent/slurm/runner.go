package slurm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Runner runs one of Slurm's command-line tools and returns its standard output. The
// backend speaks to Slurm only through a Runner, so its parsing is tested on outputs
// captured from real daemons (testdata/) and its commands on a live cluster. The
// backend may call Run from several goroutines at once (together).
type Runner interface {
	// Run runs name with args, stdin (may be empty) on its standard input, and returns
	// its standard output; a command that exits non-zero is an error carrying its
	// standard error.
	Run(ctx context.Context, stdin, name string, args ...string) (string, error)
}

// ExecRunner runs Slurm's tools as processes, with the agent's environment (SLURM_CONF
// names the cluster's slurm.conf when it is not /etc/slurm/slurm.conf) and Env after
// it (NAME=value; a later value of a name wins).
type ExecRunner struct {
	Env []string
}

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, stdin, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if len(r.Env) > 0 {
		cmd.Env = append(os.Environ(), r.Env...)
	}
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

// together runs reads, each in its own goroutine, and returns the first one's error
// (in the order given) once all have returned. A poll's reads that do not depend on
// each other go to slurmctld together: with thousands of jobs queued, slurmctld holds
// its job and node locks for a second or more in each scheduling pass, and reads sent
// one after the other can each wait for a pass of their own, where reads sent
// together wait for the same one.
func together(reads ...func() error) error {
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	for i, read := range reads {
		wg.Go(func() { errs[i] = read() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
