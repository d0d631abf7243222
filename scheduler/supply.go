package scheduler

import (
	"math"
	"slices"
)

// SupplyPredictor estimates the capacity the scheduler will have in slots the cloud
// has not announced yet, beside the demand predictor that prices them. ERA section 4
// (Azure Batch): "resources were constantly being allocated/freed in the underlying
// region and ERA had to account for this". A simulation plans every slot not yet
// announced with the estimate and every announced slot with what was announced.
type SupplyPredictor interface {
	// Name is the predictor's name as the command line gives it.
	Name() string
	// Observe records the capacity known for slot t (announced, or from history;
	// t may be negative for days before the run).
	Observe(t Slot, units int64)
	// Estimate returns the capacity to plan slot t with: never negative.
	Estimate(t Slot) int64
}

// DailySupply predicts from the background's daily profile: the lowest capacity
// observed at the same time of day, within Window slots either side, over every day
// observed (conservative: a slot is never planned above what any observed day had
// near that time). Where nothing was observed near that time of day it falls back to
// the lowest capacity observed at all, and to 0 before any observation.
type DailySupply struct {
	SlotsPerDay int
	Window      int
	low         []int64 // per slot of the day: the lowest observed, -1 none
	lowest      int64   // -1: none
}

// NewDailySupply returns a daily-profile predictor for days of slotsPerDay slots
// (at least 1) and a window of window slots either side (at least 0).
func NewDailySupply(slotsPerDay, window int) *DailySupply {
	d := &DailySupply{SlotsPerDay: max(slotsPerDay, 1), Window: max(window, 0), lowest: -1}
	d.low = slices.Repeat([]int64{-1}, d.SlotsPerDay)
	return d
}

// Name returns "daily".
func (d *DailySupply) Name() string { return "daily" }

func (d *DailySupply) slotOfDay(t Slot) int {
	n := d.SlotsPerDay
	return ((int(t) % n) + n) % n
}

// Observe implements SupplyPredictor.
func (d *DailySupply) Observe(t Slot, units int64) {
	k := d.slotOfDay(t)
	if d.low[k] < 0 || units < d.low[k] {
		d.low[k] = units
	}
	if d.lowest < 0 || units < d.lowest {
		d.lowest = units
	}
}

// Estimate implements SupplyPredictor.
func (d *DailySupply) Estimate(t Slot) int64 {
	k, best := d.slotOfDay(t), int64(-1)
	for w := -d.Window; w <= d.Window; w++ {
		if v := d.low[((k+w)%d.SlotsPerDay+d.SlotsPerDay)%d.SlotsPerDay]; v >= 0 && (best < 0 || v < best) {
			best = v
		}
	}
	if best < 0 {
		best = d.lowest
	}
	return max(best, 0)
}

// QuantileSupply predicts a flat capacity: the Q-quantile (nearest rank) of every
// capacity observed, a conservative level for small Q. Before any observation it
// is 0.
type QuantileSupply struct {
	Q    float64
	seen []int64
}

// Name returns "quantile".
func (q *QuantileSupply) Name() string { return "quantile" }

// Observe implements SupplyPredictor.
func (q *QuantileSupply) Observe(_ Slot, units int64) {
	i, _ := slices.BinarySearch(q.seen, units)
	q.seen = slices.Insert(q.seen, i, units)
}

// Estimate implements SupplyPredictor.
func (q *QuantileSupply) Estimate(Slot) int64 {
	if len(q.seen) == 0 {
		return 0
	}
	k := int(math.Ceil(min(max(q.Q, 0), 1)*float64(len(q.seen)))) - 1
	return q.seen[max(k, 0)]
}
