package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// Under-use reported to one server returns capacity for the current slot on every
// server sharing the database (each rebuilds its plan and applies the slot's
// usage again), and counts once in what the request did not use.
func TestUnderUseReturnsCapacityOnEveryServer(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		pl.Clock.Set(pl.Clock.Now().Truncate(5 * time.Minute))
		other := fleet.NewReservations(db, pl.L, pl.Clock.Now, fleet.DefaultPlanConfig)
		full := pl.reserve("member@search", pl.job("eu-west/cpu", 100, time.Hour, 0, time.Hour, 50))
		short := pl.reserve("member@search", pl.job("eu-west/cpu", 40, 5*time.Minute, 0, 3*time.Hour, 50))
		mayStart := func(r *fleet.Reservations) bool {
			t.Helper()
			a, err := r.Allocation(ctx, "eu-west")
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range a.Waiting {
				if w.Reservation == short.ID {
					return w.MayStartNow
				}
			}
			t.Fatalf("reservation %d is not waiting: %+v", short.ID, a)
			return false
		}
		if mayStart(pl.r) || mayStart(other) {
			t.Fatal("the short job may start in a full pool")
		}
		report := fleet.AgentReport{Usage: []fleet.UsageReport{{Reservation: full.ID, Pool: "eu-west/cpu", Units: 55}}}
		for range 2 { // the same slot reported twice counts once
			if _, err := pl.r.Report(ctx, "eu-west", report); err != nil {
				t.Fatal(err)
			}
		}
		if !mayStart(pl.r) || !mayStart(other) {
			t.Fatal("45 cores unused this slot: the short job (40) should be offered on both servers")
		}
		// A report on the other server (rebuilt) keeps the count at 45.
		if _, err := other.Report(ctx, "eu-west", report); err != nil {
			t.Fatal(err)
		}
		got, err := pl.r.Reservation(ctx, full.ID)
		if err != nil || got.Requests[0].Unused != 45 {
			t.Fatalf("unused unit-slots: %+v %v, want 45", got.Requests, err)
		}
		// Next slot: nothing reported yet, nothing returned.
		pl.Clock.Advance(5 * time.Minute)
		if mayStart(pl.r) || mayStart(other) {
			t.Fatal("under-use of the last slot still offered in this one")
		}
	})
}
