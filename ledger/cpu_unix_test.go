//go:build unix

package ledger_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) this process has used so far, for
// benchmarks on a shared machine, where wall time mostly measures the others' load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
