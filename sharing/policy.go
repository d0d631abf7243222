package sharing

import (
	"math"
	"math/rand/v2"
	"strings"

	"github.com/clearhouse/clearhouse"
)

// Policy decides which job's task runs next on idle capacity, and which running task is
// preempted first. A policy is a value without state of its own: what it remembers
// lives in the Accounts it is given, so one policy value may serve many pools and
// goroutines. Randomized policies draw only from rng, so a seed fixes every decision.
type Policy interface {
	// Name is the policy's name, as ByName knows it.
	Name() string
	// Priorities writes each team's priority (out[t] for v.Teams[t]): higher runs
	// first, and the lowest is preempted first. acc is up to date with v.Now.
	Priorities(v *View, acc *Accounts, out []float64)
	// Choose returns the job (an index into v.Jobs) whose next task starts now; it must
	// satisfy v.Fits. -1 starts nothing.
	Choose(v *View, acc *Accounts, rng *rand.Rand) int
	// Victim returns the position in candidates (indices into v.Running, never empty)
	// of the task to preempt next.
	Victim(v *View, acc *Accounts, candidates []int, rng *rand.Rand) int
}

// Names lists the policies ByName knows, in the order the command line shows them.
func Names() []string {
	return []string{"direct-orig", "direct-rel", "direct-simpl", "fairshare", "round-robin"}
}

// ByName returns the named policy: direct-orig, direct-rel, direct-simpl, fairshare or
// round-robin. ENOTFOUND for any other name.
func ByName(name string) (Policy, error) {
	switch name {
	case "direct-orig":
		return DirectContr{Orig}, nil
	case "direct-rel":
		return DirectContr{Rel}, nil
	case "direct-simpl":
		return DirectContr{Simpl}, nil
	case "fairshare":
		return FairShare{}, nil
	case "round-robin":
		return RoundRobin{}, nil
	}
	return nil, clearhouse.Errorf(clearhouse.ENOTFOUND, "policy: unknown policy %q (known: %s)", name, strings.Join(Names(), ", "))
}

// DirectContr is Skowron and Rzadca's DirectContr: a team's priority is the sum over
// the view's pools of (contribution - utility) / capacity, under the utility function
// U; the highest-priority team's longest-waiting job runs first.
type DirectContr struct{ U Utility }

// Name returns direct-orig, direct-rel or direct-simpl.
func (p DirectContr) Name() string { return "direct-" + p.U.String() }

// Priorities implements Policy.
func (p DirectContr) Priorities(v *View, acc *Accounts, out []float64) {
	v.bind(acc)
	for t := range v.Teams {
		rows := acc.rows[v.teamRows[t]]
		s := 0.0
		for i, pool := range v.Pools {
			r := &rows[v.poolRows[i]]
			var contrib, util float64
			switch p.U {
			case Orig:
				contrib, util = r.lent.orig, r.use.orig
			case Rel:
				contrib, util = r.lent.relValue(), r.use.relValue()
			default:
				contrib, util = r.lent.surface, r.use.surface
			}
			s += (contrib - util) / float64(max(pool.Capacity, 1))
		}
		out[t] = s
	}
}

// Choose implements Policy: the highest priority team's longest-waiting job that fits.
func (p DirectContr) Choose(v *View, acc *Accounts, _ *rand.Rand) int {
	return chooseTeamFirst(v, acc, p)
}

// Victim implements Policy: the lowest priority team's most recently started task.
func (p DirectContr) Victim(v *View, acc *Accounts, c []int, _ *rand.Rand) int {
	return victimOfLowest(v, acc, p, c)
}

// FairShare serves first the team with the smallest ratio of usage (the sum over the
// view's pools of its executed surface / capacity) to its share of quota.
type FairShare struct{}

// Name returns "fairshare".
func (FairShare) Name() string { return "fairshare" }

// minShare keeps a team with no quota last among teams with usage, without dividing
// by zero; a team with no usage at all ranks with the unused teams.
const minShare = 1e-6

// Priorities implements Policy: minus usage over share.
func (FairShare) Priorities(v *View, acc *Accounts, out []float64) {
	v.bind(acc)
	for t, team := range v.Teams {
		rows := acc.rows[v.teamRows[t]]
		use := 0.0
		for i, pool := range v.Pools {
			use += rows[v.poolRows[i]].use.surface / float64(max(pool.Capacity, 1))
		}
		out[t] = -use / max(team.Share, minShare)
	}
}

// Choose implements Policy.
func (p FairShare) Choose(v *View, acc *Accounts, _ *rand.Rand) int {
	return chooseTeamFirst(v, acc, p)
}

// Victim implements Policy.
func (p FairShare) Victim(v *View, acc *Accounts, c []int, _ *rand.Rand) int {
	return victimOfLowest(v, acc, p, c)
}

// RoundRobin serves first the team served least recently (never served: first of all).
type RoundRobin struct{}

// Name returns "round-robin".
func (RoundRobin) Name() string { return "round-robin" }

// Priorities implements Policy: minus the sequence number of the team's last start.
func (RoundRobin) Priorities(v *View, acc *Accounts, out []float64) {
	v.bind(acc)
	for t := range v.Teams {
		out[t] = -float64(acc.served[v.teamRows[t]])
	}
}

// Choose implements Policy.
func (p RoundRobin) Choose(v *View, acc *Accounts, _ *rand.Rand) int {
	return chooseTeamFirst(v, acc, p)
}

// Victim implements Policy.
func (p RoundRobin) Victim(v *View, acc *Accounts, c []int, _ *rand.Rand) int {
	return victimOfLowest(v, acc, p, c)
}

// chooseTeamFirst picks the team with the highest priority among those with a job
// that fits, then its longest-waiting job that fits. Ties: the team whose
// longest-waiting job waited longest, then the team listed first.
func chooseTeamFirst(v *View, acc *Accounts, p Policy) int {
	if !v.anyRoom() {
		return -1
	}
	prio, skip := v.scratch()
	p.Priorities(v, acc, prio)
	for {
		best := -1
		for t := range v.Teams {
			if skip[t] || len(v.Teams[t].Queue) == 0 {
				continue
			}
			if best < 0 || prio[t] > prio[best] ||
				prio[t] == prio[best] && v.Jobs[v.Teams[t].Queue[0]].Enqueued < v.Jobs[v.Teams[best].Queue[0]].Enqueued {
				best = t
			}
		}
		if best < 0 {
			return -1
		}
		for _, j := range v.Teams[best].Queue {
			if v.Fits(j) {
				return j
			}
		}
		skip[best] = true
	}
}

// victimOfLowest returns the candidate of the lowest-priority team that started last
// (ties: the later in the list).
func victimOfLowest(v *View, acc *Accounts, p Policy, candidates []int) int {
	prio, _ := v.scratch()
	p.Priorities(v, acc, prio)
	best := 0
	for i, c := range candidates {
		r, b := v.Running[c], v.Running[candidates[best]]
		pr, pb := prio[r.Team], prio[b.Team]
		if pr < pb || pr == pb && r.Started >= b.Started {
			best = i
		}
	}
	return best
}

// finite replaces an infinite or NaN priority by 0, for reports.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
