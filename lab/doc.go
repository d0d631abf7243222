// Package lab is the research tools over the engines as a library: the experiments
// `clearhouse simulate`, `share simulate` and `share compare` run (lab/labcmd is
// their command line, which cmd/clearhouse mounts), importable, benchmarked and
// fuzzed without the binary.
//
//   - Simulate replays a workload (LoadWorkload: a CSV file, an SWF log or the seeded
//     MapReduce-like mix) through package scheduler's algorithms on its simulated
//     cloud, once per algorithm, against the offline upper bound; SimOptions are the
//     command's flags, DefaultSimOptions their defaults, WriteSimTable its table and
//     SimResult.Report its HTML report (templates/reports).
//   - ShareEvaluate is CloudShare's fairness experiment (package sharing) on windows
//     of an SWF log (ReadShareLog, ShareOrgs); Compare runs it over many seeds with
//     intervals and paired tests.
//   - SWFMaxProcs reads an SWF log's MaxProcs header; the jobs are scheduler.ReadSWF's.
//
// Errors refusing an option name it as the command's flag (--capacity, --orgs):
// the options are the flags, one name each. Every run is deterministic for its seeds. The package imports no database, HTTP or
// command-line package (deps_test.go); `abacus`'s experiments are sharing/abacus's
// own (Simulate, Efficiency), which lab/labcmd calls directly.
package lab
