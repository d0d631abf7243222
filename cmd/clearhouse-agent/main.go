// Command clearhouse-agent is Clearhouse's cluster agent with every backend built in:
// print, simulate, slurm and kubernetes. It runs beside a cluster manager (in the
// cluster, for kubernetes) and speaks only the server's JSON API; the server's binary
// runs the same agent as `clearhouse agent`, without the kubernetes backend, so that
// it carries no Kubernetes package. Run `clearhouse-agent --help` for its flags.
package main

import (
	"github.com/clearhouse/clearhouse/agent/agentcmd"

	// Every backend, each registered by its package's init (agent.Register).
	_ "github.com/clearhouse/clearhouse/agent/kubernetes" // kubernetes
	_ "github.com/clearhouse/clearhouse/agent/simulate"   // simulate and print
	_ "github.com/clearhouse/clearhouse/agent/slurm"      // slurm
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// options is clearhouse-agent's agent: every registered backend.
func options() agentcmd.Options {
	return agentcmd.Options{Path: agentcmd.Binary, Version: version}
}

func main() { agentcmd.Main(options()) }
