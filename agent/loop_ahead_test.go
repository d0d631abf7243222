package agent

import (
	"context"
	"slices"
	"testing"
	"time"
)

// refusingBackend is a fakeBackend whose cluster refuses every upcoming job it is
// given.
type refusingBackend struct{ *fakeBackend }

func (b refusingBackend) FollowReservations(ctx context.Context, p Plan) (JobReport, error) {
	r, err := b.fakeBackend.FollowReservations(ctx, p)
	for _, j := range p.Upcoming {
		r.Unplaceable = append(r.Unplaceable, JobUnplaceable{Reservation: j.Reservation, Request: j.Request, Reason: "Requested nodes are busy"})
	}
	return r, err
}

// The loop hands the allocation's upcoming jobs to the backend, and the jobs the
// cluster refused to reserve to the server in that poll's report (issue 37).
func TestLoopCarriesUpcomingJobsAndTheirRefusals(t *testing.T) {
	later := Job{Reservation: 9, Request: 1, Team: "ads", Configuration: map[string]int64{"us-east/cpu": 1}, Count: 2,
		Start: epoch.Add(time.Hour), End: epoch.Add(2 * time.Hour)}
	f := &fakeServer{alloc: Allocation{Cluster: "us-east", Now: epoch, Upcoming: []Job{later}}}
	b := &fakeBackend{}
	l, _ := newTestLoop(t, f, refusingBackend{b})
	if err := l.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(b.plans) != 1 || len(b.plans[0].Upcoming) != 1 || b.plans[0].Upcoming[0].Reservation != 9 || !b.plans[0].Upcoming[0].Start.Equal(later.Start) {
		t.Fatalf("plans %+v: want the upcoming job handed to the backend", b.plans)
	}
	want := []JobUnplaceable{{Reservation: 9, Request: 1, Reason: "Requested nodes are busy"}}
	if len(f.reports) != 1 || !slices.Equal(f.reports[0].Unplaceable, want) {
		t.Fatalf("reports %+v: want unplaceable %+v", f.reports, want)
	}
}
