package sharing

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"pgregory.net/rapid"
)

var epoch = time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)

func at(h float64) time.Time { return epoch.Add(time.Duration(h * float64(time.Hour))) }

// genRuns draws tasks that ran in [0, 10) hours after epoch, in two pools, lent by
// three lenders.
func genRuns(t *rapid.T) []Run {
	var runs []Run
	for i := range rapid.IntRange(0, 6).Draw(t, "runs") {
		start := float64(rapid.IntRange(0, 80).Draw(t, "start")) / 8
		end := start + float64(rapid.IntRange(1, 40).Draw(t, "length"))/8
		release := start - float64(rapid.IntRange(0, 16).Draw(t, "waited"))/8
		team := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "team")
		cfg := map[string]int64{"cpu": int64(rapid.IntRange(1, 4).Draw(t, "cpu"))}
		if rapid.Bool().Draw(t, "ram") {
			cfg["ram"] = int64(rapid.IntRange(1, 8).Draw(t, "ramUnits"))
		}
		r := Run{Task: Task{ID: fmt.Sprint("t", i), Job: "j", Team: team, Configuration: cfg, Started: at(start), Enqueued: at(release)}}
		if end < 10 {
			r.Ended = at(end)
		}
		for _, pool := range sortedKeys(cfg) {
			w := float64(cfg[pool])
			split := float64(rapid.IntRange(0, 4).Draw(t, "split")) / 4
			r.Lenders = append(r.Lenders, Share{Pool: pool, Lender: team, Units: w * split},
				Share{Pool: pool, Lender: rapid.SampledFrom([]string{"b", Operator}).Draw(t, "lender"), Units: w * (1 - split)})
		}
		runs = append(runs, r)
	}
	return runs
}

// bruteForce values every run's parts half-minute by half-minute at the midpoint, which
// is exact for the linear integrands of ORIG and REL: a check independent of the closed
// forms. Runs start and end on eighths of an hour, whole numbers of half-minutes.
func bruteForce(runs []Run, until float64) map[[2]string]Balance {
	const dt = 1.0 / 120
	out := map[[2]string]Balance{}
	add := func(team, pool string, w float64, use bool, x, r float64) {
		b := out[[2]string{team, pool}]
		orig, rel := w*dt*(until-x), w*dt*(r-x)
		if use {
			b.Surface, b.Orig, b.Rel = b.Surface+w*dt, b.Orig+orig, b.Rel+rel
		} else {
			b.LentSurface, b.LentOrig, b.LentRel = b.LentSurface+w*dt, b.LentOrig+orig, b.LentRel+rel
		}
		out[[2]string{team, pool}] = b
	}
	for _, r := range runs {
		start, end := HoursOf(r.Started)-HoursOf(epoch), until
		if !r.Ended.IsZero() {
			end = min(end, HoursOf(r.Ended)-HoursOf(epoch))
		}
		rel := HoursOf(r.Enqueued) - HoursOf(epoch)
		for k := range int(math.Round((end - start) / dt)) {
			x := start + (float64(k)+0.5)*dt
			for pool, w := range r.Configuration {
				add(r.Team, pool, float64(w), true, x, rel)
			}
			for _, s := range r.Lenders {
				add(s.Lender, s.Pool, s.Units, false, x, rel)
			}
		}
	}
	return out
}

func close(a, b float64) bool { return math.Abs(a-b) <= 1e-6*max(1, math.Abs(a), math.Abs(b)) }

// The summary is exact: advancing in any number of steps gives what the whole history
// gives, for utility and contribution under every function.
func TestAdvanceSummaryMatchesHistory(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		runs := genRuns(t)
		acc := NewAccounts(epoch)
		steps := rapid.SliceOfN(rapid.IntRange(1, 80), 0, 5).Draw(t, "steps")
		slices.Sort(steps)
		for _, s := range append(steps, 80) {
			if err := acc.Advance(runs, at(float64(s)/8)); err != nil {
				t.Fatal(err)
			}
		}
		want := bruteForce(runs, 10)
		for key, w := range want {
			got := acc.Balance(key[0], key[1])
			for i, pair := range [][2]float64{{got.Surface, w.Surface}, {got.Orig, w.Orig}, {got.Rel, w.Rel},
				{got.LentSurface, w.LentSurface}, {got.LentOrig, w.LentOrig}, {got.LentRel, w.LentRel}} {
				if !close(pair[0], pair[1]) {
					t.Fatalf("%v value %d: summary %v, history %v", key, i, pair[0], pair[1])
				}
			}
		}
	})
}

