package kube

import (
	"testing"

	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	"github.com/clearhouse/clearhouse/e2e/e2etest"
)

// agentMarket is the shared market of the cluster tests (e2etest.Market), with this
// package's helpers as its methods.
type agentMarket struct{ *e2etest.Market }

// newAgentMarket opens the market, after skipping the test (under -short or without
// CLEARHOUSE_TEST_KUBECONFIG) before the app is built: every test here needs the
// control plane, and building the app only to skip took 4 to 37 s a test under the
// race detector.
func newAgentMarket(t *testing.T) *agentMarket {
	t.Helper()
	kubetest.Config(t)
	return &agentMarket{e2etest.NewMarket(t)}
}
