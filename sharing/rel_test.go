package sharing

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// REL's defining property (CloudShare section 3.2.2, our reading): ORIG's value of
// each part, t - tau, normalised by the time since its job's release, t - r. For the
// runs of one job, valued at any time, the accounts' REL is the integral of
// (t - tau) / (t - r) over the executed unit parts, to rounding; it never exceeds the
// surface (SIMPL) and tends to it as t grows.
func TestRelIsOrigNormalisedByTheTimeSinceRelease(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := rapid.Float64Range(0, 5).Draw(t, "release")
		acc := NewAccounts(epoch)
		var runs []Run
		type part struct{ w, x, y float64 }
		var parts []part
		for k := range rapid.IntRange(1, 4).Draw(t, "runs") {
			x := r + rapid.Float64Range(0, 5).Draw(t, "wait")
			y := x + rapid.Float64Range(0.1, 3).Draw(t, "hours")
			w := rapid.Int64Range(1, 4).Draw(t, "units")
			parts = append(parts, part{float64(w), x, y})
			runs = append(runs, Run{Task: Task{ID: string(rune('a' + k)), Team: "a", Configuration: map[string]int64{"cpu": w},
				Started: at(x), Enqueued: at(r), Lenders: []Share{{"cpu", "b", float64(w)}}}, Ended: at(y)})
		}
		valued := 15 + rapid.Float64Range(0, 100).Draw(t, "valued")
		if err := acc.Advance(runs, at(valued)); err != nil {
			t.Fatal(err)
		}
		// integral over [x, y) of (T - tau) / (T - r) = ((T-x)^2 - (T-y)^2) / (2 (T - r)).
		want, surface := 0.0, 0.0
		for _, p := range parts {
			want += p.w * ((valued-p.x)*(valued-p.x) - (valued-p.y)*(valued-p.y)) / (2 * (valued - r))
			surface += p.w * (p.y - p.x)
		}
		a, b := acc.Balance("a", "cpu"), acc.Balance("b", "cpu")
		if got := a.Utility(Rel); !close(got, want) || !close(b.Contribution(Rel), want) {
			t.Fatalf("REL %v (contribution %v), want the normalised integral %v", got, b.Contribution(Rel), want)
		}
		if got := a.Utility(Rel); got > surface*(1+1e-9) || got <= 0 {
			t.Fatalf("REL %v outside (0, surface %v]", got, surface)
		}
		if err := acc.Advance(nil, at(valued+1e6)); err != nil {
			t.Fatal(err)
		}
		if got := acc.Balance("a", "cpu").Utility(Rel); math.Abs(got-surface) > 1e-3*surface {
			t.Fatalf("a million hours later REL is %v, not the surface %v", got, surface)
		}
	})
}

// Under ORIG a team's lead from early work grows with t for ever; under REL the
// priorities tend to SIMPL's while nothing new runs ("a slightly altered utility,
// where the release time neutralizes this effect").
func TestRelPrioritiesTendToSimplWhileNothingRuns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		runs := genRuns(t)
		for i := range runs {
			if runs[i].Ended.IsZero() || runs[i].Ended.After(at(8)) {
				runs[i].Ended = at(8)
			}
		}
		acc := NewAccounts(epoch)
		if err := acc.Advance(runs, at(1e6)); err != nil {
			t.Fatal(err)
		}
		v := &View{Pools: []PoolView{{Name: "cpu", Capacity: 10}, {Name: "ram", Capacity: 16}}}
		for _, name := range []string{"a", "b", "c", Operator} {
			v.Teams = append(v.Teams, TeamView{Name: name})
		}
		rel, simpl := make([]float64, 4), make([]float64, 4)
		DirectContr{Rel}.Priorities(v, acc, rel)
		DirectContr{Simpl}.Priorities(v, acc, simpl)
		for i := range rel {
			if math.Abs(rel[i]-simpl[i]) > 1e-3*max(1, math.Abs(simpl[i])) {
				t.Fatalf("%s: REL priority %v, SIMPL %v, a million hours on", v.Teams[i].Name, rel[i], simpl[i])
			}
		}
	})
}

// The summary REL is computed from: one unit run over [x, y) of a job released at r
// adds the integral of r - tau over [x, y) to R, whenever it is valued.
func TestRelSumIsTheIntegralOfReleaseLessExecutionTime(t *testing.T) {
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
