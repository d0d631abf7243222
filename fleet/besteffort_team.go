package fleet

import (
	"context"
	"strings"

	"github.com/clearhouse/clearhouse/sharing"
)

// TeamPool is one team's idle-capacity account in one pool: the units of its quota
// lent to others' best-effort tasks now and the units its own best-effort tasks
// borrow now; its contribution and utility under the cluster's policy's utility
// function (ORIG, REL or SIMPL for DirectContr; the executed surface, in
// unit-hours, for fairshare, round robin and abacus), the whole balance, and its
// priority in the cluster at the last decision (higher runs first).
type TeamPool struct {
	Pool, Cluster, Policy string
	Lent, Borrowed        float64
	Contribution, Utility float64
	Priority              float64
	Balance               IdleBalance
	UtilityName           string // orig, rel or simpl
}

// utilityOf is the utility function a policy ranks by.
func utilityOf(policy string) sharing.Utility {
	switch policy {
	case "direct-orig":
		return sharing.Orig
	case "direct-rel":
		return sharing.Rel
	}
	return sharing.Simpl
}

// TeamPools returns team's accounts in every pool where it has a balance or lends
// or borrows now, by pool. The balances are as of the last decision, report or
// tick in each cluster.
func (s *BestEffort) TeamPools(ctx context.Context, team string) ([]TeamPool, error) {
	db := s.db.Read.WithContext(ctx)
	var bs []IdleBalance
	if err := db.Where("team_id = ?", team).Order("pool_id").Find(&bs).Error; err != nil {
		return nil, err
	}
	rows := map[string]*TeamPool{}
	var order []string
	row := func(pool string) *TeamPool {
		if r, ok := rows[pool]; ok {
			return r
		}
		cluster, _, _ := strings.Cut(pool, "/")
		r := &TeamPool{Pool: pool, Cluster: cluster}
		rows[pool] = r
		order = append(order, pool)
		return r
	}
	for _, b := range bs {
		row(b.PoolID).Balance = b
	}
	var ts []Task
	if err := db.Where("status = ?", TaskRunning).Find(&ts).Error; err != nil {
		return nil, err
	}
	jobs, err := jobsByID(db, ts)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if t.TeamID == team {
			for pool, units := range jobs[t.JobID].Config() {
				row(pool).Borrowed += float64(units)
			}
		}
		for _, sh := range t.Shares() {
			if sh.Lender == team {
				row(sh.Pool).Lent += sh.Units
			}
		}
	}
	var ics []IdleCluster
	if err := db.Find(&ics).Error; err != nil {
		return nil, err
	}
	policy := map[string]string{}
	for _, c := range ics {
		policy[c.ClusterID] = c.Policy
	}
	var its []IdleTeam
	if err := db.Where("team_id = ?", team).Find(&its).Error; err != nil {
		return nil, err
	}
	prio := map[string]float64{}
	for _, t := range its {
		prio[t.ClusterID] = t.Priority
	}
	out := make([]TeamPool, 0, len(order))
	for _, pool := range sortedPools(rows) {
		r := rows[pool]
		r.Policy = policy[r.Cluster]
		if r.Policy == "" {
			r.Policy = DefaultPolicy
		}
		u := utilityOf(r.Policy)
		b := sharing.Balance{Surface: r.Balance.Surface, Orig: r.Balance.Orig, Rel: r.Balance.Rel,
			LentSurface: r.Balance.LentSurface, LentOrig: r.Balance.LentOrig, LentRel: r.Balance.LentRel}
		r.Contribution, r.Utility, r.UtilityName = b.Contribution(u), b.Utility(u), u.String()
		r.Priority = prio[r.Cluster]
		out = append(out, *r)
	}
	return out, nil
}
