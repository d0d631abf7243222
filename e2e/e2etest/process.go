package e2etest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/clearhouse/clearhouse/agent/agentcmd"
)

// agentEnv makes the test binary run the cluster agent's command line given in it
// (its arguments separated by \x1f) instead of the tests (Main): the kill tests kill
// a real agent in a child process. The agent offers the backends the test binary
// registers (the package's imports).
const agentEnv = "CLEARHOUSE_TEST_RUN_AGENT"

// runAgentChild runs the agent's command line when the test binary was started as
// one (StartAgent), and exits.
func runAgentChild() {
	if args := os.Getenv(agentEnv); args != "" {
		os.Exit(agentcmd.Run(context.Background(), agentcmd.Options{Path: "clearhouse agent"}, strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
}

// Process is a child process of a test (an agent polling every second), in a
// process group of its own so that a kill takes the commands it runs (Slurm's)
// with it, as the end of its container would.
type Process struct {
	cmd  *exec.Cmd
	log  string
	done <-chan struct{} // closed when the process ended
}

// StartAgent starts `clearhouse agent <args> --every 1s` (the test binary running the
// agent's command line) with env added to the test's environment; the agent is
// killed when the test ends.
func StartAgent(t *testing.T, args []string, env ...string) *Process {
	t.Helper()
	args = append(args, "--every", "1s")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), agentEnv+"="+strings.Join(args, "\x1f")), env...)
	return StartProcess(t, cmd)
}

// StartProcess starts cmd as a Process: in a process group of its own, its output
// in a log file, killed when the test ends.
func StartProcess(t *testing.T, cmd *exec.Cmd) *Process {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log, err := os.CreateTemp(t.TempDir(), "agent-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended, end := context.WithCancel(context.Background())
	p := &Process{cmd: cmd, log: log.Name(), done: ended.Done()}
	go func() { _ = cmd.Wait(); log.Close(); end() }()
	t.Cleanup(p.Kill)
	return p
}

// Kill sends SIGKILL to the process group and waits for the process to end.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Output is what the process printed so far.
func (p *Process) Output() string {
	out, _ := os.ReadFile(p.log)
	return string(out)
}
