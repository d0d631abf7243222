package besteffort_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// idle is a market with the best-effort service: ads holds 60 of us-east's 100
// cores, the operator the other 40.
type idle struct {
	*exchangetest.Market
	be *besteffort.Service
}

func newIdle(t testing.TB, db *store.DB) *idle {
	t.Helper()
	mk := exchangetest.NewAuctionMarket(t, db)
	return &idle{Market: mk, be: besteffort.New(db, mk.L, mk.Clock.Now, besteffort.DefaultConfig)}
}

func (x *idle) submit(who string, spec besteffort.JobSpec) besteffort.JobView {
	x.T.Helper()
	v, err := x.be.Submit(context.Background(), x.Users[who], spec)
	if err != nil {
		x.T.Fatal(err)
	}
	return v
}

func (x *idle) job(id int64) besteffort.JobView {
	x.T.Helper()
	v, err := x.be.Job(context.Background(), id)
	if err != nil {
		x.T.Fatal(err)
	}
	return v
}

func (x *idle) step(cluster string) besteffort.StepResult {
	x.T.Helper()
	r, err := x.be.Step(context.Background(), cluster)
	if err != nil {
		x.T.Fatal(err)
	}
	return r
}

func (x *idle) balance(team, pool string) besteffort.IdleBalance {
	x.T.Helper()
	var b besteffort.IdleBalance
	if err := x.DB.Read.Where("team_id = ? AND pool_id = ?", team, pool).Limit(1).Find(&b).Error; err != nil {
		x.T.Fatal(err)
	}
	return b
}

func cpu(units int64) map[string]int64 { return map[string]int64{"us-east/cpu": units} }

func TestBadBestEffortJobsAreRefusedAndSaveNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		for _, c := range []struct {
			name, who string
			spec      besteffort.JobSpec
			code      string
			says      string
		}{
			{"unknown pool", "member@search", besteffort.JobSpec{Configuration: map[string]int64{"us-east/gpu": 1}, Tasks: 1}, clearhouse.EINVALID, `no pool "us-east/gpu"`},
			{"two clusters", "member@search", besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": 1, "eu-west/cpu": 1}, Tasks: 1}, clearhouse.EINVALID, "different clusters"},
			{"no tasks", "member@search", besteffort.JobSpec{Configuration: cpu(1), Tasks: 0}, clearhouse.EINVALID, "tasks: must be from 1"},
			{"absurd tasks", "member@search", besteffort.JobSpec{Configuration: cpu(1), Tasks: 1 << 40}, clearhouse.EINVALID, "tasks: must be from 1"},
			{"task larger than the pool", "member@search", besteffort.JobSpec{Configuration: cpu(101), Tasks: 1}, clearhouse.EINVALID, "can never fit"},
			{"zero units", "member@search", besteffort.JobSpec{Configuration: cpu(0), Tasks: 1}, clearhouse.EINVALID, "units per task"},
			{"short max duration", "member@search", besteffort.JobSpec{Configuration: cpu(1), Tasks: 1, MaxTaskDuration: time.Second}, clearhouse.EINVALID, "max_task_duration"},
			{"budget outside abacus", "member@search", besteffort.JobSpec{Configuration: cpu(1), Tasks: 1, Budget: 1}, clearhouse.EINVALID, "budget"},
			{"another team", "member@search", besteffort.JobSpec{Team: "ads", Configuration: cpu(1), Tasks: 1}, clearhouse.EFORBIDDEN, "cannot act for team"},
			{"no team", "owner@search", besteffort.JobSpec{Team: "nobody", Configuration: cpu(1), Tasks: 1}, clearhouse.EFORBIDDEN, "cannot act for team"},
		} {
			_, err := x.be.Submit(ctx, x.Users[c.who], c.spec)
			if clearhouse.ErrorCode(err) != c.code || !contains(clearhouse.ErrorMessage(err), c.says) {
				t.Errorf("%s: got %v (%s), want %s saying %q", c.name, err, clearhouse.ErrorCode(err), c.code, c.says)
			}
		}
		var n int64
		if err := db.Read.Model(&besteffort.Job{}).Count(&n).Error; err != nil || n != 0 {
			t.Fatalf("refused jobs left %d rows (%v)", n, err)
		}
	})
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestSubmittingTwiceWithOneKeyQueuesOneJob(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		spec := besteffort.JobSpec{Configuration: cpu(2), Tasks: 5, Key: "k1"}
		a, b := x.submit("member@search", spec), x.submit("member@search", spec)
		if a.ID != b.ID || a.Status != besteffort.JobQueued || a.Queued != 5 {
			t.Fatalf("replay: %d then %d (%s, %d queued)", a.ID, b.ID, a.Status, a.Queued)
		}
		spec.Tasks = 6
		if _, err := x.be.Submit(context.Background(), x.Users["member@search"], spec); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
			t.Fatalf("another job under the key: %v", err)
		}
		// Another team may use the same key.
		if c := x.submit("member@ml", besteffort.JobSpec{Configuration: cpu(2), Tasks: 5, Key: "k1"}); c.ID == a.ID {
			t.Fatal("ml's key collided with search's")
		}
	})
}

