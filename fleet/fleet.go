// Package fleet is the cluster-facing side of Clearhouse: what runs on the clusters
// the market sells quota in. It keeps the reservation plan for short-term jobs (the
// scheduler engine in memory as a cache of the database), talks to cluster agents
// (their allocations and reports) and answers the market's question of how much
// quota reservations need. Like exchange, its services validate every input, run
// each use case in one transaction and return clearhouse errors.
//
// Best-effort jobs on idle capacity are package besteffort's, not fleet's.
//
// Dependencies point one way: fleet uses exchange's teams, users and pools;
// exchange reaches fleet only through the QuotaCommitments interface it declares.
// besteffort imports fleet (it reads the reservation plan to know what is idle);
// fleet never imports besteffort (deps_test.go).
package fleet

import "github.com/clearhouse/clearhouse/store"

// exists is store.Exists.
var exists = store.Exists
