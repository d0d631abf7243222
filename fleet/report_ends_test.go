package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// Replayed and out-of-order ends are answered, not taken silently: an end sent again
// (an agent retrying a report) is "already ended" and moves no money; an end earlier
// than the one on record is refused with its reason and cannot move the end back
// (before issue 36 it did, releasing more of the hold); an end of a request that
// never ran is refused. The rest of each report still applies, and the ledger stays
// balanced.
func TestReplayedAndOutOfOrderEndsAreAnsweredAndChangeNothing(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		// Two requests: the reservation stays accepted after the first one ends, so a
		// later end of it would still have been applied.
		d := pl.job("us-east/cpu", 45, time.Hour, 0, 2*time.Hour, 10) // 90 cores: 30 beyond ads's quota
		d.Requests = append(d.Requests, d.Requests[0])
		v := pl.reserve("member@ads", d)
		if v.Status != fleet.ReservationAccepted || v.HoldID == nil || len(v.Requests) != 2 {
			t.Fatalf("reserved: %+v", v.Reservation)
		}
		pl.Clock.Advance(30 * time.Minute)
		if _, err := pl.r.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		start := *v.Requests[0].StartAt
		endAt := pl.Clock.Now()
		if !endAt.After(start) {
			t.Fatalf("request 0 starts at %s, after now %s", start, endAt)
		}
		first, err := pl.r.Report(ctx, "us-east", fleet.AgentReport{Ends: []fleet.EndReport{{Reservation: v.ID, Request: 0, At: endAt}}})
		if err != nil || len(first.AlreadyEnded)+len(first.RefusedEnds) != 0 {
			t.Fatalf("the first end: %+v, %v", first, err)
		}
		after := pl.Balance("ads")
		got, _ := pl.r.Reservation(ctx, v.ID)
		recorded := *got.Requests[0].EndedAt

		// The same report again: already ended, nothing moves.
		again, err := pl.r.Report(ctx, "us-east", fleet.AgentReport{Ends: []fleet.EndReport{{Reservation: v.ID, Request: 0, At: endAt}}})
		if err != nil || len(again.AlreadyEnded) != 1 || len(again.RefusedEnds) != 0 || !again.AlreadyEnded[0].At.Equal(recorded) ||
			!strings.HasPrefix(again.AlreadyEnded[0].Reason, "already ended") {
			t.Fatalf("the end sent again: %+v, %v", again, err)
		}
		// An earlier end of the same request, with a usage row beside it: refused with
		// its reason; the usage applies.
		pl.Clock.Advance(5 * time.Minute)
		early := endAt.Add(-10 * time.Minute)
		out, err := pl.r.Report(ctx, "us-east", fleet.AgentReport{
			Ends:  []fleet.EndReport{{Reservation: v.ID, Request: 0, At: early}},
			Usage: []fleet.UsageReport{{Reservation: v.ID, Request: 1, Pool: "us-east/cpu", Units: 7}}})
		if err != nil || len(out.RefusedEnds) != 1 || len(out.AlreadyEnded) != 0 {
			t.Fatalf("an earlier end: %+v, %v", out, err)
		}
		if r := out.RefusedEnds[0].Reason; !strings.Contains(r, "already ended at "+recorded.UTC().Format(time.RFC3339)) || !strings.Contains(r, "out of order") {
			t.Errorf("the refusal says %q", r)
		}
		got, _ = pl.r.Reservation(ctx, v.ID)
		if !got.Requests[0].EndedAt.Equal(recorded) {
			t.Errorf("request 0 now ended at %s, was %s", got.Requests[0].EndedAt, recorded)
		}
		if u := got.Requests[1].UsageByPool()["us-east/cpu"]; u != 7 {
			t.Errorf("the usage beside the refused end was not applied: %v", got.Requests[1].Usage)
		}
		if b := pl.Balance("ads"); b != after {
			t.Errorf("the balance moved from %+v to %+v", after, b)
		}

		// An end of a reservation that never ran (a new id): refused.
		id, err := pl.r.NewReservation(ctx, pl.Users["member@ads"])
		if err != nil {
			t.Fatal(err)
		}
		never, err := pl.r.Report(ctx, "us-east", fleet.AgentReport{Ends: []fleet.EndReport{{Reservation: id, Request: 0, At: pl.Clock.Now()}}})
		if err == nil && (len(never.RefusedEnds) != 1 || !strings.Contains(never.RefusedEnds[0].Reason, "never ran")) {
			t.Errorf("an end of a reservation that never ran: %+v", never)
		}
		pl.trialBalanceIsZero()
		if vs := pl.violations(); len(vs) != 0 {
			t.Errorf("violations: %v", vs)
		}
	})
}