func TestIdleQuotaRunsBestEffortTasksUntilItsOwnerNeedsIt(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		if err := x.be.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/cpu", Policy: "direct-orig", Alpha: 0.5, MinRuntime: 10 * time.Minute, Exposure: 0.3}); err != nil {
			t.Fatal(err)
		}
		j := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(10), Tasks: 10})
		// 100 cores idle, 30 kept free: 7 tasks of 10 cores start.
		if r := x.step("us-east"); r.Started != 7 {
			t.Fatalf("started %d tasks, want 7", r.Started)
		}
		v := x.job(j.ID)
		if v.Status != besteffort.JobRunning || v.Running != 7 || v.Queued != 3 || v.Position != 1 {
			t.Fatalf("after the start: %s, %d running, %d queued, position %d", v.Status, v.Running, v.Queued, v.Position)
		}
		alloc, err := x.be.Allocation(ctx, "us-east")
		if err != nil || len(alloc.Run) != 7 || len(alloc.Stop) != 0 {
			t.Fatalf("allocation: %d to run, %d to stop (%v)", len(alloc.Run), len(alloc.Stop), err)
		}
		// An hour later ads runs 60 cores of its own: the pool needs 30 back, after
		// the minimum runtime; 3 of search's tasks stop and go back to the queue.
		x.Clock.Advance(time.Hour)
		if err := x.be.Report(ctx, "us-east", besteffort.Report{Usage: []besteffort.OwnerUsage{{Team: "ads", Pool: "us-east/cpu", Units: 60}}}); err != nil {
			t.Fatal(err)
		}
		r := x.step("us-east")
		if len(r.Preempted) != 3 || r.Started != 0 {
			t.Fatalf("preempted %v, started %d; want 3 preempted", r.Preempted, r.Started)
		}
		v = x.job(j.ID)
		if v.Running != 4 || v.Queued != 6 || v.Preempted != 3 {
			t.Fatalf("after preemption: %d running, %d queued, %d preempted", v.Running, v.Queued, v.Preempted)
		}
		alloc, _ = x.be.Allocation(ctx, "us-east")
		if len(alloc.Run) != 4 || len(alloc.Stop) != 3 {
			t.Fatalf("allocation after preemption: %d to run, %d to stop", len(alloc.Run), len(alloc.Stop))
		}
		// The first hour: 70 cores of search's tasks ran, 42 on ads's quota, 28 on the operator's.
		search, ads, op := x.balance("search", "us-east/cpu"), x.balance("ads", "us-east/cpu"), x.balance("@operator", "us-east/cpu")
		if !near(search.Surface, 70) || !near(ads.LentSurface, 42) || !near(op.LentSurface, 28) {
			t.Fatalf("after an hour: search used %g, ads lent %g, operator lent %g; want 70, 42, 28", search.Surface, ads.LentSurface, op.LentSurface)
		}
		if !near(search.Orig, 35) || !near(ads.LentOrig, 21) {
			t.Fatalf("ORIG after an hour: search %g, ads lent %g; want 35 and 21 (w t^2 / 2)", search.Orig, ads.LentOrig)
		}
		// The agent confirms the stops; they leave the allocation.
		var evs []besteffort.TaskEvent
		for _, s := range alloc.Stop {
			evs = append(evs, besteffort.TaskEvent{Task: s.Task, Event: "stopped", At: x.Clock.Now()})
		}
		for _, s := range alloc.Run[:2] {
			evs = append(evs, besteffort.TaskEvent{Task: s.Task, Event: "done", At: x.Clock.Now()})
		}
		if err := x.be.Report(ctx, "us-east", besteffort.Report{Tasks: evs}); err != nil {
			t.Fatal(err)
		}
		v = x.job(j.ID)
		alloc, _ = x.be.Allocation(ctx, "us-east")
		if v.Done != 2 || v.Running != 2 || len(alloc.Stop) != 0 || len(alloc.Run) != 2 {
			t.Fatalf("after the report: %d done, %d running; allocation %d run, %d stop", v.Done, v.Running, len(alloc.Run), len(alloc.Stop))
		}
	})
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

