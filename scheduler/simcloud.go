package scheduler

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Cloud is how the simulated cloud behaves besides running what the engine
// plans, all drawn from Seed so that every algorithm meets the same cloud. The
// zero value never fails and has no background load.
//
//   - Capacity losses: each slot a loss starts with probability
//     LossesPerDay/SlotsPerDay; it takes LossShare of the capacity for
//     LossSlots slots and is reported, when it starts, for its whole length.
//   - Task failures: FailureShare of the accepted requests fail partway
//     through their run (uniformly) and do not run again; their jobs are late.
//   - Early finishes: FinishEarlyShare of the accepted requests end after a
//     uniform share of their duration and report it (JobEnd).
//   - The Azure-style setting (ERA section 4): when Share is positive the
//     scheduler manages Share of the cluster's capacity, and other work (the
//     background) uses BackgroundLoad of the cluster on average, on a daily
//     cycle (half again at its peak, half at its trough) with hourly noise;
//     the scheduler has what the background leaves of its share, reported each
//     hour for the Foresight ahead (0: the hour ahead).
type Cloud struct {
	Seed             uint64
	SlotsPerDay      int // 288 for 5-minute slots (0: 288)
	LossesPerDay     float64
	LossShare        float64
	LossSlots        Slot
	FailureShare     float64
	FinishEarlyShare float64
	Share            float64
	BackgroundLoad   float64
	Foresight        Slot
}

// Validate returns EINVALID-style errors naming the field when a share is
// outside [0, 1] or a rate or length is negative.
func (c Cloud) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"loss share", c.LossShare}, {"failure share", c.FailureShare}, {"finish-early share", c.FinishEarlyShare}, {"share", c.Share}, {"background load", c.BackgroundLoad}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			return fmt.Errorf("%s: must be between 0 and 1", f.name)
		}
	}
	if math.IsNaN(c.LossesPerDay) || c.LossesPerDay < 0 || c.LossSlots < 0 || c.SlotsPerDay < 0 || c.Foresight < 0 {
		return fmt.Errorf("losses per day, loss slots, slots per day and foresight must not be negative")
	}
	return nil
}

func (c Cloud) perDay() int {
	if c.SlotsPerDay > 0 {
		return c.SlotsPerDay
	}
	return 288
}

// Managed is the capacity the scheduler plans with: its Share of the cluster's
// capacity (at least one unit), or all of it when Share is 0.
func (c Cloud) Managed(capacity int64) int64 {
	if c.Share > 0 {
		return max(int64(math.Round(c.Share*float64(capacity))), 1)
	}
	return capacity
}

// schedule is the seeded capacity the scheduler has in each slot, and the
// slots where a loss starts with its length.
type schedule struct {
	avail     []int64
	losses    map[Slot]Slot
	hourly    bool // background: report each hour
	foresight Slot // how far ahead an hourly report reaches
}

// history is the capacity the scheduler had over the day before the run: the same
// background process, drawn from another stream of the seed (no losses).
func (c Cloud) history(capacity int64) []int64 {
	h := c
	h.Seed, h.LossesPerDay = c.Seed^0x4157a7, 0
	return h.schedule(capacity, Slot(c.perDay())).avail
}

// foresight is how far ahead each hourly announcement reaches.
func (c Cloud) foresight() Slot {
	return max(c.Foresight, Slot(max(c.perDay()/24, 1)))
}

func (c Cloud) schedule(capacity int64, horizon Slot) schedule {
	rng := rand.New(rand.NewPCG(c.Seed, c.Seed^0xc10d))
	day := c.perDay()
	hour := max(day/24, 1)
	managed := c.Managed(capacity)
	s := schedule{avail: make([]int64, horizon), losses: map[Slot]Slot{}, hourly: c.Share > 0, foresight: c.foresight()}
	lossLeft := Slot(0)
	noise := 1.0
	for t := range horizon {
		a := managed
		if c.Share > 0 {
			if int(t)%hour == 0 {
				noise = 1 + 0.2*(rng.Float64()-0.5)
			}
			phase := 2 * math.Pi * float64(int(t)%day) / float64(day)
			bg := float64(capacity) * c.BackgroundLoad * (1 + 0.5*math.Sin(phase)) * noise
			a = min(managed, max(capacity-int64(math.Round(bg)), 0))
		}
		if lossLeft == 0 && c.LossesPerDay > 0 && c.LossSlots > 0 && rng.Float64() < c.LossesPerDay/float64(day) {
			lossLeft = c.LossSlots
			s.losses[t] = c.LossSlots
		}
		if lossLeft > 0 {
			a = int64(math.Floor(float64(a) * (1 - c.LossShare)))
			lossLeft--
		}
		s.avail[t] = a
	}
	return s
}

// announce is what the cloud reports at slot now: the capacity of the foresight
// ahead (background, each hour), and of a loss starting now for its whole length,
// as changes over runs of equal capacity.
func (s schedule) announce(pool string, now Slot, hour int) []CapacityChange {
	end := now
	if s.hourly && int(now)%hour == 0 {
		end = now + s.foresight
	}
	if l, ok := s.losses[now]; ok {
		end = max(end, now+l)
	}
	end = min(end, Slot(len(s.avail)))
	var out []CapacityChange
	for t := now; t < end; {
		u := t + 1
		for u < end && s.avail[u] == s.avail[t] {
			u++
		}
		out = append(out, CapacityChange{Pool: pool, From: t, To: u, Units: s.avail[t]})
		t = u
	}
	return out
}

// fate is what the cloud does to one accepted request, drawn from the seed and
// the job's index so that it is the same for every algorithm: it fails after
// failAt slots of running (-1: never), or finishes after runFor slots.
type fate struct {
	failAt, runFor Slot
}

func (c Cloud) fate(job int, request int, duration Slot) fate {
	rng := rand.New(rand.NewPCG(c.Seed^uint64(job)*0x9e3779b97f4a7c15, uint64(request)+1))
	f := fate{failAt: -1, runFor: duration}
	if rng.Float64() < c.FailureShare {
		f.failAt = Slot(rng.IntN(int(duration)))
	}
	if rng.Float64() < c.FinishEarlyShare {
		f.runFor = 1 + Slot(rng.IntN(int(duration)))
	}
	return f
}
