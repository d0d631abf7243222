package abacus

import (
	"fmt"
	"math"

	"github.com/clearhouse/clearhouse"
)

// Utility is the shape of a job's utility: the function f applied to each share.
type Utility uint8

// The utilities a job may state. Both are non-decreasing and concave in each share.
const (
	Linear Utility = iota // u = sum_j w_j s_j
	Log                   // u = sum_j w_j log s_j (log 0 = -Inf)
)

// String returns "linear" or "log", the names the JSON format uses.
func (u Utility) String() string {
	switch u {
	case Linear:
		return "linear"
	case Log:
		return "log"
	}
	return fmt.Sprintf("Utility(%d)", uint8(u))
}

// ParseUtility returns the Utility named "linear" or "log"; anything else is EINVALID.
func ParseUtility(name string) (Utility, error) {
	switch name {
	case "linear":
		return Linear, nil
	case "log":
		return Log, nil
	}
	return 0, clearhouse.Errorf(clearhouse.EINVALID, "utility: must be \"linear\" or \"log\", got %q", name)
}

// Instance is one auction: the resource types (pools of one cluster) and the jobs
// that bid on them.
type Instance struct {
	Resources []string
	Jobs      []Job
}

// Job is one bidder J_i = (b_i, u_i). Weights has one entry per resource of the
// instance, in the same order; a zero weight means the job does not use that resource.
type Job struct {
	ID      string
	Budget  float64 // dollars, >= 0
	Utility Utility
	Weights []float64
	// MinUtility is the job's service level objective, used only by SolveSLO: the
	// least utility the job must reach for its SLO to be met. Nil means no SLO.
	MinUtility *float64
}

// Limits on what an instance may hold, so that every sum stays finite and exact
// enough.
const (
	MaxBudget = 1e15 // dollars
	MaxWeight = 1e12
)

// Uses reports whether the job uses resource j (its weight there is positive).
func (j Job) Uses(r int) bool { return j.Weights[r] > 0 }

// Value returns the job's utility at the given shares (one per resource of the
// instance): sum_j w_j s_j or sum_j w_j log s_j over the resources it uses. A log
// utility with a zero share of a used resource is -Inf.
func (j Job) Value(shares []float64) float64 {
	u := 0.0
	for r, w := range j.Weights {
		if w <= 0 {
			continue
		}
		if j.Utility == Log {
			u += w * math.Log(shares[r])
		} else {
			u += w * shares[r]
		}
	}
	return u
}

func invalid(format string, args ...any) error {
	return clearhouse.Errorf(clearhouse.EINVALID, format, args...)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// name is how messages refer to job k: by its id, or by position when it has none.
func (inst Instance) name(k int) string {
	if inst.Jobs[k].ID == "" {
		return fmt.Sprintf("jobs[%d]", k)
	}
	return fmt.Sprintf("job %q", inst.Jobs[k].ID)
}

// Validate checks the instance and returns EINVALID naming the resource or the job
// and field at fault: at least one resource, resource names non-empty and unique; job
// ids non-empty and unique; budgets finite in [0, MaxBudget]; a known utility; one
// weight per resource, each finite in [0, MaxWeight], at least one positive; a finite
// MinUtility if any.
func (inst Instance) Validate() error {
	if len(inst.Resources) == 0 {
		return invalid("resources: at least one resource is required")
	}
	seen := make(map[string]bool, len(inst.Resources))
	for r, name := range inst.Resources {
		switch {
		case name == "":
			return invalid("resources[%d]: must not be empty", r)
		case seen[name]:
			return invalid("resources: %q is listed twice", name)
		}
		seen[name] = true
	}
	ids := make(map[string]bool, len(inst.Jobs))
	for k, job := range inst.Jobs {
		if err := inst.validateJob(k); err != nil {
			return err
		}
		if ids[job.ID] {
			return invalid("%s: id: listed twice", inst.name(k))
		}
		ids[job.ID] = true
	}
	return nil
}

func (inst Instance) validateJob(k int) error {
	job := inst.Jobs[k]
	fail := func(format string, args ...any) error { // names the job only on failure
		return invalid("%s: "+format, append([]any{inst.name(k)}, args...)...)
	}
	switch {
	case job.ID == "":
		return fail("id: required")
	case !finite(job.Budget) || job.Budget < 0 || job.Budget > MaxBudget:
		return fail("budget: must be a number from 0 to %g dollars, got %v", MaxBudget, job.Budget)
	case job.Utility != Linear && job.Utility != Log:
		return fail("utility: must be linear or log, got %v", job.Utility)
	case len(job.Weights) != len(inst.Resources):
		return fail("weights: must have one entry per resource (%d), got %d", len(inst.Resources), len(job.Weights))
	case job.MinUtility != nil && !finite(*job.MinUtility):
		return fail("min_utility: must be a finite number, got %v", *job.MinUtility)
	}
	used := 0
	for r, w := range job.Weights {
		if !finite(w) || w < 0 || w > MaxWeight {
			return fail("weights[%q]: must be a number from 0 to %g, got %v", inst.Resources[r], MaxWeight, w)
		}
		if w > 0 {
			used++
		}
	}
	if used == 0 {
		return fail("weights: at least one resource must have a positive weight")
	}
	return nil
}

// EqualWeights returns a weight of 1 on each of n resources: the weights of a job
// that came with a budget only (the paper's default before its utility is learned).
func EqualWeights(n int) []float64 {
	w := make([]float64, n)
	for r := range w {
		w[r] = 1
	}
	return w
}
