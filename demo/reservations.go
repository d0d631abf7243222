package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// seedReservations gives the demo market short-term reservations: some that
// ran earlier today (charged, so statements show reservation charges), some
// running now and some scheduled later, inside the teams' quota and beyond it, and
// a few pools with other pricing policies.
func seedReservations(ctx context.Context, s Services, users map[string]identity.User, now time.Time) error {
	clock := &replayClock{t: now.Add(-6 * time.Hour)}
	plan := fleet.NewReservations(s.DB, ledger.New(s.DB, clock.now), clock.now, fleet.DefaultPlanConfig)
	for _, p := range []fleet.PricingPolicy{
		{PoolID: "us-east/gpu", Algorithm: "econ", Predictor: "load", UnitPrice: 400_000},
		{PoolID: "ap-south/cpu", Algorithm: "greedy", Predictor: "seasonal", UnitPrice: 5_000},
		{PoolID: "ap-south/ram", Algorithm: "greedy", Predictor: "seasonal", UnitPrice: 1_000},
	} {
		if _, err := plan.SetPolicy(ctx, p); err != nil {
			return err
		}
	}
	type job struct {
		who      string
		config   map[string]int64
		count    int64
		dur      time.Duration
		from, to time.Duration // window, from the clock's now
		value    ledger.Money
	}
	reserve := func(jobs []job) error {
		for _, j := range jobs {
			d := fleet.Definition{Value: j.value, Requests: []fleet.RequestSpec{{Configuration: j.config, Count: j.count,
				Duration: j.dur, Arrival: clock.t.Add(j.from), Deadline: clock.t.Add(j.to)}}}
			v, err := plan.Reserve(ctx, users[j.who], d)
			if err != nil {
				return fmt.Errorf("demo reservation for %s: %w", j.who, err)
			}
			if v.Status != fleet.ReservationAccepted {
				return fmt.Errorf("demo reservation for %s was not accepted: %s", j.who, v.Note)
			}
		}
		return nil
	}
	cpuRAM := func(cpu, ram int64) map[string]int64 { return map[string]int64{"eu-west/cpu": cpu, "eu-west/ram": ram} }
	apSouth := func(cpu, ram int64) map[string]int64 {
		return map[string]int64{"ap-south/cpu": cpu, "ap-south/ram": ram}
	}
	// Six hours ago: jobs that have run since.
	if err := reserve([]job{
		{"search/member", apSouth(4, 16), 100, 2 * time.Hour, 0, 3 * time.Hour, 500 * ledger.Dollar}, // RAM beyond search's quota: charged
		{"search/owner", cpuRAM(4, 16), 100, time.Hour, time.Hour, 4 * time.Hour, 300 * ledger.Dollar},
		{"ads/member", map[string]int64{"us-east/cpu": 8, "us-east/ram": 32}, 100, 3 * time.Hour, 0, 4 * time.Hour, 400 * ledger.Dollar},
	}); err != nil {
		return err
	}
	// Now: jobs running and jobs to come.
	clock.t = now
	if _, err := plan.Tick(ctx); err != nil {
		return err
	}
	if err := reserve([]job{
		{"search/member", cpuRAM(2, 8), 150, 2 * time.Hour, 0, 3 * time.Hour, 200 * ledger.Dollar},
		{"search/owner", apSouth(4, 16), 200, 3 * time.Hour, 2 * time.Hour, 10 * time.Hour, 900 * ledger.Dollar}, // charged for RAM
		{"ml/owner", map[string]int64{"us-east/gpu": 1, "us-east/cpu": 8}, 12, 4 * time.Hour, time.Hour, 12 * time.Hour, 3000 * ledger.Dollar},
		{"ads/member", map[string]int64{"us-east/cpu": 8, "us-east/ram": 32}, 50, time.Hour, 30 * time.Minute, 5 * time.Hour, 150 * ledger.Dollar},
		{"video/owner", map[string]int64{"ap-south/cpu": 16, "ap-south/ram": 32}, 20, 90 * time.Minute, 0, 6 * time.Hour, 100 * ledger.Dollar},
	}); err != nil {
		return err
	}
	// A bid the plan has no room for: its value is lost (the scheduler page shows it).
	refused := fleet.Definition{Value: 2500 * ledger.Dollar, Requests: []fleet.RequestSpec{{Configuration: map[string]int64{"us-east/gpu": 1},
		Count: 100_000, Duration: 2 * time.Hour, Arrival: now, Deadline: now.Add(6 * time.Hour)}}}
	if v, err := plan.Reserve(ctx, users["ml/owner"], refused); err != nil || v.Status != fleet.ReservationRejected {
		return fmt.Errorf("demo refused reservation: %v (%s)", err, v.Status)
	}
	_, err := plan.Tick(ctx)
	return err
}
