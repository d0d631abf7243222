package besteffort_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func (x *idle) abacus() {
	x.T.Helper()
	if err := x.be.SetSettings(context.Background(), besteffort.IdleSettings{Pool: "us-east/cpu", Policy: besteffort.PolicyAbacus, Alpha: 0.5, Exposure: 0}); err != nil {
		x.T.Fatal(err)
	}
}

// Two teams' Abacus jobs share us-east's freed cores in the ratio the auction
// says: budgets $30 and $10 on one resource at alpha 0.5 give shares
// sqrt(30) : sqrt(10), 63.4% and 36.6%, drawn per freed unit.
func TestAbacusJobsShareFreedUnitsInTheAuctionsRatio(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	x := newIdle(t, db)
	ctx := context.Background()
	x.abacus()
	rich := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(1), Tasks: 5000, Budget: 30 * ledger.Dollar, Utility: "linear"})
	poor := x.submit("member@ml", besteffort.JobSpec{Configuration: cpu(1), Tasks: 5000, Budget: 10 * ledger.Dollar, Utility: "linear"})
	if r := x.step("us-east"); r.Started != 100 {
		t.Fatalf("first decision started %d", r.Started)
	}
	a, err := x.be.Auction(ctx, "us-east")
	if err != nil || len(a.Jobs) != 2 {
		t.Fatalf("auction: %+v %v", a, err)
	}
	want := math.Sqrt(30) / (math.Sqrt(30) + math.Sqrt(10))
	if got := x.job(rich.ID).SharesByPool()["us-east/cpu"]; math.Abs(got-want) > 1e-3 {
		t.Fatalf("rich job's share %g, want %g", got, want)
	}
	before := map[int64]int64{rich.ID: x.job(rich.ID).Running, poor.ID: x.job(poor.ID).Running}
	const rounds, freed = 100, 20
	for range rounds {
		x.Clock.Advance(time.Minute)
		alloc, err := x.be.Allocation(ctx, "us-east")
		if err != nil {
			t.Fatal(err)
		}
		var evs []besteffort.TaskEvent
		for _, r := range alloc.Run[:freed] { // the oldest end
			evs = append(evs, besteffort.TaskEvent{Task: r.Task, Event: "done", At: x.Clock.Now()})
		}
		if err := x.be.Report(ctx, "us-east", besteffort.Report{Tasks: evs}); err != nil {
			t.Fatal(err)
		}
		if r := x.step("us-east"); r.Started != freed {
			t.Fatalf("a decision started %d of %d freed units", r.Started, freed)
		}
	}
	started := func(id int64) int64 { j := x.job(id); return j.Running + j.Done - before[id] }
	got := float64(started(rich.ID)) / float64(rounds*freed)
	// 2,000 draws: the standard deviation is about 1.1 points; allow 4.
	if math.Abs(got-want) > 0.045 {
		t.Fatalf("the rich job got %.3f of the freed units, the auction says %.3f", got, want)
	}
	t.Logf("rich job: %.3f of %d freed units (auction %.3f)", got, rounds*freed, want)
}

// An Abacus job's budget is held at submission, captured once when its last task
// is done, and a cancelled job's hold is released; the trial balance stays zero and
// verify finds nothing.
func TestAbacusBudgetsAreHeldCapturedOnceAndReleased(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		x.abacus()
		j := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(5), Tasks: 2, Budget: 7 * ledger.Dollar})
		c := x.submit("member@ml", besteffort.JobSpec{Configuration: cpu(5), Tasks: 2, Budget: 3 * ledger.Dollar, Utility: "log"})
		if b := x.Balance("search"); b.Held != 7*ledger.Dollar {
			t.Fatalf("held %s at submission, want 7.00", b.Held)
		}
		x.step("us-east")
		alloc, _ := x.be.Allocation(ctx, "us-east")
		var evs []besteffort.TaskEvent
		for _, r := range alloc.Run {
			if r.Job == j.ID {
				evs = append(evs, besteffort.TaskEvent{Task: r.Task, Event: "done", At: x.Clock.Now()})
			}
		}
		for range 2 { // the agent repeats its report: nothing more is charged
			if err := x.be.Report(ctx, "us-east", besteffort.Report{Tasks: evs}); err != nil {
				t.Fatal(err)
			}
		}
		v := x.job(j.ID)
		if v.Status != besteffort.JobDone || v.Captured != 7*ledger.Dollar {
			t.Fatalf("done job: %s, captured %s", v.Status, v.Captured)
		}
		if b := x.Balance("search"); b.Held != 0 || b.Posted != 993*ledger.Dollar {
			t.Fatalf("search after the charge: held %s, posted %s", b.Held, b.Posted)
		}
		st, err := x.L.Statement(ctx, ledger.TeamAccount("search"), x.Clock.Now().Add(-time.Hour), x.Clock.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		charges := 0
		for _, l := range st.Lines {
			if l.Ref == fmt.Sprintf("best-effort:%d", j.ID) {
				charges++
				if l.Reason != ledger.ReasonBestEffort || l.Amount != -7*ledger.Dollar {
					t.Fatalf("the charge is posted as %s of %s, want best-effort of -7.00", l.Reason, l.Amount)
				}
			}
		}
		if charges != 1 {
			t.Fatalf("%d charges for job %d on the statement, want 1", charges, j.ID)
		}
		if _, err := x.be.Cancel(ctx, x.Users["member@ml"], c.ID); err != nil {
			t.Fatal(err)
		}
		if v := x.job(c.ID); v.Released != 3*ledger.Dollar || v.Captured != 0 {
			t.Fatalf("cancelled job: captured %s, released %s", v.Captured, v.Released)
		}
		if b := x.Balance("ml"); b.Held != 0 || b.Posted != 2000*ledger.Dollar {
			t.Fatalf("ml after the cancel: held %s, posted %s", b.Held, b.Posted)
		}
		tb, err := x.L.TrialBalance(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var sum ledger.Money
		for _, a := range tb {
			sum += a.Posted
		}
		if sum != 0 {
			t.Fatalf("trial balance %s", sum)
		}
		x.Verify()
		vs, err := x.be.Verify(ctx)
		if err != nil || len(vs) != 0 {
			t.Fatalf("best-effort violations: %v %v", vs, err)
		}
	})
}

// The fairness report's Shapley values add up to the coalition's wait.
func TestFairnessReportsShapleyValuesSumToTheCoalitionsWait(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	x := newIdle(t, db)
	x.submit("member@search", besteffort.JobSpec{Configuration: cpu(10), Tasks: 20})
	x.submit("member@ml", besteffort.JobSpec{Configuration: cpu(20), Tasks: 10})
	x.step("us-east")
	x.Clock.Advance(30 * time.Minute)
	reports, err := x.be.ComputeFairness(context.Background())
	if err != nil || len(reports) != 2 || len(reports[0].Pools) != 1 {
		t.Fatalf("reports: %+v %v", reports, err)
	}
	p := reports[0].Pools[0]
	sum := 0.0
	for _, tf := range p.Teams {
		sum += tf.Shapley
	}
	if !p.Exact || math.Abs(sum-p.CoalitionValue) > 1e-6*max(1, p.CoalitionValue) || len(p.Unfairness) != 5 {
		t.Fatalf("shapley sums to %g, coalition %g (%+v)", sum, p.CoalitionValue, p)
	}
	stored, err := x.be.FairnessReports(context.Background())
	if err != nil || len(stored) != 2 {
		t.Fatalf("stored: %d %v", len(stored), err)
	}
}
