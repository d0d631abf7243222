package fleet_test

import (
	"context"
	"testing"

	"github.com/clearhouse/clearhouse/fleet/fleettest"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// BenchmarkAllocationWithLimits is one agent's allocation of the busy cluster
// (10,000 reservations of 50 teams, half inside their quota) with every team's limit
// by the one rule: the plan's current slot, the teams' holdings and the rule.
func BenchmarkAllocationWithLimits(b *testing.B) {
	bz := fleettest.NewBusy(b, storetest.New(b), 10000)
	ctx := context.Background()
	if _, err := bz.Reservations.Allocation(ctx, fleettest.Cluster); err != nil { // the plan is built once
		b.Fatal(err)
	}
	b.ResetTimer()
	var limits int
	for b.Loop() {
		a, err := bz.Reservations.Allocation(ctx, fleettest.Cluster)
		if err != nil {
			b.Fatal(err)
		}
		limits = len(a.Limits(nil))
	}
	b.ReportMetric(float64(limits), "limits")
}
