package besteffort_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// Two servers share the database; many goroutines submit (some with one shared
// idempotency key), decide, report ends and owners' usage, and cancel, while the
// clock moves. Afterwards every job's counts match its task rows, one job exists per
// key, the pool runs no more than it has, and contributions equal utilities.
func TestBestEffortUnderConcurrency(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		if err := x.be.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/cpu", Policy: "direct-rel", Alpha: 0.5, Exposure: 0.1}); err != nil {
			t.Fatal(err)
		}
		servers := []*besteffort.Service{x.be, besteffort.New(storetest.Another(t, db), x.L, x.Clock.Now, besteffort.DefaultConfig)}
		users := []string{"member@search", "member@ml", "owner@ads", "owner@ml"}
		const workers = 16
		var wg sync.WaitGroup
		errs := make(chan error, 1000)
		report := func(err error) {
			if err != nil && clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
				errs <- err
			}
		}
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				be := servers[w%2]
				for i := range 12 {
					switch (w + i) % 6 {
					case 0, 1:
						spec := besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": int64(1 + (w+i)%7), "us-east/ram": 2}, Tasks: int64(1 + i%5)}
						if i%4 == 0 {
							spec = besteffort.JobSpec{Configuration: cpu(3), Tasks: 4, Key: "shared"}
						}
						who := users[(w+i)%len(users)]
						if spec.Key != "" {
							who = "member@search"
						}
						_, err := be.Submit(ctx, x.Users[who], spec)
						report(err)
					case 2:
						_, err := be.Step(ctx, "us-east")
						report(err)
					case 3:
						alloc, err := be.Allocation(ctx, "us-east")
						report(err)
						var evs []besteffort.TaskEvent
						for k, r := range alloc.Run {
							if k%2 == 0 {
								evs = append(evs, besteffort.TaskEvent{Task: r.Task, Event: []string{"done", "failed", "started"}[k%3], At: x.Clock.Now()})
							}
						}
						for _, s := range alloc.Stop {
							evs = append(evs, besteffort.TaskEvent{Task: s.Task, Event: "stopped", At: x.Clock.Now()})
						}
						report(be.Report(ctx, "us-east", besteffort.Report{Tasks: evs,
							Usage: []besteffort.OwnerUsage{{Team: "ads", Pool: "us-east/cpu", Units: int64(10 * ((w + i) % 7))}}}))
					case 4:
						jobs, err := be.Jobs(ctx, besteffort.JobFilter{Team: "ml", Limit: 3})
						report(err)
						if len(jobs) > 0 {
							_, err := be.Cancel(ctx, x.Users["owner@ml"], jobs[0].ID)
							report(err)
						}
					case 5:
						x.Clock.Advance(time.Minute)
						_, err := be.Tick(ctx)
						report(err)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		// One last decision with the minimum runtime passed brings the pool within capacity.
		x.Clock.Advance(time.Hour)
		x.step("us-east")
		checkBestEffortInvariants(t, x)
	})
}

func checkBestEffortInvariants(t *testing.T, x *idle) {
	t.Helper()
	db := x.DB.Read
	var jobs []besteffort.Job
	if err := db.Order("id").Find(&jobs).Error; err != nil {
		t.Fatal(err)
	}
	keyed := 0
	for _, j := range jobs {
		if j.IdemKey != nil {
			keyed++
		}
		var n struct{ Running, Done, Failed int64 }
		if err := db.Raw(`SELECT SUM(CASE WHEN status = 'running' THEN 1 ELSE 0 END) AS running,
			SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END) AS done,
			SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed FROM best_effort_tasks WHERE job_id = ?`, j.ID).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		if n.Running != j.Running || n.Done != j.Done || n.Failed != j.Failed {
			t.Errorf("job %d counts %d running, %d done, %d failed; its tasks say %+v", j.ID, j.Running, j.Done, j.Failed, n)
		}
		if j.Queued+j.Running+j.Done+j.Failed+j.Cancelled != j.Tasks {
			t.Errorf("job %d: counts do not add up to %d tasks", j.ID, j.Tasks)
		}
		want := besteffort.JobQueued
		switch {
		case j.Status == besteffort.JobCancelled:
			want = besteffort.JobCancelled
		case j.Running > 0:
			want = besteffort.JobRunning
		case j.Queued == 0:
			want = besteffort.JobDone
		}
		if j.Status != want {
			t.Errorf("job %d is %s with %d queued and %d running", j.ID, j.Status, j.Queued, j.Running)
		}
	}
	if keyed != 1 {
		t.Errorf("%d jobs under the shared idempotency key, want 1", keyed)
	}
	alloc, err := x.be.Allocation(context.Background(), "us-east")
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	for _, r := range alloc.Run {
		used += r.Configuration["us-east/cpu"]
	}
	var own besteffort.IdleUsage
	db.Where("team_id = ? AND pool_id = ?", "ads", "us-east/cpu").Limit(1).Find(&own)
	if used+own.Units > 100 {
		t.Errorf("us-east/cpu runs %d best-effort units beside ads's %d: more than its 100", used, own.Units)
	}
	var sums struct{ Use, Lent float64 }
	if err := db.Raw("SELECT SUM(surface) AS use, SUM(lent_surface) AS lent FROM idle_balances").Scan(&sums).Error; err != nil {
		t.Fatal(err)
	}
	if sums.Use <= 0 || math.Abs(sums.Use-sums.Lent) > 1e-6*sums.Use {
		t.Errorf("utility %g and contribution %g should be equal and positive", sums.Use, sums.Lent)
	}
	fmt.Fprintf(testWriter{t}, "%d jobs, %d running tasks, %.1f unit-hours run\n", len(jobs), len(alloc.Run), sums.Use)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
