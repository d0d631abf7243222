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
	for _, j := range []struct {
		who  string
		spec fleet.JobSpec
	}{
		{"search/member", fleet.JobSpec{Configuration: map[string]int64{"us-east/cpu": 4, "us-east/ram": 16}, Tasks: 120, MaxTaskDuration: 2 * time.Hour}},
		{"ads/member", fleet.JobSpec{Configuration: map[string]int64{"eu-west/cpu": 8}, Tasks: 90}},
		{"search/member", fleet.JobSpec{Configuration: map[string]int64{"ap-south/cpu": 2}, Tasks: 200, Budget: 50 * ledger.Dollar, Utility: "linear"}},
		{"ads/member", fleet.JobSpec{Configuration: map[string]int64{"ap-south/cpu": 2, "ap-south/ram": 8}, Tasks: 200, Budget: 20 * ledger.Dollar, Utility: "log"}},
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
