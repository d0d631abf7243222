package scheduler

import (
	"math/rand/v2"
	"testing"
)

// The daily profile never estimates above any capacity it observed near that time
// of day, on any day; the quantile never above the Q-quantile of what it saw.
func TestSupplyPredictorsAreConservative(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	d := NewDailySupply(24, 1)
	q := &QuantileSupply{Q: 0.1}
	seen := map[int][]int64{}
	var all []int64
	for t := Slot(-24); t < 72; t++ {
		u := int64(50 + rng.IntN(50))
		d.Observe(t, u)
		q.Observe(t, u)
		k := ((int(t) % 24) + 24) % 24
		seen[k] = append(seen[k], u)
		all = append(all, u)
	}
	for slot := Slot(72); slot < 96; slot++ {
		e := d.Estimate(slot)
		for w := -1; w <= 1; w++ {
			for _, u := range seen[((int(slot)+w)%24+24)%24] {
				if e > u {
					t.Fatalf("slot %d: daily estimate %d above %d observed within an hour of that time", slot, e, u)
				}
			}
		}
	}
	below := 0
	for _, u := range all {
		if u < q.Estimate(0) {
			below++
		}
	}
	if float64(below) > 0.1*float64(len(all)) {
		t.Fatalf("quantile estimate %d: %d of %d observations below it", q.Estimate(0), below, len(all))
	}
	if (&QuantileSupply{Q: 0.1}).Estimate(5) != 0 || NewDailySupply(24, 1).Estimate(5) != 0 {
		t.Fatal("an estimate before any observation")
	}
}

// ERA's Azure setting with a supply predictor: every slot the cloud has announced
// is planned with at most what it announced (PlannedAboveAnnounced is 0 for both
// predictors, one and four hours of foresight, econ and greedy); and planning the
// unannounced hours with the daily profile, not the whole share, loses fewer
// reservations when the background rises.
func TestSupplyPredictorNeverPlansAboveAnnouncedCapacity(t *testing.T) {
	jobs := GenerateMapReduce(1500, 3, 100)
	for _, foresight := range []Slot{12, 48} {
		cloud := Cloud{Seed: 2, Share: 0.2, BackgroundLoad: 0.6, Foresight: foresight}
		var atRisk [2]int
		for k, supply := range []func() SupplyPredictor{nil, func() SupplyPredictor { return NewDailySupply(288, 12) },
			func() SupplyPredictor { return &QuantileSupply{Q: 0.1} }} {
			for _, algo := range []Algorithm{BasicEcon{Predictor: NewSeasonal(300)}, Greedy{UnitPrice: 0.5}} {
				cfg := SimConfig{Capacity: 500, Cloud: cloud, PlanShare: 0.8}
				if supply != nil {
					cfg.Supply = supply()
				}
				out, err := SimulateWith(jobs, algo, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if out.PlannedAboveAnnounced != 0 {
					t.Fatalf("foresight %d, supply %d, %s: %d announced slots planned above the announcement", foresight, k, algo.Name(), out.PlannedAboveAnnounced)
				}
				if k < 2 && algo.Name() != "greedy" {
					atRisk[k] = out.AtRisk
				}
			}
		}
		if foresight == 12 && !(atRisk[1] < atRisk[0]) {
			t.Errorf("one hour of foresight: econ lost %d reservations with the daily profile, %d planning with the whole share", atRisk[1], atRisk[0])
		}
	}
}

// Failed tasks re-run on the spare capacity: one job of 2 units for 4 slots whose
// task fails is started again and ends by its deadline (not late); without Rerun,
// or with a deadline too close for a second run, it is late.
func TestFailedTasksRerunOnSpareCapacity(t *testing.T) {
	jobs := []Job{{ID: "j", Width: 2, Duration: 4, Arrival: 0, Deadline: 40, Submit: 0, Value: 100}}
	cloud := Cloud{Seed: 1, FailureShare: 1}
	for _, c := range []struct {
		rerun          bool
		deadline       Slot
		reruns, onTime int
		late           int
	}{{true, 40, 1, 1, 0}, {false, 40, 0, 0, 1}, {true, 6, 0, 0, 1}} {
		jobs[0].Deadline = c.deadline
		out, err := SimulateWith(jobs, Greedy{UnitPrice: 1}, SimConfig{Capacity: 10, Cloud: cloud, Rerun: c.rerun, PlanShare: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		if out.AcceptedJobs != 1 || out.Failed != 1 || out.Reruns != c.reruns || out.RerunsOnTime != c.onTime || out.LateJobs != c.late {
			t.Fatalf("rerun %v, deadline %d: %+v", c.rerun, c.deadline, out)
		}
	}
}
