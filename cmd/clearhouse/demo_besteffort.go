package main

import (
	"context"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
)

// seedDemoBestEffort queues best-effort jobs on idle capacity: DirectContr in
// us-east and eu-west, the abacus auction in ap-south, and runs one decision per
// cluster (as an agent's poll would) and the fairness job.
func seedDemoBestEffort(ctx context.Context, a *App, users map[string]exchange.User) error {
	be := a.Idle
	for _, p := range []string{"ap-south/cpu", "ap-south/ram"} {
		if err := be.SetSettings(ctx, fleet.IdleSettings{Pool: p, Policy: fleet.PolicyAbacus, Alpha: fleet.DefaultAlpha,
			MinRuntime: fleet.DefaultMinRuntime, Exposure: 0.3}); err != nil {
			return err
		}
	}
	if err := seedDemoMeasuredJobs(ctx, be, users["search/member"], a.now); err != nil {
		return err
	}
	for _, j := range []struct {
		who  string
		spec fleet.JobSpec
	}{
		{"search/member", fleet.JobSpec{Configuration: map[string]int64{"us-east/cpu": 4, "us-east/ram": 16}, Tasks: 120, MaxTaskDuration: 2 * time.Hour}},
		{"ads/member", fleet.JobSpec{Configuration: map[string]int64{"eu-west/cpu": 8}, Tasks: 90}},
		{"search/member", fleet.JobSpec{Configuration: map[string]int64{"ap-south/cpu": 2}, Tasks: 200, Budget: 50 * ledger.Dollar, Utility: "linear"}},
		{"ads/member", fleet.JobSpec{Configuration: map[string]int64{"ap-south/cpu": 2, "ap-south/ram": 8}, Tasks: 200, Budget: 20 * ledger.Dollar, Utility: "log"}},
		{"ads/member", fleet.JobSpec{Configuration: map[string]int64{"ap-south/cpu": 1}, Tasks: 40, Budget: 30 * ledger.Dollar, Utility: "linear", MinUtility: &demoSLO}},
	} {
		if _, err := be.Submit(ctx, users[j.who], j.spec); err != nil {
			return err
		}
	}
	for _, cluster := range []string{"us-east", "eu-west", "ap-south"} {
		if _, err := be.Step(ctx, cluster); err != nil {
			return err
		}
	}
	_, err := be.ComputeFairness(ctx)
	return err
}

// demoSLO is the minimum utility of the demo's SLO job: 40% of ap-south's freed cores.
var demoSLO = 0.4

// seedDemoMeasuredJobs runs four small abacus jobs of search's to the end in
// ap-south, each measured as an agent would report it (its utility the inverse of
// its run time, its average shares), so that search's budgets are charged and its
// weights for cpu-and-ram jobs are fitted.
func seedDemoMeasuredJobs(ctx context.Context, be *fleet.BestEffort, member exchange.User, now func() time.Time) error {
	mixes := [][2]float64{{0.9, 0.3}, {0.4, 0.8}, {0.6, 0.5}, {0.2, 0.7}}
	for _, mix := range mixes {
		j, err := be.Submit(ctx, member, fleet.JobSpec{Configuration: map[string]int64{"ap-south/cpu": 1, "ap-south/ram": 4}, Tasks: 1, Budget: 2 * ledger.Dollar})
		if err != nil {
			return err
		}
		if _, err := be.Step(ctx, "ap-south"); err != nil {
			return err
		}
		alloc, err := be.Allocation(ctx, "ap-south")
		if err != nil {
			return err
		}
		rep := fleet.BestEffortReport{Measured: []fleet.JobMeasurement{{Job: j.ID, Utility: 1.5*mix[0] + 0.5*mix[1],
			Shares: map[string]float64{"ap-south/cpu": mix[0], "ap-south/ram": mix[1]}}}}
		for _, t := range alloc.Run {
			if t.Job == j.ID {
				rep.Tasks = append(rep.Tasks, fleet.TaskEvent{Task: t.Task, Event: "done", At: now()})
			}
		}
		if err := be.Report(ctx, "ap-south", rep); err != nil {
			return err
		}
	}
	return nil
}
