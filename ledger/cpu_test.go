package ledger_test

import (
	"time"

	"github.com/clearhouse/clearhouse/internal/cputime"
)

// cpuTime is the CPU time this process has used so far (cputime.Used), for the
// benchmarks' cpu metrics.
func cpuTime() time.Duration { return cputime.Used() }