func TestASilentAgentsTasksAreRequeued(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		j := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(10), Tasks: 2})
		if r := x.step("us-east"); r.Started != 2 {
			t.Fatalf("started %d", r.Started)
		}
		x.Clock.Advance(5 * time.Minute)
		if rep, err := x.be.Tick(context.Background()); err != nil || rep.Requeued["us-east"] != 0 {
			t.Fatalf("requeued after 5 minutes: %v %v", rep, err)
		}
		x.Clock.Advance(6 * time.Minute)
		if rep, err := x.be.Tick(context.Background()); err != nil || rep.Requeued["us-east"] != 2 {
			t.Fatalf("requeued after 11 minutes: %v %v", rep, err)
		}
		if v := x.job(j.ID); v.Status != besteffort.JobQueued || v.Queued != 2 || v.Running != 0 {
			t.Fatalf("after the timeout: %s, %d queued, %d running", v.Status, v.Queued, v.Running)
		}
	})
}

func TestCancellingAJobStopsItsTasks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		j := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(10), Tasks: 9})
		x.step("us-east")
		if _, err := x.be.Cancel(ctx, x.Users["member@ads"], j.ID); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			t.Fatalf("another team cancelled: %v", err)
		}
		v, err := x.be.Cancel(ctx, x.Users["member@search"], j.ID)
		if err != nil || v.Status != besteffort.JobCancelled || v.Cancelled != 9 || v.Running != 0 {
			t.Fatalf("cancelled: %+v %v", v.Job, err)
		}
		if _, err := x.be.Cancel(ctx, x.Users["member@search"], j.ID); err != nil {
			t.Fatalf("cancelling again: %v", err)
		}
		alloc, _ := x.be.Allocation(ctx, "us-east")
		if len(alloc.Run) != 0 || len(alloc.Stop) != 7 {
			t.Fatalf("allocation: %d run, %d stop", len(alloc.Run), len(alloc.Stop))
		}
	})
}

func TestBestEffortModelsMatchSchema(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		storetest.AssertModelsMatchSchema(t, db, &besteffort.Job{}, &besteffort.Task{}, &besteffort.IdleCluster{}, &besteffort.IdlePool{},
			&besteffort.IdleUsage{}, &besteffort.IdleBalance{}, &besteffort.IdleTeam{}, &besteffort.IdleFairness{}, &besteffort.WeightFit{}, &besteffort.IdleHistory{}, &besteffort.IdleUsagePoint{})
	})
}
