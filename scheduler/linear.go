package scheduler

import "math"

// Linear is ERA section 4's "linear predictor that is based on prior knowledge of
// the job distributions": its inverse demand falls linearly from High (no unit of
// demand left at a higher price) to Low (all of it arrives at Low or more) over
// Demand, the units per slot the job distribution asks for, scaled by the share
// of a slot's demand still to arrive when it is Lead slots or fewer ahead (jobs
// ask for a slot up to Lead slots before it). It learns nothing: the distribution
// is known in advance (LinearFromJobs reads it from a workload). It is not a
// UnitPricer: Basic-Econ prices its units one call each (it serves the simulator).
type Linear struct {
	High, Low float64
	Demand    float64 // units of demand per slot, at price Low
	Lead      Slot    // how far ahead demand for a slot arrives (0: all of it is still to come)
}

// Price implements Predictor: High - (High - Low) q / D for a demand of q units,
// with D the demand still to arrive for the slot; 0 when q exceeds D.
func (l Linear) Price(_ string, slot, now Slot, quantity int64) float64 {
	d := l.Demand
	if l.Lead > 0 {
		d *= min(max(float64(slot-now), 0)/float64(l.Lead), 1)
	}
	q := float64(max(quantity, 0))
	if d <= 0 || q > d {
		return 0
	}
	return l.High - (l.High-l.Low)*q/d
}

// LinearFromJobs is the prior knowledge a Linear predictor needs, read from a
// workload's distribution: the units per slot its jobs ask for over its span, the
// lowest and highest value per unit-slot, and the mean window (deadline less
// submission) as the lead.
func LinearFromJobs(jobs []Job) Linear {
	if len(jobs) == 0 {
		return Linear{}
	}
	l := Linear{Low: math.Inf(1)}
	var unitSlots, lead float64
	first, last := jobs[0].Submit, jobs[0].Deadline
	for _, j := range jobs {
		us := float64(j.Width+j.Overhead) * float64(j.Duration)
		unitSlots += us
		if us > 0 {
			l.Low = min(l.Low, j.Value/us)
			l.High = max(l.High, j.Value/us)
		}
		lead += float64(j.Deadline - j.Submit)
		first, last = min(first, j.Submit), max(last, j.Deadline)
	}
	l.Demand = unitSlots / float64(max(last-first, 1))
	l.Lead = Slot(math.Round(lead / float64(len(jobs))))
	return l
}
