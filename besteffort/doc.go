// Package besteffort runs best-effort jobs on idle capacity: jobs of identical tasks
// that run on quota its owner is not using and on capacity the operator has neither
// sold nor reserved. It owns submission and cancellation of jobs, the idle-capacity
// accounts of each cluster (who lent and borrowed how much), the decision step that
// runs the sharing policies (package sharing, and the abacus auction) on every poll
// of a cluster's agent, the agents' best-effort reports, the charges under the
// abacus policy, the weights it learns from measured jobs, and the idle history and
// fairness reports. Like exchange and fleet, its services validate every input, run
// each use case in one transaction and return clearhouse errors.
//
// Dependencies point one way: besteffort -> fleet -> exchange. Best-effort work runs
// on what the reservation plan leaves idle, so the step reads fleet's plan (accepted
// reservations, the capacity agents reported, the teams' quotas) inside its own
// transaction, and shares fleet's bounds on an agent report and its rule of who may
// act for a team. Fleet never imports besteffort (deps_test.go guards both); the
// composition root (cmd/clearhouse) builds the two services side by side.
package besteffort

import (
	"encoding/json"

	"github.com/clearhouse/clearhouse/store"
)

// exists is store.Exists.
var exists = store.Exists

// configJSON encodes a configuration (units per pool) as stored in a job's row.
func configJSON(c map[string]int64) string {
	b, _ := json.Marshal(c)
	return string(b)
}
