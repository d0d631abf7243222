package sharing

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
)

// Operator is the lender name of the operator: the capacity of a pool that no team
// holds. It has no jobs of its own. Team names must differ from it.
const Operator = "@operator"

// Utility names one of the three utility functions of DirectContr (see the package
// documentation for the formulas).
type Utility int

// The utility functions.
const (
	Orig  Utility = iota // psi_sp of Skowron and Rzadca: a part executed at tau is worth t - tau
	Rel                  // ORIG normalised by the time since release: (t - tau) / (t - r) a part (RelValue)
	Simpl                // the executed surface, in unit-hours
)

// String returns "orig", "rel" or "simpl".
func (u Utility) String() string {
	return [...]string{"orig", "rel", "simpl"}[u]
}

// clockTolerance is how far apart two times may be and still be the same moment to the
// accounts: a millisecond, so that times stored with microseconds (PostgreSQL) and
// read back still match.
const clockTolerance = 1.0 / 3.6e6

// HoursOf converts a time to the engine's clock: hours since the Unix epoch.
func HoursOf(t time.Time) float64 { return float64(t.UnixNano()) / 3.6e12 }

// TimeOf converts the engine's clock back to a time (to the nanosecond, in UTC).
func TimeOf(h float64) time.Time { return time.Unix(0, int64(math.Round(h*3.6e12))).UTC() }

// Balance is one team's account in one pool: its utility (what its own best-effort
// work was worth) and its contribution (what others' work on the units it lent was
// worth) under each utility function. The SIMPL values are also the executed surfaces
// the ORIG and REL values grow with.
type Balance struct {
	Team, Pool                     string
	Surface, Orig, Rel             float64 // utility: SIMPL (unit-hours), ORIG, and sum w (r - tau) from which RelValue gives REL
	LentSurface, LentOrig, LentRel float64 // contribution under the same functions
}

// Utility returns the team's utility under u.
func (b Balance) Utility(u Utility) float64 {
	return [...]float64{b.Orig, RelValue(b.Surface, b.Orig, b.Rel), b.Surface}[u]
}

// Contribution returns the team's contribution under u.
func (b Balance) Contribution(u Utility) float64 {
	return [...]float64{b.LentOrig, RelValue(b.LentSurface, b.LentOrig, b.LentRel), b.LentSurface}[u]
}

// Served is round robin's mark: the sequence number of the last task started for a
// team (higher is more recent; a team never served has none).
type Served struct {
	Team string
	Seq  int64
}

// State is the accounts as plain values, for storage: every balance that is not all
// zero, sorted by team then pool, the round-robin marks sorted by team, the last
// sequence number, and the time they are up to date with.
type State struct {
	AsOf     time.Time
	Balances []Balance
	Served   []Served
	Seq      int64
}

// side is one half of a balance: utility or contribution.
type side struct{ surface, orig, rel float64 }

type row struct{ use, lent side }

// Accounts keeps contribution and utility per team and pool, and round robin's marks,
// as summaries that give the same values as the full history would. It is not safe
// for concurrent use.
type Accounts struct {
	asOf    float64
	teams   []string
	teamIdx map[string]int
	pools   []string
	poolIdx map[string]int
	rows    [][]row // [team][pool]
	served  []int64 // [team]
	seq     int64
}

// NewAccounts returns empty accounts up to date with asOf.
func NewAccounts(asOf time.Time) *Accounts { return newAccountsAt(HoursOf(asOf)) }

func newAccountsAt(h float64) *Accounts {
	return &Accounts{asOf: h, teamIdx: map[string]int{}, poolIdx: map[string]int{}}
}

// AsOf returns the time the accounts are up to date with.
func (a *Accounts) AsOf() time.Time { return TimeOf(a.asOf) }

func (a *Accounts) team(name string) int {
	if i, ok := a.teamIdx[name]; ok {
		return i
	}
	a.teamIdx[name] = len(a.teams)
	a.teams = append(a.teams, name)
	a.rows = append(a.rows, make([]row, len(a.pools)))
	a.served = append(a.served, 0)
	return len(a.teams) - 1
}

func (a *Accounts) pool(name string) int {
	if i, ok := a.poolIdx[name]; ok {
		return i
	}
	a.poolIdx[name] = len(a.pools)
	a.pools = append(a.pools, name)
	for t := range a.rows {
		a.rows[t] = append(a.rows[t], row{})
	}
	return len(a.pools) - 1
}

func (a *Accounts) at(team, pool int) *row { return &a.rows[team][pool] }

// Balance returns a team's balance in a pool (all zero if it has none).
func (a *Accounts) Balance(team, pool string) Balance {
	b := Balance{Team: team, Pool: pool}
	t, ok1 := a.teamIdx[team]
	p, ok2 := a.poolIdx[pool]
	if ok1 && ok2 {
		r := a.rows[t][p]
		b.Surface, b.Orig, b.Rel = r.use.surface, r.use.orig, r.use.rel
		b.LentSurface, b.LentOrig, b.LentRel = r.lent.surface, r.lent.orig, r.lent.rel
	}
	return b
}

// markServed records that a task of team was just started (round robin).
func (a *Accounts) markServed(team int) {
	a.seq++
	a.served[team] = a.seq
}

