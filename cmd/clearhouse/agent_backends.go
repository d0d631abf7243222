package main

// The agent's backends, each registered by its package's init (agent.Register). A new
// backend is one import line here.
import (
	_ "github.com/clearhouse/clearhouse/agent/kubernetes" // kubernetes
	_ "github.com/clearhouse/clearhouse/agent/simulate"   // simulate and print
	_ "github.com/clearhouse/clearhouse/agent/slurm"      // slurm
)
