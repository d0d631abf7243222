package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/clearhouse/clearhouse/store"
)

// scheduleJobs adds every scheduled job to the app's cron.
func (a *App) scheduleJobs() error {
	jobs := []struct {
		spec, name string
		fn         func(context.Context) (bool, error)
	}{
		{fmt.Sprintf("@every %s", a.cfg.Tick), jobTick, a.tick},
		{fmt.Sprintf("@every %s", min(a.cfg.Tick, planFollowEvery)), jobPlan, a.followPlan},
		{fmt.Sprintf("@every %s", a.Util.Config().Slot), jobUtilization, a.utilization},
		{"@every 1h", jobFairness, a.fairness},
		{historySchedule, jobHistory, a.history},
		// Hourly, so a month is charged in its first hour, or as soon as a stopped
		// server starts again; a (pool, team, month) is charged once.
		{"@hourly", jobHolding, a.holding},
	}
	if a.cfg.Mail.Enabled() {
		jobs = append(jobs, struct {
			spec, name string
			fn         func(context.Context) (bool, error)
		}{fmt.Sprintf("@every %s", a.cfg.Tick), jobEmail, a.emails})
	}
	if a.cfg.VerifyEvery > 0 {
		jobs = append(jobs, struct {
			spec, name string
			fn         func(context.Context) (bool, error)
		}{fmt.Sprintf("@every %s", a.cfg.VerifyEvery), jobVerify, a.verify})
	}
	for _, j := range jobs {
		if err := a.schedule(j.spec, j.name, j.fn); err != nil {
			return err
		}
	}
	return nil
}

// openMetrics serves /metrics without authentication on --metrics-addr, if set.
func (a *App) openMetrics() error {
	if a.cfg.MetricsAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", a.cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metrics.Handler())
	a.metricsLn = ln
	a.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := a.metricsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.failed <- fmt.Errorf("metrics server on %s: %w", a.cfg.MetricsAddr, err)
		}
	}()
	return nil
}

// MetricsURL is where --metrics-addr serves /metrics ("" when it is not set).
func (a *App) MetricsURL() string {
	if a.metricsLn == nil {
		return ""
	}
	return "http://" + a.metricsLn.Addr().String() + "/metrics"
}

// Ready is /readyz's check: the database answers, its schema is the one this
// binary was built for, the scheduler runs, and the reservation plan is in memory
// (a replica is not sent traffic while it builds the plan).
func (a *App) Ready(ctx context.Context) error {
	// The read pool: on SQLite the one writer connection may be busy with a long
	// settlement, which does not make the server unready.
	if err := a.DB.Read.WithContext(ctx).Exec("SELECT 1").Error; err != nil {
		return fmt.Errorf("database unreachable: %w", err)
	}
	if err := store.CheckSchema(ctx, a.DB); err != nil {
		return err
	}
	if !a.scheduling.Load() {
		return errors.New("the scheduler is not running")
	}
	if !a.planFollowed.Load() { // start-up's first build has not finished: do it here
		if err := a.Plan.Follow(ctx); err != nil {
			return fmt.Errorf("the reservation plan is not built: %w", err)
		}
		a.planFollowed.Store(true)
	}
	return nil
}

// planFollowEvery is how often plan_follow runs at most (each --tick when shorter):
// reading the plan's version is one small query, and a rebuild after a settlement
// is then done within seconds of it, before most pages ask.
const planFollowEvery = 10 * time.Second

// followPlan is the plan_follow job, on every server (no lock): this server's plan
// brought up to date with the database, so that the first page or agent report after
// another server's writes, or after a settlement, does not wait for it.
func (a *App) followPlan(ctx context.Context) (bool, error) {
	if err := a.Plan.Follow(ctx); err != nil {
		return true, err
	}
	a.planFollowed.Store(true)
	return true, nil
}

// emails is the e-mail job: one run of the outbox.
func (a *App) emails(ctx context.Context) (bool, error) {
	_, err := a.sendEmails(ctx)
	return true, err
}

// verifyLock names the advisory lock that keeps the scheduled verify on one replica.
const verifyLock = 0x76726679 // "vrfy"

// verify is the scheduled verify: every invariant `clearhouse verify` checks,
// recorded in clearhouse_verify_violations and logged when any is broken.
func (a *App) verify(ctx context.Context) (bool, error) {
	return a.DB.Exclusive(ctx, verifyLock, func() error {
		found, err := Verify(ctx, a.DB)
		if err != nil {
			return err
		}
		a.metrics.Verified(len(found))
		if len(found) > 0 {
			a.log.Error("verify found violations", "count", len(found), "first", found[0].String())
			return nil
		}
		a.log.Info("verify: every invariant holds")
		return nil
	})
}
