package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// A booked request planned to start later is in the allocation's upcoming list; when
// its cluster refuses to reserve it, the reservation ends as could not be honoured
// (never running), leaves the plan, its whole price goes back to the team and the
// team's members are told; a repeated report changes nothing; a report naming
// another cluster's reservation or with too long a reason changes nothing (issue 37).
func TestAnUnplaceableReservationEndsRefundedOnce(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		pl.r.UseNotices(pl.M.Notices())
		ctx := context.Background()
		before := pl.Balance("ads")
		v := pl.reserve("member@ads", pl.job("us-east/cpu", 90, time.Hour, time.Hour, 3*time.Hour, 10))
		if v.Status != fleet.ReservationAccepted || v.Price <= 0 || v.Requests[0].StartAt == nil || !v.Requests[0].StartAt.After(pl.Clock.Now()) {
			t.Fatalf("booked: %+v %+v, want accepted at a price, starting later", v.Reservation, v.Requests)
		}
		a, err := pl.r.Allocation(ctx, "us-east")
		if err != nil {
			t.Fatal(err)
		}
		up := slices.IndexFunc(a.Upcoming, func(x fleet.Assignment) bool { return x.Reservation == v.ID })
		if up < 0 || !a.Upcoming[up].Start.Equal(*v.Requests[0].StartAt) || a.Upcoming[up].Count != 90 || a.Upcoming[up].Units != 0 || a.Upcoming[up].Team != "ads" {
			t.Fatalf("upcoming %+v: want reservation %d at %s, 90 tasks, no units yet", a.Upcoming, v.ID, v.Requests[0].StartAt)
		}
		if other, _ := pl.r.Allocation(ctx, "eu-west"); len(other.Upcoming) != 0 {
			t.Errorf("eu-west's upcoming %+v: want none (the reservation is us-east's)", other.Upcoming)
		}

		for _, bad := range []fleet.AgentReport{
			{Unplaceable: []fleet.UnplaceableReport{{Reservation: v.ID + 1000, Reason: "busy"}}},
			{Unplaceable: []fleet.UnplaceableReport{{Reservation: v.ID, Request: 3, Reason: "busy"}}},
			{Unplaceable: []fleet.UnplaceableReport{{Reservation: v.ID, Reason: strings.Repeat("x", 501)}}},
		} {
			if _, err := pl.r.Report(ctx, "us-east", bad); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
				t.Errorf("report %+v: error %v, want EINVALID", bad.Unplaceable, err)
			}
		}
		if _, err := pl.r.Report(ctx, "eu-west", fleet.AgentReport{Unplaceable: []fleet.UnplaceableReport{{Reservation: v.ID}}}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Errorf("another cluster's agent reporting it: %v, want EINVALID", err)
		}
		if got, _ := pl.r.Reservation(ctx, v.ID); got.Status != fleet.ReservationAccepted {
			t.Fatalf("after bad reports: %s, want still accepted", got.Status)
		}

		for range 2 { // the agent reports it at every poll while its cluster refuses it
			if _, err := pl.r.Report(ctx, "us-east", fleet.AgentReport{Unplaceable: []fleet.UnplaceableReport{{Reservation: v.ID, Reason: "Requested nodes are busy"}}}); err != nil {
				t.Fatal(err)
			}
			got, _ := pl.r.Reservation(ctx, v.ID)
			if got.Status != fleet.ReservationFailed || got.Phase == "running" || !strings.Contains(got.Note, "Requested nodes are busy") {
				t.Fatalf("refused: %s (%s) %q, want failed with the cluster's reason", got.Status, got.Phase, got.Note)
			}
			if got.Captured != 0 || got.Released != got.Price {
				t.Fatalf("refused: captured %s, released %s of %s; want all released", got.Captured, got.Released, got.Price)
			}
			if b := pl.Balance("ads"); b != before {
				t.Fatalf("ads's balance %+v, want %+v as before booking", b, before)
			}
			pl.trialBalanceIsZero()
		}
		a, err = pl.r.Allocation(ctx, "us-east")
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(append(append(a.Upcoming, a.Running...), a.Waiting...), func(x fleet.Assignment) bool { return x.Reservation == v.ID }) {
			t.Errorf("allocation %+v still lists the refused reservation", a)
		}
		notes, err := pl.M.Notices().Notifications(ctx, pl.Users["member@ads"].ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, x := range notes {
			if x.Kind == fleet.NoticeReservationUnplaceable && x.Ref == fmt.Sprintf("reservation:%d", v.ID) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("notifications %+v: want one about reservation %d", notes, v.ID)
		}
	})
}
