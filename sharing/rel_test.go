package sharing

import (
	"testing"

	"pgregory.net/rapid"
)

// CloudShare section 3.2.2: under ORIG "it might be impossible to make up for the
// sub-optimal decisions taken at the beginning of the schedule", so the paper tests
// "a slightly altered utility, where the release time neutralizes this effect".
// Our reading measures each part against its job's release instead of against
// now: (t - tau) - (t - r) = r - tau. So while nothing new runs, REL balances,
// and the DirectContr priorities built on them, stay put; ORIG's drift.
func TestRelPrioritiesDoNotDriftWhileNothingRuns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		runs := genRuns(t)
		// Every run ends by hour 8; the accounts are then advanced with nothing running.
		for i := range runs {
			if runs[i].Ended.IsZero() || runs[i].Ended.After(at(8)) {
				runs[i].Ended = at(8)
			}
		}
		acc := NewAccounts(epoch)
		if err := acc.Advance(runs, at(8)); err != nil {
			t.Fatal(err)
		}
		v := &View{Pools: []PoolView{{Name: "cpu", Capacity: 10}, {Name: "ram", Capacity: 16}}}
		for _, name := range []string{"a", "b", "c", Operator} {
			v.Teams = append(v.Teams, TeamView{Name: name})
		}
		rel, orig := make([]float64, 4), make([]float64, 4)
		DirectContr{Rel}.Priorities(v, acc, rel)
		DirectContr{Orig}.Priorities(v, acc, orig)
		later := rapid.Float64Range(1, 1000).Draw(t, "hours later")
		if err := acc.Advance(nil, at(8+later)); err != nil {
			t.Fatal(err)
		}
		rel2, orig2 := make([]float64, 4), make([]float64, 4)
		DirectContr{Rel}.Priorities(v, acc, rel2)
		DirectContr{Orig}.Priorities(v, acc, orig2)
		drift := false
		for i := range rel {
			if !close(rel[i], rel2[i]) {
				t.Fatalf("REL priority of %s moved from %v to %v over %v idle hours", v.Teams[i].Name, rel[i], rel2[i], later)
			}
			drift = drift || !close(orig[i], orig2[i])
		}
		// ORIG drifts whenever some team's contribution and utility surfaces differ.
		for _, name := range []string{"a", "b", "c", Operator} {
			for _, pool := range []string{"cpu", "ram"} {
				if b := acc.Balance(name, pool); !close(b.Surface, b.LentSurface) && !drift {
					t.Fatalf("ORIG priorities did not move although %s's surfaces differ in %s: %+v", name, pool, b)
				}
			}
		}
	})
}

// The formula as our reading states it: one unit run over [x, y) of a job released
// at r is worth the integral of r - tau over [x, y), whenever it is valued.
func TestRelIsTheIntegralOfReleaseLessExecutionTime(t *testing.T) {
	for _, valued := range []float64{4, 10, 100} {
		acc := NewAccounts(epoch)
		run := Run{Task: Task{ID: "t", Team: "a", Configuration: map[string]int64{"cpu": 2}, Started: at(3), Enqueued: at(1),
			Lenders: []Share{{"cpu", "b", 2}}}, Ended: at(4)}
		if err := acc.Advance([]Run{run}, at(valued)); err != nil {
			t.Fatal(err)
		}
		// 2 units x integral over [3,4) of (1 - tau) = 2 x (1 - 3.5) = -5.
		if a, b := acc.Balance("a", "cpu"), acc.Balance("b", "cpu"); !close(a.Rel, -5) || !close(b.LentRel, -5) {
			t.Fatalf("valued at %v: utility %v, contribution %v; want -5 each", valued, a.Rel, b.LentRel)
		}
	}
}
