// Package cputime measures the CPU time this process has used, for benchmarks on a
// shared machine, where wall time mostly measures the others' load (docs/testing.md
// and the benchmarks' cpu-µs metrics). It is the one copy of what the ledger's and
// the exchange's benchmarks each kept in a test file of their own.
package cputime

import "time"

// Used is the CPU time (user and system, every thread) this process has used so
// far; 0 where it is not measured (platforms without getrusage) or cannot be read.
func Used() time.Duration { return used() }
