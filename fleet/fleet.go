// Package fleet is the cluster-facing side of Clearhouse: what runs on the clusters
// the market sells quota in. It keeps the reservation plan for short-term jobs (the
// scheduler engine in memory as a cache of the database), talks to cluster agents
// (their allocations and reports) and answers the market's question of how much
// quota reservations need. Like exchange, its services validate every input, run
// each use case in one transaction and return clearhouse errors.
//
// Dependencies point one way: fleet uses exchange's teams, users and pools;
// exchange reaches fleet only through the QuotaCommitments interface it declares.
package fleet

import "github.com/clearhouse/clearhouse/store"

// exists is store.Exists.
var exists = store.Exists
