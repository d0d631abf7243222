package sharing

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// chooseByScanReference is the rule of perpool.go read plainly, as Decide first
// implemented it: every pool ranked by a stable sort of its priorities, then every
// queued job scanned.
func chooseByScanReference(v *View, acc *Accounts, pols []Policy, views []*View) int {
	if !v.anyRoom() {
		return -1
	}
	rank := make([][]int, len(pols))
	prio := make([]float64, len(v.Teams))
	for i := range pols {
		pols[i].Priorities(views[i], acc, prio)
		_, rank[i] = stableRanks(prio)
	}
	best, bestWorst := -1, 0
	for t := range v.Teams {
		for _, j := range v.Teams[t].Queue {
			if !v.Fits(j) {
				continue
			}
			worst := 0
			for _, u := range v.Jobs[j].Units {
				worst = max(worst, rank[u.Pool][t])
			}
			if best < 0 || worst < bestWorst || worst == bestWorst && v.Jobs[j].Enqueued < v.Jobs[best].Enqueued {
				best, bestWorst = j, worst
			}
		}
	}
	return best
}

// stableRanks is each team's rank by prio (0 for the highest, equal priorities
// sharing a rank) through a stable sort, and the teams in that order.
func stableRanks(prio []float64) (order, rank []int) {
	order = make([]int, len(prio))
	for t := range order {
		order[t] = t
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case prio[a] > prio[b]:
			return -1
		case prio[a] < prio[b]:
			return 1
		}
		return 0
	})
	rank = make([]int, len(prio))
	r := 0
	for k, t := range order {
		if k > 0 && prio[t] != prio[order[k-1]] {
			r++
		}
		rank[t] = r
	}
	return order, rank
}

// genMixedView draws a cluster of up to four pools under random policies (round
// robin among them), teams with queues in any order (releases often equal, whole
// hours), room for a few tasks, and accounts whose small integer balances make
// equal priorities common.
func genMixedView(t *rapid.T) (*View, *Accounts, []Policy) {
	nPools := rapid.IntRange(1, 4).Draw(t, "pools")
	nTeams := rapid.IntRange(1, 6).Draw(t, "teams")
	v := &View{Now: 10}
	var pols []Policy
	for i := range nPools {
		v.Pools = append(v.Pools, PoolView{Name: fmt.Sprint("p", i), Capacity: 20, Room: int64(rapid.IntRange(0, 12).Draw(t, "room"))})
		p, _ := ByName(rapid.SampledFrom(Names()).Draw(t, "policy"))
		pols = append(pols, p)
	}
	s := State{AsOf: epoch}
	for ti := range nTeams {
		name := fmt.Sprint("t", ti)
		v.Teams = append(v.Teams, TeamView{Name: name, Share: float64(rapid.IntRange(0, 3).Draw(t, "share")) / 4})
		for _, p := range v.Pools {
			if rapid.Bool().Draw(t, "balance") {
				x := func() float64 { return float64(rapid.IntRange(0, 3).Draw(t, "x")) }
				s.Balances = append(s.Balances, Balance{Team: name, Pool: p.Name, Surface: x(), Orig: x(), Rel: x(), LentSurface: x(), LentOrig: x(), LentRel: x()})
			}
		}
		if seq := rapid.IntRange(0, 3).Draw(t, "served"); seq > 0 {
			s.Served = append(s.Served, Served{Team: name, Seq: int64(seq)})
		}
	}
	s.Seq = 3
	for j := range rapid.IntRange(0, 12).Draw(t, "jobs") {
		team := rapid.IntRange(0, nTeams-1).Draw(t, "team")
		var units []PoolUnits
		for i := range nPools {
			if rapid.IntRange(0, 2).Draw(t, "uses") == 0 || i == nPools-1 && len(units) == 0 {
				units = append(units, PoolUnits{Pool: i, Units: int64(rapid.IntRange(1, 4).Draw(t, "units"))})
			}
		}
		v.Jobs = append(v.Jobs, JobView{Job: &Job{ID: fmt.Sprint("j", j)}, Team: team, Units: units,
			Waiting: rapid.IntRange(0, 3).Draw(t, "waiting"), Enqueued: float64(rapid.IntRange(0, 3).Draw(t, "enqueued"))})
		v.Teams[team].Queue = append(v.Teams[team].Queue, j)
	}
	acc, err := Restore(s)
	if err != nil {
		t.Fatal(err)
	}
	return v, acc, pols
}

// The indexed chooser picks what the plain scan picks, choice after choice, as
// Decide starts tasks between them (room shrinks, queues shrink, round robin's
// marks move).
func TestIndexedChooserEqualsTheScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v, acc, pols := genMixedView(t)
		v.bind(acc) // as Decide does, for round robin's marks
		m := newPerPool(v, pols)
		for step := 0; ; step++ {
			want := chooseByScanReference(v, acc, pols, m.views)
			got := m.choose(v, acc)
			if got != want {
				t.Fatalf("step %d: indexed chose %d, the scan %d", step, got, want)
			}
			if got < 0 {
				return
			}
			jv := &v.Jobs[got]
			for _, u := range jv.Units {
				v.Pools[u.Pool].Room -= u.Units
			}
			jv.Waiting--
			if jv.Waiting == 0 {
				q := &v.Teams[jv.Team].Queue
				*q = slices.DeleteFunc(*q, func(x int) bool { return x == got })
			}
			acc.markServed(v.teamRows[jv.Team])
		}
	})
}

// A ranking brought up to date as priorities change, a few teams (moved one by one)
// or many (sorted again) at a time, NaN and -0 among them, equals a fresh stable
// sort.
func TestRerankEqualsAStableSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "teams")
		m := newPerPool(&View{Pools: []PoolView{{Name: "cpu"}}, Teams: make([]TeamView, n)}, []Policy{FairShare{}})
		prio := make([]float64, n)
		values := []float64{-2, -1, math.Copysign(0, -1), 0, 1, 2, 3, math.NaN()}
		for round := range rapid.IntRange(1, 8).Draw(t, "rounds") {
			for range rapid.IntRange(0, 2*maxMoved).Draw(t, "changes") {
				prio[rapid.IntRange(0, n-1).Draw(t, "team")] = rapid.SampledFrom(values).Draw(t, "priority")
			}
			m.rerank(0, slices.Clone(prio))
			order, rank := stableRanks(prio)
			if !slices.Equal(m.rank[0], rank) || !slices.Equal(m.order[0], order) {
				t.Fatalf("round %d: ranks %v order %v, want %v %v", round, m.rank[0], m.order[0], rank, order)
			}
		}
	})
}
