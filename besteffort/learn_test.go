package besteffort_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// Utility learning end to end: budget-only jobs of one kind (cpu and ram) bid with
// equal weights until the team has four measured jobs (twice the pools); the agent
// reports each one's utility (true weights 2 on cpu and 0.5 on ram) and average
// shares with its last task's end; the least-squares fit then finds the weights, and
// the next budget-only job of the kind bids with them. A job that gives weights keeps
// them; a measurement of a job not done is ignored, one that differs from an earlier
// one refused.
func TestBudgetOnlyJobsLearnTheirTeamsWeights(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		x.abacus()
		kind := map[string]int64{"us-east/cpu": 1, "us-east/ram": 2}
		spec := besteffort.JobSpec{Configuration: kind, Tasks: 1, Budget: 5 * ledger.Dollar}
		mixes := [][2]float64{{0.9, 0.2}, {0.3, 0.8}, {0.6, 0.6}, {0.2, 0.1}, {0.5, 0.95}}
		for k, mix := range mixes[:4] {
			j := x.submit("member@search", spec)
			if j.WeightsFrom != "equal" || j.Weights != "" {
				t.Fatalf("job %d before the fit: weights %q from %q", k, j.Weights, j.WeightsFrom)
			}
			x.step("us-east")
			if k == 0 { // a measurement before the job is done is ignored
				if err := x.be.Report(ctx, "us-east", besteffort.Report{Measured: []besteffort.JobMeasurement{{Job: j.ID, Utility: 1}}}); err != nil {
					t.Fatalf("measuring a running job: %v", err)
				}
				if v := x.job(j.ID); v.MeasuredUtility != nil {
					t.Fatalf("a running job's measurement was kept: %v", *v.MeasuredUtility)
				}
			}
			m := besteffort.JobMeasurement{Job: j.ID, Utility: 2*mix[0] + 0.5*mix[1], Shares: map[string]float64{"us-east/cpu": mix[0], "us-east/ram": mix[1]}}
			x.finishRunning(m)
			if v := x.job(j.ID); v.Status != besteffort.JobDone || v.MeasuredUtility == nil || *v.MeasuredUtility != m.Utility {
				t.Fatalf("job %d: %s, measured %v", k, v.Status, v.MeasuredUtility)
			}
			fits, err := x.be.Fits(ctx, "search")
			if err != nil || len(fits) != 1 {
				t.Fatalf("fits: %+v %v", fits, err)
			}
			want := "too-few-samples"
			if k == 3 {
				want = "ok"
			}
			if f := fits[0]; f.Outcome != want || f.Samples != k+1 || f.Kind != "us-east/cpu,us-east/ram" || f.Utility != "linear" {
				t.Fatalf("after %d jobs: %+v, want %s", k+1, f, want)
			}
			if k == 0 { // the same measurement again is a no-op; another is refused
				if err := x.be.Report(ctx, "us-east", besteffort.Report{Measured: []besteffort.JobMeasurement{m}}); err != nil {
					t.Fatalf("repeating a measurement: %v", err)
				}
				other := m
				other.Utility++
				if err := x.be.Report(ctx, "us-east", besteffort.Report{Measured: []besteffort.JobMeasurement{other}}); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
					t.Fatalf("another measurement of a measured job: %v", err)
				}
			}
		}
		fits, _ := x.be.Fits(ctx, "search")
		w := fits[0].WeightsByPool()
		if math.Abs(w["us-east/cpu"]-2) > 1e-9 || math.Abs(w["us-east/ram"]-0.5) > 1e-9 || fits[0].RMSE > 1e-9 {
			t.Fatalf("fitted weights %v (RMSE %g), want cpu 2 and ram 0.5", w, fits[0].RMSE)
		}
		next := x.submit("member@search", spec)
		if got := next.WeightsByPool(); next.WeightsFrom != "fitted" || math.Abs(got["us-east/cpu"]-2) > 1e-9 || math.Abs(got["us-east/ram"]-0.5) > 1e-9 {
			t.Fatalf("the next budget-only job bids with %v from %q", got, next.WeightsFrom)
		}
		given := spec
		given.Weights = map[string]float64{"us-east/ram": 3}
		if g := x.submit("member@search", given); g.WeightsFrom != "given" || g.WeightsByPool()["us-east/ram"] != 3 {
			t.Fatalf("a job with weights: %v from %q", g.WeightsByPool(), g.WeightsFrom)
		}
		// Another kind (cpu only) and another team learn nothing from these.
		if o := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(1), Tasks: 1, Budget: ledger.Dollar}); o.WeightsFrom != "equal" {
			t.Fatalf("a cpu-only job: weights from %q", o.WeightsFrom)
		}
		if o := x.submit("member@ml", spec); o.WeightsFrom != "equal" {
			t.Fatalf("another team's job: weights from %q", o.WeightsFrom)
		}
		// The quote bids with the learned weights too.
		q, err := x.be.Quote(ctx, x.Users["member@search"], spec)
		if err != nil || math.Abs(q.Weights["us-east/cpu"]-2) > 1e-9 {
			t.Fatalf("quote: %+v %v", q, err)
		}
		if vs, err := x.be.Verify(ctx); err != nil || len(vs) != 0 {
			t.Fatalf("best-effort violations: %v %v", vs, err)
		}
	})
}

// A measurement must name a done abacus job of the reporting cluster, with a number
// for a utility and shares of its own pools in [0, 1]; a bad one refuses the whole
// report, which changes nothing.
func TestBadMeasurementsAreRefused(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	x := newIdle(t, db)
	ctx := context.Background()
	x.abacus()
	j := x.submit("member@search", besteffort.JobSpec{Configuration: cpu(1), Tasks: 1, Budget: ledger.Dollar})
	x.step("us-east")
	x.finishRunning()
	for _, c := range []struct {
		m    besteffort.JobMeasurement
		want string
	}{
		{besteffort.JobMeasurement{Job: 999, Utility: 1}, "no best-effort job 999"},
		{besteffort.JobMeasurement{Job: j.ID, Utility: math.NaN()}, "utility: must be a number"},
		{besteffort.JobMeasurement{Job: j.ID, Utility: 1, Shares: map[string]float64{"us-east/ram": 0.5}}, `does not use pool "us-east/ram"`},
		{besteffort.JobMeasurement{Job: j.ID, Utility: 1, Shares: map[string]float64{"us-east/cpu": 1.5}}, "must be from 0 to 1"},
	} {
		err := x.be.Report(ctx, "us-east", besteffort.Report{Measured: []besteffort.JobMeasurement{c.m}})
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(err.Error(), "best_effort_jobs[0]") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %s", c.m, err, c.want)
		}
	}
	if v := x.job(j.ID); v.MeasuredUtility != nil {
		t.Fatalf("a refused measurement was saved: %v", *v.MeasuredUtility)
	}
	if fits, _ := x.be.Fits(ctx, "search"); len(fits) != 0 {
		t.Fatalf("refused measurements fitted: %+v", fits)
	}
}
