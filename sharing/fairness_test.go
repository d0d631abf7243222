package sharing

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/clearhouse/clearhouse"
)

// dayOf draws a day of one-hour tasks for n organizations on a pool of about 60%
// load: jobs of 1 to 8 processors for 1 to 6 hours, released over 24 hours.
func dayOf(n int, procs int64, seed uint64) ([]Org, []SimJob) {
	rng := rand.New(rand.NewPCG(seed, 3))
	var orgs []Org
	for i := range n {
		orgs = append(orgs, Org{Name: fmt.Sprintf("t%02d", i), Processors: procs})
	}
	var jobs []SimJob
	for load := 0; load < int(0.6*24*float64(procs)*float64(n)); {
		tasks := (1 + rng.IntN(8)) * (1 + rng.IntN(6))
		jobs = append(jobs, SimJob{ID: fmt.Sprint("j", len(jobs)), Team: orgs[rng.IntN(n)].Name,
			Release: float64(rng.IntN(24)), Tasks: tasks, TaskHours: 1})
		load += tasks
	}
	return orgs, jobs
}

func allPolicies() []Policy {
	var out []Policy
	for _, name := range Names() {
		p, _ := ByName(name)
		out = append(out, p)
	}
	return out
}

// The Shapley values of the simulated wait game sum to the grand coalition's total
// wait; each policy's unfairness is the distance from its waits; the evaluation does
// not depend on the number of workers.
func TestEvaluateIsEfficientAndIndependentOfWorkers(t *testing.T) {
	orgs, jobs := dayOf(4, 3, 1)
	e := Experiment{Orgs: orgs, Jobs: jobs, Policies: allPolicies(), Seed: 5, Workers: 1}
	one, err := Evaluate(e)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, x := range one.Shapley {
		sum += x
	}
	if !one.Exact || one.Coalitions != 15 || math.Abs(sum-one.CoalitionValue) > 1e-6*max(1, one.CoalitionValue) {
		t.Fatalf("exact %v over %d coalitions; Shapley values sum to %v, v(N) = %v", one.Exact, one.Coalitions, sum, one.CoalitionValue)
	}
	for p := range e.Policies {
		total := 0.0
		for _, w := range one.Wait[p] {
			total += w
		}
		if math.Abs(total-one.CoalitionValue) > 1e-6 || one.Unfairness[p] != Unfairness(one.Wait[p], one.PolicyShapley[p]) {
			t.Fatalf("%s: total wait %v (v(N) %v), unfairness %v", e.Policies[p].Name(), total, one.CoalitionValue, one.Unfairness[p])
		}
		// Each policy's own game (CloudShare: 2^N - 1 runs per algorithm) is
		// efficient too: its Shapley values sum to its own grand-coalition wait.
		own := 0.0
		for _, x := range one.PolicyShapley[p] {
			own += x
		}
		if math.Abs(own-one.PolicyCoalitionValue[p]) > 1e-6*max(1, own) || math.Abs(one.PolicyCoalitionValue[p]-total) > 1e-6*max(1, total) {
			t.Fatalf("%s: own Shapley values sum to %v, its v(N) %v, its grand wait %v", e.Policies[p].Name(), own, one.PolicyCoalitionValue[p], total)
		}
	}
	e.Workers = 3
	three, err := Evaluate(e)
	if err != nil || !reflect.DeepEqual(one, three) {
		t.Fatalf("1 and 3 workers disagree: %v\n%+v\n%+v", err, one, three)
	}
}

// An organization with no processors and no jobs is a null player; two organizations
// with the same processors and no jobs are symmetric.
func TestEvaluateNullAndSymmetricOrganizations(t *testing.T) {
	orgs, jobs := dayOf(2, 4, 2)
	orgs = append(orgs, Org{"idle", 0}, Org{"lender1", 3}, Org{"lender2", 3})
	ev, err := Evaluate(Experiment{Orgs: orgs, Jobs: jobs, Policies: []Policy{DirectContr{Orig}, RoundRobin{}}, Horizon: 200})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Shapley[2] != 0 {
		t.Errorf("null organization: Shapley value %v", ev.Shapley[2])
	}
	if math.Abs(ev.Shapley[3]-ev.Shapley[4]) > 1e-6 || !(ev.Shapley[3] < 0) {
		t.Errorf("two lenders without jobs: %v and %v (want equal, and negative: they save the others wait)", ev.Shapley[3], ev.Shapley[4])
	}
}

