package besteffort_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// BenchmarkBestEffortDecision is one agent poll's decision on SQLite with 600 jobs
// waiting and 100 one-core tasks running: advance the accounts, build the snapshot,
// decide (DirectContr ORIG), record 10 starts after 10 reported ends.
func BenchmarkBestEffortDecision(b *testing.B) {
	db := storetest.New(b)
	x := newIdle(b, db)
	ctx := context.Background()
	if err := x.be.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/cpu", Policy: "direct-orig", Alpha: 0.5, Exposure: 0}); err != nil {
		b.Fatal(err)
	}
	for i := range 600 {
		who := []string{"member@search", "member@ml", "member@ads"}[i%3]
		if _, err := x.be.Submit(ctx, x.Users[who], besteffort.JobSpec{Configuration: cpu(1), Tasks: 1000}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := x.be.Step(ctx, "us-east"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		x.Clock.Advance(time.Minute)
		alloc, _ := x.be.Allocation(ctx, "us-east")
		var evs []besteffort.TaskEvent
		for _, r := range alloc.Run[:10] {
			evs = append(evs, besteffort.TaskEvent{Task: r.Task, Event: "done", At: x.Clock.Now()})
		}
		if err := x.be.Report(ctx, "us-east", besteffort.Report{Tasks: evs}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		r, err := x.be.Step(ctx, "us-east")
		if err != nil || r.Started != 10 {
			b.Fatalf("started %d: %v", r.Started, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/decision")
}
