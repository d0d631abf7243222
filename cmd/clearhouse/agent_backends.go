package main

// The agent's backends in the server's binary, each registered by its package's init
// (agent.Register): those that pull no Kubernetes package, so the server carries none
// (deps_test.go holds that). clearhouse-agent (cmd/clearhouse-agent) carries every
// backend. A new backend is one import line here and one name in serverBackends.
import (
	_ "github.com/clearhouse/clearhouse/agent/simulate" // simulate and print
	_ "github.com/clearhouse/clearhouse/agent/slurm"    // slurm
)

// serverBackends are the backends `clearhouse agent` offers.
var serverBackends = []string{"print", "simulate", "slurm"}
