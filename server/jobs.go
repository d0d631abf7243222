package server

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"
)

// Job names, as metrics label them (clearhouse_job_*{job="..."}).
const (
	jobTick        = "market_tick"
	jobUtilization = "utilization"
	jobEmail       = "email_outbox"
	jobFairness    = "fairness"
	jobHistory     = "idle_history"
	jobVerify      = "verify"
	jobHolding     = "holding_charge"
	jobPlan        = "plan_follow"
)

// jobNames is every scheduled job, whose metrics exist at 0 from start-up.
var jobNames = []string{jobTick, jobUtilization, jobEmail, jobFairness, jobHistory, jobVerify, jobHolding, jobPlan}

// JobNames is every scheduled job's name, as the metrics label them.
func JobNames() []string { return slices.Clone(jobNames) }

// runJob runs one scheduled job's run: it times it, turns a panic into a failure
// logged with its stack, logs a failure, and records the run in the metrics. fn
// reports whether it ran (false: another replica holds the job's lock).
func (a *App) runJob(ctx context.Context, name string, fn func(context.Context) (bool, error)) (err error) {
	start := time.Now()
	ran := false
	defer func() {
		if r := recover(); r != nil {
			ran, err = true, fmt.Errorf("panic: %v", r)
			a.log.Error("job panicked", "job", name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
		if err != nil {
			a.log.Error("job failed", "job", name, "err", err)
		}
		if a.metrics != nil {
			a.metrics.JobRan(name, ran, time.Since(start), err, a.now())
		}
	}()
	ran, err = fn(ctx)
	return err
}

// schedule runs a job on the cron spec, on the app's job context, which Close
// cancels.
func (a *App) schedule(spec, name string, fn func(context.Context) (bool, error)) error {
	_, err := a.cron.AddFunc(spec, func() { _ = a.runJob(a.jobs, name, fn) })
	return err
}

// goJob runs fn in a goroutine that Close waits for, on the app's job context.
func (a *App) goJob(fn func(ctx context.Context)) {
	a.running.Add(1)
	go func() {
		defer a.running.Done()
		fn(a.jobs)
	}()
}
