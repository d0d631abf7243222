package sharing

import "testing"

// CloudShare section 3.2.3, Figures 2 and 3: "Consider two organizations A and B,
// each with a single machine. A submits a job at time 0, 2, 4, 6 and 8. B submits
// two jobs at time 4. [...] In DirectShare, priorities of A and B are equal [...]
// FairShare scheduler would decide to start both jobs submitted by B immediately.
// In the aftermath jobs A3, A4 and A5 are delayed 5 time units compared to the
// DirectContr schedule." The figures (and so the jobs' lengths) did not survive the
// text copy; A's jobs of 1 time unit and B's of 5 are the shortest that give the
// paper's numbers: FairShare runs B1 and B2 over [4, 9) and A3, A4, A5 wait 5, 3
// and 2; DirectContr runs A3 and B1 at 4 and B2 when A3 ends, and A3, A4, A5 wait
// 0, 3 and 2. A waits 5 time units longer under FairShare, under every utility.
func TestThePapersExampleFairShareDelaysAByFiveUnits(t *testing.T) {
	var jobs []SimJob
	for i, r := range []float64{0, 2, 4, 6, 8} {
		jobs = append(jobs, SimJob{ID: "A" + string(rune('1'+i)), Team: "A", Release: r, Tasks: 1, TaskHours: 1})
	}
	jobs = append(jobs, SimJob{ID: "B1", Team: "B", Release: 4, Tasks: 1, TaskHours: 5}, SimJob{ID: "B2", Team: "B", Release: 4, Tasks: 1, TaskHours: 5})
	cfg := SimConfig{Orgs: []Org{{"A", 1}, {"B", 1}}, Jobs: jobs, Policy: FairShare{}}
	fair := mustSimulate(t, cfg)
	if fair.Wait[0] != 10 || fair.Wait[1] != 0 {
		t.Fatalf("FairShare: A waits %v, B %v; want 10 (A3 5, A4 3, A5 2) and 0 (both B jobs start at 4)", fair.Wait[0], fair.Wait[1])
	}
	for _, u := range []Utility{Orig, Rel, Simpl} {
		cfg.Policy = DirectContr{u}
		direct := mustSimulate(t, cfg)
		if fair.Wait[0]-direct.Wait[0] != 5 || direct.Wait[1] != 1 {
			t.Errorf("%s: A waits %v (FairShare %v: want 5 less), B %v (want 1: B2 starts when A3 ends)", cfg.Policy.Name(), direct.Wait[0], fair.Wait[0], direct.Wait[1])
		}
	}
}
