package exchange

import (
	"time"

	"gorm.io/gorm"
)

// MarkPlanChanged records, inside tx, that quotas or capacity changed: every
// server's reservation plan (package fleet) is rebuilt before its next call. Market
// writes that move holdings, set quota aside for offers or change a pool's capacity
// call it in their own transaction, so the change and the signal commit together.
func MarkPlanChanged(tx *gorm.DB) error {
	return tx.Exec("UPDATE plan_state SET version = version + 1 WHERE id = 1").Error
}

func bumpPlan(tx *gorm.DB) error { return MarkPlanChanged(tx) }

// QuotaCommitments tells the market how much of a team's quota of a pool is
// committed to work outside the auction (accepted reservations) at any moment from
// now on: quota the team may not offer for sale. The reservation service
// implements it; the market asks inside its own transaction, so the answer and the
// offer it allows commit together.
type QuotaCommitments interface {
	CommittedQuota(tx *gorm.DB, team, pool string, quota int64, now time.Time) (int64, error)
}

// UseQuotaCommitments makes offers respect c. Without it the market assumes no
// quota is committed (as in tests of the market alone).
func (m *Market) UseQuotaCommitments(c QuotaCommitments) { m.committed = c }

// committedQuota asks the configured QuotaCommitments, if any.
func (m *Market) committedQuota(tx *gorm.DB, team, pool string, quota int64) (int64, error) {
	if m.committed == nil {
		return 0, nil
	}
	return m.committed.CommittedQuota(tx, team, pool, quota, m.now())
}
