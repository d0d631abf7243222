package besteffort

import (
	"context"

	"github.com/clearhouse/clearhouse/ledger"
)

// Charges is what finance sees of abacus budgets: per team, what was
// charged (captured when a job was done), released (cancelled jobs, unmet SLOs) and
// is still held (jobs not done), with totals over every job; and the newest jobs
// with a budget.
type Charges struct {
	Teams []TeamCharges
	Total TeamCharges // Team is empty
	Jobs  []Job       // newest first, at most the limit asked for
	More  int64       // jobs with a budget beyond Jobs
}

// TeamCharges sums one team's abacus budgets.
type TeamCharges struct {
	Team                            string
	Jobs                            int64
	Budget, Charged, Released, Held ledger.Money
}

// Charges sums every team's abacus budgets and lists the newest limit jobs with a
// budget (limit 1 to 1,000; others mean 1,000). The sums come from the jobs' rows,
// which verify keeps equal to their holds in the ledger.
func (s *Service) Charges(ctx context.Context, limit int) (Charges, error) {
	db := s.db.Read.WithContext(ctx)
	if limit < 1 || limit > 1000 {
		limit = 1000
	}
	var out Charges
	err := db.Raw(`SELECT team_id AS team, count(*) AS jobs, sum(budget) AS budget, sum(captured) AS charged, sum(released) AS released,
			sum(budget - captured - released) AS held
		FROM best_effort_jobs WHERE budget > 0 GROUP BY team_id ORDER BY team_id`).Scan(&out.Teams).Error
	if err != nil {
		return out, err
	}
	for _, t := range out.Teams {
		out.Total.Jobs += t.Jobs
		out.Total.Budget += t.Budget
		out.Total.Charged += t.Charged
		out.Total.Released += t.Released
		out.Total.Held += t.Held
	}
	if err := db.Where("budget > 0").Order("id DESC").Limit(limit).Find(&out.Jobs).Error; err != nil {
		return out, err
	}
	out.More = out.Total.Jobs - int64(len(out.Jobs))
	return out, nil
}