// Every part counts once in a team's utility and once, split, in lenders'
// contributions: per pool the two totals agree under ORIG and SIMPL, and so do the
// sums R that REL is computed from. REL itself is not additive across sides: each
// side is normalised by its own surface-weighted mean time since release
// (RelValue), so the totals of REL agree only where the sides' mean releases do.
func TestContributionsSumToUtilities(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		runs := genRuns(t)
		acc := NewAccounts(epoch)
		if err := acc.Advance(runs, at(10)); err != nil {
			t.Fatal(err)
		}
		for _, pool := range []string{"cpu", "ram"} {
			for _, u := range []Utility{Orig, Simpl} {
				use, lent := 0.0, 0.0
				for _, team := range []string{"a", "b", "c", Operator} {
					b := acc.Balance(team, pool)
					use, lent = use+b.Utility(u), lent+b.Contribution(u)
				}
				if !close(use, lent) {
					t.Fatalf("%s %s: utilities %v, contributions %v", pool, u, use, lent)
				}
			}
			use, lent := 0.0, 0.0
			for _, team := range []string{"a", "b", "c", Operator} {
				b := acc.Balance(team, pool)
				use, lent = use+b.Rel, lent+b.LentRel
			}
			if !close(use, lent) {
				t.Fatalf("%s R: utilities %v, contributions %v", pool, use, lent)
			}
		}
	})
}

// ORIG favours work done earlier: the same surface executed sooner is worth more.
func TestOrigValuesEarlierWorkMore(t *testing.T) {
	early, late := NewAccounts(epoch), NewAccounts(epoch)
	task := func(start float64) []Run {
		return []Run{{Task: Task{ID: "t", Team: "a", Configuration: map[string]int64{"cpu": 1}, Started: at(start), Enqueued: epoch,
			Lenders: []Share{{"cpu", "a", 1}}}, Ended: at(start + 1)}}
	}
	early.Advance(task(0), at(5))
	late.Advance(task(3), at(5))
	e, l := early.Balance("a", "cpu"), late.Balance("a", "cpu")
	if e.Surface != l.Surface || !(e.Orig > l.Orig) || !(e.Rel > l.Rel) {
		t.Fatalf("early %+v, late %+v", e, l)
	}
	if !close(e.Orig, 4.5) || !close(l.Orig, 1.5) || !close(l.Rel, -3.5) {
		t.Fatalf("ORIG of one unit-hour run over [0,1) valued at 5 is 4.5, got %v; over [3,4): 1.5 (REL, the integral of 0 - tau over [3,4): -3.5), got %v, %v", e.Orig, l.Orig, l.Rel)
	}
}

func TestExportRestoreRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		acc := NewAccounts(epoch)
		if err := acc.Advance(genRuns(t), at(10)); err != nil {
			t.Fatal(err)
		}
		for range rapid.IntRange(0, 3).Draw(t, "served") {
			acc.markServed(acc.team(rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "team")))
		}
		s := acc.Export()
		back, err := Restore(s)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Export(), s) || !back.AsOf().Equal(at(10)) {
			t.Fatalf("round trip changed the state:\n%+v\n%+v", s, back.Export())
		}
	})
}

func TestRestoreAndAdvanceRefuseBadInput(t *testing.T) {
	for _, tc := range []struct {
		s    State
		want string
	}{
		{State{Balances: []Balance{{Team: "a"}}}, "balances[0]: team and pool"},
		{State{Balances: []Balance{{Team: "a", Pool: "p"}, {Team: "a", Pool: "p"}}}, "appears twice"},
		{State{Balances: []Balance{{Team: "a", Pool: "p", Orig: math.NaN()}}}, "finite"},
		{State{Seq: 1, Served: []Served{{Team: "a", Seq: 2}}}, "served[0]"},
	} {
		_, err := Restore(tc.s)
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !contains(err, tc.want) {
			t.Errorf("%+v: %v, want EINVALID with %q", tc.s, err, tc.want)
		}
	}
	acc := NewAccounts(at(5))
	if err := acc.Advance(nil, at(4)); clearhouse.ErrorCode(err) != clearhouse.EINVALID || !contains(err, "until") {
		t.Errorf("advancing backwards: %v", err)
	}
	bad := Run{Task: Task{ID: "t", Team: "a", Configuration: map[string]int64{"cpu": 2}, Started: at(5), Enqueued: at(5),
		Lenders: []Share{{"cpu", "b", 1}}}}
	if err := acc.Advance([]Run{bad}, at(6)); clearhouse.ErrorCode(err) != clearhouse.EINVALID || !contains(err, "runs[0]") {
		t.Errorf("lenders short of the units: %v", err)
	}
	if !acc.AsOf().Equal(at(5)) {
		t.Error("a refused advance moved the accounts")
	}
}
