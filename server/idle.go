package server

import (
	"context"
)

// fairnessLock names the advisory lock that keeps the fairness job on one replica.
const fairnessLock = 0x69646c65 // "idle"

// RunFairness runs the fairness job once, on one replica at a time.
func (a *App) RunFairness(ctx context.Context) error {
	return a.runJob(ctx, jobFairness, a.fairness)
}

func (a *App) fairness(ctx context.Context) (bool, error) {
	var n int
	ran, err := a.DB.Exclusive(ctx, fairnessLock, func() error {
		reports, err := a.Idle.ComputeFairness(ctx)
		n = len(reports)
		return err
	})
	if ran && err == nil {
		a.log.Info("fairness reports computed", "reports", n)
	}
	return ran, err
}

// historySchedule runs the history job at the start of every HistoryInterval of
// the clock (minutes 0, 15, 30 and 45, UTC), not every interval from the server's
// start: a point is stamped with the interval the job runs in, so a job started near
// an interval's end and run late would have stamped the next one and left a gap.
const historySchedule = "*/15 * * * *"

// RunHistory runs the history job once. Every server may run it: a point is
// recorded once per interval whichever server takes it first.
func (a *App) RunHistory(ctx context.Context) error {
	return a.runJob(ctx, jobHistory, a.history)
}

func (a *App) history(ctx context.Context) (bool, error) {
	rep, err := a.Idle.RecordHistory(ctx)
	if err != nil {
		return true, err
	}
	a.log.Info("idle history recorded", "at", rep.At, "points", rep.Recorded, "pruned", rep.Pruned)
	return true, nil
}
