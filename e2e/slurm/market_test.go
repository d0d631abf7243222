package slurm

import (
	"testing"

	"github.com/clearhouse/clearhouse/e2e/e2etest"
)

// agentMarket is the shared market of the cluster tests (e2etest.Market), with this
// package's helpers as its methods.
type agentMarket struct{ *e2etest.Market }

func newAgentMarket(t *testing.T) *agentMarket { return &agentMarket{e2etest.NewMarket(t)} }
