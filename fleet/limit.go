package fleet

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"gorm.io/gorm"
)

// Limit is a team's limit in one pool by the one rule every backend and page uses:
// Units() = Held + Reserved. Held is all the team holds, what it has on offer
// included: quota on offer stays usable until a sale settles (the settlement then
// lowers Held). Reserved is what its reservations running now take beyond its own
// quota: a reservation that fits in the team's free quota costs nothing and does not
// raise the limit (DESIGN.md, "Reservations for short-term jobs"). BestEffort is what
// its best-effort tasks were granted now; it is never part of Units: the backend
// enforces it apart, so a team's own work cannot use it.
type Limit struct {
	Team, Pool string
	Held       int64 // holdings, what is on offer included
	Offered    int64 // of Held, on offer for sale now (still usable)
	Reserved   int64 // running reservations' units beyond the team's own quota now
	BestEffort int64 // granted to the team's best-effort tasks now, enforced apart
}

// Units is the limit of the team's own work: Held + Reserved.
func (l Limit) Units() int64 { return l.Held + l.Reserved }

// Holding is what a team holds of a pool, and how much of it is on offer for sale.
type Holding struct {
	Team, Pool string
	Held       int64
	Offered    int64
}

// Grant is one best-effort task the server runs for a team now: units per pool.
type Grant struct {
	Team          string
	Configuration map[string]int64
}

// Limits applies the one rule to a cluster at now: held is every team's holdings of
// the cluster's pools, running the allocation's running requests (their Beyond: the
// units the plan takes from shared capacity, not from the team's quota, in the
// current slot), grants the best-effort tasks running now. A request whose end is not
// after now takes nothing. Every team and pool with a non-zero part is listed, by
// team and pool.
func Limits(held []Holding, running []Assignment, grants []Grant, now time.Time) []Limit {
	by := map[[2]string]*Limit{}
	get := func(team, pool string) *Limit {
		k := [2]string{team, pool}
		if by[k] == nil {
			by[k] = &Limit{Team: team, Pool: pool}
		}
		return by[k]
	}
	for _, h := range held {
		l := get(h.Team, h.Pool)
		l.Held += h.Held
		l.Offered += h.Offered
	}
	for _, a := range running {
		if a.Units <= 0 || !a.End.IsZero() && !a.End.After(now) {
			continue // listed until its slot ends after it ended early
		}
		for p, n := range a.Beyond {
			if n > 0 {
				get(a.Team, p).Reserved += n
			}
		}
	}
	for _, g := range grants {
		for p, n := range g.Configuration {
			if n > 0 {
				get(g.Team, p).BestEffort += n
			}
		}
	}
	keys := slices.SortedFunc(maps.Keys(by), func(x, y [2]string) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) })
	out := make([]Limit, 0, len(keys))
	for _, k := range keys {
		if l := *by[k]; l.Held != 0 || l.Reserved != 0 || l.BestEffort != 0 {
			out = append(out, l)
		}
	}
	return out
}

// clusterHoldings is every team's holdings of cluster's pools with what of each is
// on offer, by team and pool.
func clusterHoldings(tx *gorm.DB, cluster string) ([]Holding, error) {
	var rows []struct {
		TeamID, PoolID    string
		Quantity, Offered int64
	}
	err := tx.Raw(`SELECT h.team_id, h.pool_id, h.quantity, COALESCE((SELECT SUM(q.quantity) FROM quota_holds q
		WHERE q.team_id = h.team_id AND q.pool_id = h.pool_id), 0) AS offered
		FROM holdings h JOIN pools p ON p.id = h.pool_id WHERE p.cluster_id = ? AND h.quantity > 0
		ORDER BY h.team_id, h.pool_id`, cluster).Scan(&rows).Error
	out := make([]Holding, 0, len(rows))
	for _, r := range rows {
		out = append(out, Holding{Team: r.TeamID, Pool: r.PoolID, Held: r.Quantity, Offered: r.Offered})
	}
	return out, err
}

// Limits is the one rule applied to this allocation with the best-effort tasks
// granted now.
func (a Allocation) Limits(grants []Grant) []Limit {
	return Limits(a.Holdings, a.Running, grants, a.Now)
}
