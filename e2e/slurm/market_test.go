package slurm

import (
	"github.com/clearhouse/clearhouse/e2e/e2etest"
)

// agentMarket is the shared market of the cluster tests (e2etest.Market), with this
// package's helpers as its methods; slurmMarket builds it on its own cluster, hpc.
type agentMarket struct{ *e2etest.Market }