// grow moves the accounts to t1 as if nothing new ran: every ORIG value grows by its
// executed surface times the elapsed hours; the release-measured sums R do not change
// (each part's r - tau is fixed once it ran). The parts run in [asOf, t1) must
// be added next with addPart or addAggregate, against the same t1.
func (a *Accounts) grow(t1 float64) {
	d := t1 - a.asOf
	if d != 0 {
		for t := range a.rows {
			for p := range a.rows[t] {
				r := &a.rows[t][p]
				r.use.orig += r.use.surface * d
				r.lent.orig += r.lent.surface * d
			}
		}
	}
	a.asOf = t1
}

// addPart adds to s the parts of w units run over [x, y) of a job released at r, valued
// at t1 >= y.
func (s *side) addPart(w, r, x, y, t1 float64) {
	if y <= x || w == 0 {
		return
	}
	orig := w * ((t1-x)*(t1-x) - (t1-y)*(t1-y)) / 2
	s.surface += w * (y - x)
	s.orig += orig
	s.rel -= w * ((y-r)*(y-r) - (x-r)*(x-r)) / 2
}

// Run is a best-effort task that ran at some moment of an accounting interval: the
// task as Decide saw it, and when it ended (zero: still running).
type Run struct {
	Task
	Ended time.Time
}

// Advance brings the accounts up to until, adding the work of runs: each run counts
// over the part of [max(Started, AsOf), min(Ended, until)) that lies after AsOf, to its
// team's utility in each pool of its configuration and to its lenders' contributions.
// Runs must list every task that ran in [AsOf, until), each with its lenders over that
// interval (a task re-attributed in between is passed as two runs, split at the time).
// EINVALID if until is before AsOf (by more than a millisecond), or a run is malformed
// (the message names it); nothing changes then.
func (a *Accounts) Advance(runs []Run, until time.Time) error {
	t1 := HoursOf(until)
	if t1 < a.asOf-clockTolerance {
		return clearhouse.Errorf(clearhouse.EINVALID, "until: %s is before the accounts' %s", until.UTC().Format(time.RFC3339), a.AsOf().Format(time.RFC3339))
	}
	for i := range runs {
		if err := runs[i].validate(); err != nil {
			return clearhouse.Errorf(clearhouse.EINVALID, "runs[%d] (task %q): %s", i, runs[i].ID, err)
		}
	}
	t0 := a.asOf
	t1 = max(t1, t0)
	a.grow(t1)
	for _, r := range runs {
		x, y := max(HoursOf(r.Started), t0), t1
		if !r.Ended.IsZero() {
			y = min(y, HoursOf(r.Ended))
		}
		if y <= x {
			continue
		}
		rel := HoursOf(r.Enqueued)
		team := a.team(r.Team)
		for _, pool := range sortedKeys(r.Configuration) {
			a.at(team, a.pool(pool)).use.addPart(float64(r.Configuration[pool]), rel, x, y, t1)
		}
		for _, s := range r.Lenders {
			a.at(a.team(s.Lender), a.pool(s.Pool)).lent.addPart(s.Units, rel, x, y, t1)
		}
	}
	return nil
}

// Export returns the accounts as plain values (see State).
func (a *Accounts) Export() State {
	s := State{AsOf: a.AsOf(), Seq: a.seq}
	for t, team := range a.teams {
		for p, pool := range a.pools {
			if b := a.Balance(team, pool); a.rows[t][p] != (row{}) {
				s.Balances = append(s.Balances, b)
			}
		}
		if a.served[t] != 0 {
			s.Served = append(s.Served, Served{Team: team, Seq: a.served[t]})
		}
	}
	slices.SortFunc(s.Balances, func(x, y Balance) int {
		if c := strings.Compare(x.Team, y.Team); c != 0 {
			return c
		}
		return strings.Compare(x.Pool, y.Pool)
	})
	slices.SortFunc(s.Served, func(x, y Served) int { return strings.Compare(x.Team, y.Team) })
	return s
}

// Restore rebuilds accounts from a State. EINVALID, naming the entry, for a balance
// without team or pool, a repeated team and pool, a value that is not finite, or a
// round-robin mark above Seq.
func Restore(s State) (*Accounts, error) {
	a := newAccountsAt(HoursOf(s.AsOf))
	a.seq = s.Seq
	seen := map[[2]string]bool{}
	for i, b := range s.Balances {
		switch {
		case b.Team == "" || b.Pool == "":
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "balances[%d]: team and pool are required", i)
		case seen[[2]string{b.Team, b.Pool}]:
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "balances[%d]: team %q in pool %q appears twice", i, b.Team, b.Pool)
		}
		for _, v := range []float64{b.Surface, b.Orig, b.Rel, b.LentSurface, b.LentOrig, b.LentRel} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, clearhouse.Errorf(clearhouse.EINVALID, "balances[%d]: values must be finite numbers", i)
			}
		}
		seen[[2]string{b.Team, b.Pool}] = true
		r := a.at(a.team(b.Team), a.pool(b.Pool))
		r.use = side{b.Surface, b.Orig, b.Rel}
		r.lent = side{b.LentSurface, b.LentOrig, b.LentRel}
	}
	for i, m := range s.Served {
		if m.Team == "" || m.Seq < 0 || m.Seq > s.Seq {
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "served[%d]: a team and a sequence number between 0 and seq (%d) are required", i, s.Seq)
		}
		a.served[a.team(m.Team)] = m.Seq
	}
	return a, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
