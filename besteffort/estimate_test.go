package besteffort_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// The estimated start: the next job starts as soon as units free up; a later one
// waits a task's run time for each wave of the tasks ahead of it over the tasks
// running now; with nothing running there is no pace to go by and no estimate.
func TestEstimatedStartFollowsTheQueueAndThePace(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		// ads uses its 60 cores: 40 of 100 are free and 30 are kept free, so 10 may
		// lend; tasks of 20 cores never fit and nothing runs.
		x.usage(60)
		a := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(20), Tasks: 5, MaxTaskDuration: time.Hour})
		b := x.submit("member@ml", besteffort.JobSpec{Configuration: cpu(20), Tasks: 5, MaxTaskDuration: time.Hour})
		x.step("us-east")
		va, vb := x.job(a.ID), x.job(b.ID)
		first, second := va, vb
		if vb.Position == 1 {
			first, second = vb, va
		}
		now := x.Clock.Now()
		if first.Position != 1 || first.EstimatedStart == nil || !first.EstimatedStart.Equal(now) {
			t.Fatalf("the next job: position %d, estimate %v; want 1 and now", first.Position, first.EstimatedStart)
		}
		if second.Position != 6 || second.EstimatedStart != nil {
			t.Fatalf("with nothing running: position %d, estimate %v; want 6 and none", second.Position, second.EstimatedStart)
		}
		if _, err := x.be.Cancel(ctx, x.Users["member@search"], a.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := x.be.Cancel(ctx, x.Users["member@ml"], b.ID); err != nil {
			t.Fatal(err)
		}
		// 10 one-core tasks of search's run; ml queues 15 after search has used
		// some, so ml goes first and search's 2 waiting tasks have 15 ahead: one
		// wave of 10 running tasks of an hour (their maximum; none ended yet).
		s := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(1), Tasks: 12, MaxTaskDuration: time.Hour})
		if r := x.step("us-east"); r.Started != 10 {
			t.Fatalf("started %d, want 10", r.Started)
		}
		x.Clock.Advance(10 * time.Minute)
		m := x.submit("member@ml", besteffort.JobSpec{Configuration: cpu(1), Tasks: 15, MaxTaskDuration: time.Hour})
		x.step("us-east")
		vs, vm := x.job(s.ID), x.job(m.ID)
		now = x.Clock.Now()
		if vm.Position != 1 || vm.EstimatedStart == nil || !vm.EstimatedStart.Equal(now) {
			t.Fatalf("ml's job: position %d, estimate %v; want 1 and now", vm.Position, vm.EstimatedStart)
		}
		if want := now.Add(time.Hour); vs.Position != 16 || vs.EstimatedStart == nil || !vs.EstimatedStart.Equal(want) {
			t.Fatalf("search's job: position %d, estimate %v; want 16 and %s", vs.Position, vs.EstimatedStart, want)
		}
	})
}
