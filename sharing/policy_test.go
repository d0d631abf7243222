package sharing

import (
	"math/rand/v2"
	"testing"

	"github.com/clearhouse/clearhouse"
)

// viewOf builds a one-pool view: teams with their shares, and jobs (team, units,
// enqueued hour) queued in the order given.
func viewOf(room int64, shares map[string]float64, jobs ...JobView) *View {
	v := &View{Pools: []PoolView{{Name: "cpu", Capacity: 10, Room: room}}}
	for _, name := range []string{"a", "b", "c"} {
		v.Teams = append(v.Teams, TeamView{Name: name, Share: shares[name]})
	}
	for i, j := range jobs {
		j.Job = &Job{ID: string(rune('p' + i)), Team: v.Teams[j.Team].Name}
		if j.Waiting == 0 {
			j.Waiting = 1
		}
		v.Jobs = append(v.Jobs, j)
		v.Teams[j.Team].Queue = append(v.Teams[j.Team].Queue, i)
	}
	return v
}

func job(team int, units int64, enqueued float64) JobView {
	return JobView{Team: team, Units: []PoolUnits{{0, units}}, Enqueued: enqueued}
}

func balances(t *testing.T, b ...Balance) *Accounts {
	t.Helper()
	acc, err := Restore(State{AsOf: epoch, Balances: b})
	if err != nil {
		t.Fatal(err)
	}
	return acc
}

func TestDirectContrServesTheLargestContributionLessUtility(t *testing.T) {
	acc := balances(t,
		Balance{Team: "a", Pool: "cpu", Surface: 2, Orig: 30, Rel: -28, LentSurface: 10, LentOrig: 10, LentRel: -1}, // simpl +8, orig -20, rel 100/11 - 60/58 = +8.06
		Balance{Team: "b", Pool: "cpu", Surface: 5, Orig: 5, Rel: -5},                                               // simpl -5, orig -5, rel -2.5
		Balance{Team: "c", Pool: "cpu", Surface: 0, Orig: 0, Rel: 0})                                                // 0 each
	v := viewOf(5, nil, job(1, 1, 0), job(2, 1, 1), job(0, 1, 2))
	rng := rand.New(rand.NewPCG(1, 1))
	for u, want := range map[Utility]string{Simpl: "a", Orig: "c", Rel: "a"} {
		got := DirectContr{u}.Choose(v, acc, rng)
		if got < 0 || v.Teams[v.Jobs[got].Team].Name != want {
			t.Errorf("direct-%s chose job %d, want team %s's", u, got, want)
		}
	}
}

func TestFairShareServesTheSmallestUsageOverShare(t *testing.T) {
	acc := balances(t, Balance{Team: "a", Pool: "cpu", Surface: 30}, Balance{Team: "b", Pool: "cpu", Surface: 20},
		Balance{Team: "c", Pool: "cpu", Surface: 1})
	// usage/share: a 3/0.6 = 5, b 2/0.3 = 6.7, c 0.1/0 (no quota: last)
	v := viewOf(5, map[string]float64{"a": 0.6, "b": 0.3}, job(1, 1, 0), job(2, 1, 0), job(0, 1, 5))
	if got := (FairShare{}).Choose(v, acc, nil); got != 2 {
		t.Fatalf("fairshare chose job %d, want a's job 2", got)
	}
}

func TestRoundRobinServesTheLeastRecentlyServed(t *testing.T) {
	acc := NewAccounts(epoch)
	v := viewOf(10, nil, JobView{Team: 0, Units: []PoolUnits{{0, 1}}, Enqueued: 3, Waiting: 5},
		JobView{Team: 1, Units: []PoolUnits{{0, 1}}, Enqueued: 1, Waiting: 5},
		JobView{Team: 2, Units: []PoolUnits{{0, 1}}, Enqueued: 2, Waiting: 5})
	var order []string
	for range 6 {
		j := RoundRobin{}.Choose(v, acc, nil)
		order = append(order, v.Teams[v.Jobs[j].Team].Name)
		v.bind(acc)
		acc.markServed(v.teamRows[v.Jobs[j].Team])
	}
	// never served: ties broken by the longest wait (b since 1, c since 2, a since 3)
	if got := order; got[0] != "b" || got[1] != "c" || got[2] != "a" || got[3] != "b" || got[4] != "c" || got[5] != "a" {
		t.Fatalf("round robin order %v", got)
	}
}

// The chosen team's longest-waiting job that fits, else the next team.
func TestChooseTakesTheLongestWaitingJobThatFits(t *testing.T) {
	acc := balances(t, Balance{Team: "a", Pool: "cpu", LentSurface: 9}, Balance{Team: "b", Pool: "cpu", LentSurface: 5})
	v := viewOf(3, nil, job(0, 5, 0), job(0, 2, 1), job(0, 1, 2), job(1, 1, 0))
	if got := (DirectContr{Simpl}).Choose(v, acc, nil); got != 1 {
		t.Fatalf("chose %d, want a's job 1 (job 0 needs 5 units, 3 free)", got)
	}
	v = viewOf(3, nil, job(0, 5, 0), job(1, 1, 0))
	if got := (DirectContr{Simpl}).Choose(v, acc, nil); got != 1 {
		t.Fatalf("chose %d, want b's job 1 (nothing of a fits)", got)
	}
	v.Pools[0].Room = 0
	if got := (DirectContr{Simpl}).Choose(v, acc, nil); got != -1 {
		t.Fatalf("chose %d with no room", got)
	}
}

// The victim is the lowest-priority team's most recently started task.
func TestVictimIsTheLowestPriorityTeamsNewestTask(t *testing.T) {
	acc := balances(t, Balance{Team: "a", Pool: "cpu", LentSurface: 9}, Balance{Team: "b", Pool: "cpu", Surface: 5})
	v := viewOf(0, nil)
	v.Running = []RunningView{{Team: 1, Started: 1}, {Team: 0, Started: 4}, {Team: 1, Started: 3}, {Team: 1, Started: 2}}
	for _, p := range []Policy{DirectContr{Simpl}, FairShare{}} {
		if got := p.Victim(v, acc, []int{0, 1, 2, 3}, nil); got != 2 {
			t.Errorf("%s: victim %d, want b's newest task (2)", p.Name(), got)
		}
		if got := p.Victim(v, acc, []int{1, 3}, nil); got != 1 {
			t.Errorf("%s: among candidates 1 and 3, victim %d, want position 1 (b's task 3)", p.Name(), got)
		}
	}
}

func TestByName(t *testing.T) {
	for _, name := range Names() {
		p, err := ByName(name)
		if err != nil || p.Name() != name {
			t.Errorf("%s: %v %v", name, p, err)
		}
	}
	if _, err := ByName("lottery"); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND || !contains(err, "lottery") {
		t.Errorf("unknown policy: %v", err)
	}
}
