package besteffort

import (
	"context"
	"strings"

	"github.com/clearhouse/clearhouse/sharing"
)

// TeamPool is one team's idle-capacity account in one pool: the units of its quota
// lent to others' best-effort tasks now and the units its own best-effort tasks
// borrow now; its contribution and utility under the pool's policy's utility
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
func (s *Service) TeamPools(ctx context.Context, team string) ([]TeamPool, error) {
	all, err := s.accounts(ctx, team)
	if err != nil {
		return nil, err
	}
	return all[team], nil
}

// accounts returns the accounts of team (of every team when team is ""), by team
// then pool.
func (s *Service) accounts(ctx context.Context, team string) (map[string][]TeamPool, error) {
	db := s.db.Read.WithContext(ctx)
	q := db.Order("team_id, pool_id")
	if team != "" {
		q = q.Where("team_id = ?", team)
	}
	var bs []IdleBalance
	if err := q.Find(&bs).Error; err != nil {
		return nil, err
	}
	rows := map[string]map[string]*TeamPool{} // team -> pool
	row := func(team, pool string) *TeamPool {
		if rows[team] == nil {
			rows[team] = map[string]*TeamPool{}
		}
		if r, ok := rows[team][pool]; ok {
			return r
		}
		cluster, _, _ := strings.Cut(pool, "/")
		r := &TeamPool{Pool: pool, Cluster: cluster}
		rows[team][pool] = r
		return r
	}
	for _, b := range bs {
		if b.TeamID != sharing.Operator {
			row(b.TeamID, b.PoolID).Balance = b
		}
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
		if team == "" || t.TeamID == team {
			for pool, units := range jobs[t.JobID].Config() {
				row(t.TeamID, pool).Borrowed += float64(units)
			}
		}
		for _, sh := range t.Shares() {
			if sh.Lender != sharing.Operator && (team == "" || sh.Lender == team) {
				row(sh.Lender, sh.Pool).Lent += sh.Units
			}
		}
	}
	settings, err := s.Settings(ctx)
	if err != nil {
		return nil, err
	}
	policy := map[string]string{}
	for _, st := range settings {
		policy[st.Pool] = st.Policy
	}
	out := map[string][]TeamPool{}
	for t, pools := range rows {
		for _, pool := range sortedPools(pools) {
			r := pools[pool]
			r.Policy = policy[pool]
			if r.Policy == "" {
				r.Policy = DefaultPolicy
			}
			u := utilityOf(r.Policy)
			b := sharing.Balance{Surface: r.Balance.Surface, Orig: r.Balance.Orig, Rel: r.Balance.Rel,
				LentSurface: r.Balance.LentSurface, LentOrig: r.Balance.LentOrig, LentRel: r.Balance.LentRel}
			r.Contribution, r.Utility, r.UtilityName = b.Contribution(u), b.Utility(u), u.String()
			r.Priority = r.Balance.Priority
			out[t] = append(out[t], *r)
		}
	}
	return out, nil
}
