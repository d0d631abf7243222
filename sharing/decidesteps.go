package sharing

import (
	"math"
	"slices"
	"strings"

	"github.com/clearhouse/clearhouse"
)

// preempt stops victims where a pool runs more than its capacity, and reports what
// is left over once no task may be stopped.
// victim(pool, candidates) is the pool's policy's choice among candidates.
func (d *decider) preempt(victim func(pool int, candidates []int) int, out *Decision) {
	var cands []int
	for pi := range d.pools {
		ps := &d.pools[pi]
		minRun := ps.MinRuntime.Hours()
		for ps.free < 0 {
			cands = cands[:0]
			for k, r := range d.v.Running {
				if !d.runs[k].stopped && unitsIn(r.Units, pi) > 0 && d.now-r.Started >= minRun-eps {
					cands = append(cands, k)
				}
			}
			if len(cands) == 0 {
				break
			}
			i := victim(pi, cands)
			if i < 0 || i >= len(cands) {
				i = 0
			}
			d.stop(cands[i])
			out.Preempt = append(out.Preempt, d.runs[cands[i]].task.ID)
		}
	}
	for _, ps := range d.pools {
		if ps.free < 0 {
			out.Blocked = append(out.Blocked, Blocked{Pool: ps.Name, Units: -ps.free})
		}
	}
}

func unitsIn(units []PoolUnits, pool int) int64 {
	for _, u := range units {
		if u.Pool == pool {
			return u.Units
		}
	}
	return 0
}

// stop frees a running task's units and its lenders' shares.
func (d *decider) stop(k int) {
	d.runs[k].stopped = true
	for _, u := range d.v.Running[k].Units {
		d.pools[u.Pool].free += u.Units
	}
	for _, s := range d.runs[k].lenders {
		ps := d.poolNamed(s.Pool)
		ps.slack[ps.idx[s.Lender]] += s.Units
	}
}

func (d *decider) poolNamed(name string) *poolState {
	i, _ := slices.BinarySearchFunc(d.pools, name, func(p poolState, n string) int { return strings.Compare(p.Name, n) })
	return &d.pools[i]
}

// reattribute moves units lent by lenders now short of idle units to the others.
func (d *decider) reattribute(out *Decision) {
	order := make([]int, 0, len(d.runs))
	for k := len(d.runs) - 1; k >= 0; k-- {
		if !d.runs[k].stopped {
			order = append(order, k) // most recently started first
		}
	}
	for pi := range d.pools {
		ps := &d.pools[pi]
		for l := range ps.lenders {
			for _, k := range order {
				if ps.slack[l] >= -eps {
					break
				}
				d.moveShare(ps, l, k)
			}
		}
	}
	for _, k := range order {
		if r := &d.runs[k]; r.moved {
			r.lenders = slices.DeleteFunc(r.lenders, func(s Share) bool { return s.Units < eps })
			sortShares(r.lenders)
			out.Reattributed = append(out.Reattributed, Reattribution{Task: r.task.ID, Lenders: r.lenders})
		}
	}
}

// moveShare moves what task k holds of lender l's units in ps, up to l's shortfall and
// the other lenders' idle units, to those lenders.
func (d *decider) moveShare(ps *poolState, l, k int) {
	r := &d.runs[k]
	at := map[string]int{} // lender -> position of the task's share in this pool
	for i, s := range r.lenders {
		if s.Pool == ps.Name {
			at[s.Lender] = i
		}
	}
	i, ok := at[ps.lenders[l]]
	if !ok || r.lenders[i].Units <= eps {
		return
	}
	idle := 0.0
	for m, x := range ps.slack {
		if m != l && x > 0 {
			idle += x
		}
	}
	m := min(r.lenders[i].Units, -ps.slack[l], idle)
	if m <= eps {
		return
	}
	r.lenders[i].Units -= m
	ps.slack[l] += m
	r.moved = true
	spread(ps.slack, l, m, func(to int, x float64) {
		if j, ok := at[ps.lenders[to]]; ok {
			r.lenders[j].Units += x
			return
		}
		at[ps.lenders[to]] = len(r.lenders)
		r.lenders = append(r.lenders, Share{Pool: ps.Name, Lender: ps.lenders[to], Units: x})
	})
}

func sortShares(s []Share) {
	slices.SortFunc(s, func(a, b Share) int {
		if c := strings.Compare(a.Pool, b.Pool); c != 0 {
			return c
		}
		return strings.Compare(a.Lender, b.Lender)
	})
}

// setRoom computes each pool's room: free units beyond the exposure threshold, within
// what lenders have idle.
func (d *decider) setRoom() {
	for i := range d.pools {
		ps := &d.pools[i]
		idle := 0.0
		for _, x := range ps.slack {
			idle += max(x, 0)
		}
		keep := int64(math.Ceil(ps.Exposure*float64(ps.Capacity) - eps))
		d.v.Pools[i].Room = max(0, min(ps.free-keep, floorUnits(idle)))
	}
}

// start lets the policy pick jobs while one fits. Each started job sums its tasks'
// units per lender in dense arrays (one per pool of its configuration), turned into
// shares at the end, so a start costs time linear in the lenders.
// choose is the policy's next job (name names it in errors).
func (d *decider) start(acc *Accounts, choose func() int, name string, out *Decision) error {
	d.setRoom()
	starts := map[int]int{} // job -> position in out.Starts
	var lent [][][]float64  // per start, per unit of the job's configuration, per lender
	var buf []float64
	for {
		j := choose()
		if j == -1 {
			break
		}
		if j < 0 || j >= len(d.v.Jobs) || !d.v.Fits(j) {
			return clearhouse.Errorf(clearhouse.EINTERNAL, "policy %s chose job %d, which does not fit", name, j)
		}
		jv := &d.v.Jobs[j]
		pos, ok := starts[j]
		if !ok {
			pos = len(out.Starts)
			starts[j] = pos
			out.Starts = append(out.Starts, Start{Job: jv.Job.ID, Team: jv.Job.Team})
			sums := make([][]float64, len(jv.Units))
			for k, u := range jv.Units {
				sums[k] = make([]float64, len(d.pools[u.Pool].lenders))
			}
			lent = append(lent, sums)
		}
		out.Starts[pos].Tasks++
		for k, u := range jv.Units {
			ps := &d.pools[u.Pool]
			buf = slices.Grow(buf[:0], len(ps.slack))[:len(ps.slack)]
			own, isLender := ps.idx[jv.Job.Team]
			if !isLender {
				own = -1
			}
			attribute(ps.slack, own, float64(u.Units), buf)
			for l, x := range buf {
				lent[pos][k][l] += x
			}
			ps.free -= u.Units
			d.v.Pools[u.Pool].Room -= u.Units
		}
		jv.Waiting--
		if jv.Waiting == 0 {
			q := &d.v.Teams[jv.Team].Queue
			*q = slices.DeleteFunc(*q, func(x int) bool { return x == j })
		}
		acc.markServed(d.v.teamRows[jv.Team])
	}
	for j, pos := range starts {
		for k, u := range d.v.Jobs[j].Units {
			ps := &d.pools[u.Pool]
			for l, x := range lent[pos][k] {
				if x > 0 {
					out.Starts[pos].Lenders = append(out.Starts[pos].Lenders, Share{Pool: ps.Name, Lender: ps.lenders[l], Units: x})
				}
			}
		}
		// by pool, then lender: jv.Units and ps.lenders are both sorted by name
	}
	return nil
}
