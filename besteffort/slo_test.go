package besteffort_test

import (
	"context"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func ptr(x float64) *float64 { return &x }

// finishRunning reports every running best-effort task of us-east done, with the
// measurements given, and returns how many it ended.
func (x *idle) finishRunning(ms ...besteffort.JobMeasurement) int {
	x.T.Helper()
	ctx := context.Background()
	alloc, err := x.be.Allocation(ctx, "us-east")
	if err != nil {
		x.T.Fatal(err)
	}
	var evs []besteffort.TaskEvent
	for _, r := range alloc.Run {
		evs = append(evs, besteffort.TaskEvent{Task: r.Task, Event: "done", At: x.Clock.Now()})
	}
	if err := x.be.Report(ctx, "us-east", besteffort.Report{Tasks: evs, Measured: ms}); err != nil {
		x.T.Fatal(err)
	}
	return len(evs)
}

// The SLO variant: the $30 job's minimum utility (half the freed cores) fits alone,
// the $10 job's (80%) cannot fit beside it, so the first is served first and takes
// every freed core while it waits, the second runs on what it leaves. When both are
// done the first, whose SLO was met, is charged; the second, never served, is not:
// its hold is released. The trial balance stays zero and verify finds nothing.
func TestAbacusSLOServesJobsWhoseSLOsFitFirstAndChargesOnlyWhenMet(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		x.abacus()
		rich := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(1), Tasks: 150, Budget: 30 * ledger.Dollar, MinUtility: ptr(0.5)})
		poor := x.submit("member@ml", besteffort.JobSpec{Configuration: cpu(1), Tasks: 50, Budget: 10 * ledger.Dollar, MinUtility: ptr(0.8)})
		if r := x.step("us-east"); r.Started != 100 {
			t.Fatalf("first decision started %d", r.Started)
		}
		if r, p := x.job(rich.ID).Running, x.job(poor.ID).Running; r != 100 || p != 0 {
			t.Fatalf("served job runs %d, the other %d; want 100 and 0", r, p)
		}
		a, err := x.be.Auction(ctx, "us-east")
		if err != nil || !a.SLO || len(a.Jobs) != 2 || !a.Jobs[0].Served || a.Jobs[1].Served || a.Revenue != 30 {
			t.Fatalf("auction: %+v %v", a, err)
		}
		if got := x.job(rich.ID).SharesByPool()["us-east/cpu"]; got != 1 {
			t.Fatalf("the served job's share %g, want 1 (alone among the served)", got)
		}
		for range 10 {
			if x.finishRunning() == 0 {
				break
			}
			x.step("us-east")
		}
		r, p := x.job(rich.ID), x.job(poor.ID)
		if r.Status != besteffort.JobDone || p.Status != besteffort.JobDone {
			t.Fatalf("jobs %s and %s, want both done", r.Status, p.Status)
		}
		if r.SLO != "met" || r.Captured != 30*ledger.Dollar || r.Released != 0 {
			t.Fatalf("served job: SLO %q, captured %s, released %s", r.SLO, r.Captured, r.Released)
		}
		if p.SLO != "missed" || p.Captured != 0 || p.Released != 10*ledger.Dollar {
			t.Fatalf("unserved job: SLO %q, captured %s, released %s", p.SLO, p.Captured, p.Released)
		}
		if m := p.MeanShares()["us-east/cpu"]; m != 0 || p.Auctions == 0 {
			t.Fatalf("unserved job's mean guaranteed share %g over %d auctions", m, p.Auctions)
		}
		if b := x.Balance("ml"); b.Held != 0 || b.Posted != 2000*ledger.Dollar {
			t.Fatalf("ml: held %s, posted %s", b.Held, b.Posted)
		}
		if b := x.Balance("search"); b.Held != 0 || b.Posted != 970*ledger.Dollar {
			t.Fatalf("search: held %s, posted %s", b.Held, b.Posted)
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
		if vs, err := x.be.Verify(ctx); err != nil || len(vs) != 0 {
			t.Fatalf("best-effort violations: %v %v", vs, err)
		}
		// verify notices a job marked met that was not charged its budget.
		if err := db.Write.Exec("UPDATE best_effort_jobs SET slo = 'met' WHERE id = ?", poor.ID).Error; err != nil {
			t.Fatal(err)
		}
		if vs, err := x.be.Verify(ctx); err != nil || len(vs) != 1 || !strings.Contains(vs[0].Check, "SLO") {
			t.Fatalf("violations after the corruption: %+v %v", vs, err)
		}
	})
}

// Minimum utilities a job can never reach, or that are not numbers, or outside the
// abacus policy, are refused naming min_utility, and nothing is saved.
func TestBadMinimumUtilitiesAreRefused(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		u := x.Users["member@search"]
		if _, err := x.be.Submit(ctx, u, besteffort.JobSpec{Configuration: cpu(1), Tasks: 1, MinUtility: ptr(0.5)}); clearhouse.ErrorCode(err) != clearhouse.EINVALID ||
			!strings.Contains(err.Error(), "minimum utility") {
			t.Fatalf("outside abacus: %v", err)
		}
		x.abacus()
		both := map[string]int64{"us-east/cpu": 1, "us-east/ram": 4}
		for _, c := range []struct {
			spec besteffort.JobSpec
			want string
		}{
			{besteffort.JobSpec{Configuration: cpu(1), Tasks: 1, Budget: ledger.Dollar, MinUtility: ptr(1.5)}, "at most 1"},
			{besteffort.JobSpec{Configuration: both, Tasks: 1, Budget: ledger.Dollar, Weights: map[string]float64{"us-east/cpu": 3}, MinUtility: ptr(4.5)}, "at most 4"},
			{besteffort.JobSpec{Configuration: cpu(1), Tasks: 1, Budget: ledger.Dollar, MinUtility: ptr(0)}, "above 0"},
			{besteffort.JobSpec{Configuration: cpu(1), Tasks: 1, Budget: ledger.Dollar, Utility: "log", MinUtility: ptr(0.1)}, "up to 0"},
		} {
			_, err := x.be.Submit(ctx, u, c.spec)
			if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.HasPrefix(clearhouse.ErrorMessage(err), "min_utility:") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v: %v, want min_utility ... %s", c.spec, err, c.want)
			}
		}
		if js, _ := x.be.Jobs(ctx, besteffort.JobFilter{}); len(js) != 0 {
			t.Fatalf("refused jobs saved: %d", len(js))
		}
		if b := x.Balance("search"); b.Held != 0 {
			t.Fatalf("refused jobs held %s", b.Held)
		}
		// Within range it is accepted: 4 with weights 3 and 1.
		v := x.submit("member@search", besteffort.JobSpec{Configuration: both, Tasks: 1, Budget: ledger.Dollar, Weights: map[string]float64{"us-east/cpu": 3}, MinUtility: ptr(4)})
		if v.MinUtility == nil || *v.MinUtility != 4 || v.WeightsFrom != "given" {
			t.Fatalf("job: min %v, weights from %q", v.MinUtility, v.WeightsFrom)
		}
	})
}