// Sampled Shapley values of the simulated game come close to the exact ones.
func TestEvaluateSampledAgreesWithExact(t *testing.T) {
	orgs, jobs := dayOf(5, 2, 3)
	e := Experiment{Orgs: orgs, Jobs: jobs, Policies: []Policy{FairShare{}}, Seed: 1}
	exact, err := Evaluate(e)
	if err != nil {
		t.Fatal(err)
	}
	e.ExactUpTo, e.Permutations = 1, 3000
	sampled, err := Evaluate(e)
	if err != nil || sampled.Exact {
		t.Fatal(err, sampled.Exact)
	}
	scale := 0.0
	for _, x := range exact.Shapley {
		scale = max(scale, math.Abs(x))
	}
	for i := range orgs {
		if d := math.Abs(sampled.Shapley[i] - exact.Shapley[i]); d > 0.05*scale {
			t.Errorf("%s: sampled %v, exact %v (tolerance 5%% of %v)", orgs[i].Name, sampled.Shapley[i], exact.Shapley[i], scale)
		}
	}
}

func TestEvaluateRefusesBadExperiments(t *testing.T) {
	if _, err := Evaluate(Experiment{Policies: allPolicies()}); clearhouse.ErrorCode(err) != clearhouse.EINVALID || !contains(err, "orgs") {
		t.Error(err)
	}
	if _, err := Evaluate(Experiment{Orgs: []Org{{"a", 1}}}); clearhouse.ErrorCode(err) != clearhouse.EINVALID || !contains(err, "policies") {
		t.Error(err)
	}
	if _, err := Evaluate(Experiment{Orgs: []Org{{"a", 0}}, Policies: allPolicies()}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
		t.Errorf("a coalition with no processors and no horizon: %v", err)
	}
}

// CloudShare section 5.1: "The score is incremented every time an algorithm is more
// fair than another algorithm. For instance, if we test 3 algorithms A, B and C, and
// the simulator generated three schedules with their respective unfairness of 60,
// 80 and 60, then we assign 1 point for A and 1 point for C."
func TestScoresAsThePaperCountsThem(t *testing.T) {
	score, pairwise := Scores([][]float64{{60, 80, 60}}, false)
	if score[0] != 1 || score[1] != 0 || score[2] != 1 || pairwise[0][2] != 0 || pairwise[2][0] != 0 {
		t.Fatalf("the paper's example: scores %v, pairwise %v; want 1, 0, 1 and no point for the tie", score, pairwise)
	}
	// With ties counting half (the option), A and C have 1.5 each.
	if half, _ := Scores([][]float64{{60, 80, 60}}, true); half[0] != 1.5 || half[1] != 0 || half[2] != 1.5 {
		t.Fatalf("ties half: %v", half)
	}
}

func TestScoresComparePoliciesPairwise(t *testing.T) {
	unfair := [][]float64{{1, 2, 3}, {1, 3, 2}, {2, 2, 1}, {5, 4, 3}}
	score, pairwise := Scores(unfair, false)
	// policy 0 against 1: wins, wins, tie, loses: 2 points; 2 against 1: loses, then wins 3
	if pairwise[0][1] != 2 || pairwise[1][0] != 1 || pairwise[0][2] != 2 || pairwise[2][1] != 3 {
		t.Fatalf("%v", pairwise)
	}
	half, pairHalf := Scores(unfair, true)
	if pairHalf[0][1] != 2.5 || pairHalf[1][0] != 1.5 {
		t.Fatalf("ties half: %v", pairHalf)
	}
	total := 0.0
	for a := range score {
		want := 0.0
		for b := range score {
			want += pairwise[a][b]
		}
		if score[a] != want {
			t.Fatalf("score %d = %v, want the sum of its row %v", a, score[a], want)
		}
		total += half[a]
	}
	if total != 4*3 { // samples x n(n-1)/2
		t.Fatalf("with ties half the points sum to %v, want 12", total)
	}
	if s, _ := Scores([][]float64{{4}}, false); s[0] != 0 {
		t.Fatalf("one policy: %v", s)
	}
}
