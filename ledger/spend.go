package ledger

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
)

// MonthSpend is what one team spent and received in one calendar month (UTC), by
// kind, from its budget's postings. Amounts are positive: Bought is what auction
// settlements took from the budget, Sold what they paid into it. A reversal counts
// against the kind of the entry it reverses. Grants and adjustments are not spend.
type MonthSpend struct {
	Team         string
	Month        string // "2026-11"
	Bought       Money  // auction payments for quota bought
	Sold         Money  // auction receipts for quota sold
	Reservations Money  // short-term reservations' charges
	BestEffort   Money  // best-effort jobs' charges
	Holding      Money  // holding charges
}

// Net is the month's spend: every charge, less what selling quota brought in.
func (s MonthSpend) Net() Money {
	return s.Bought + s.Reservations + s.BestEffort + s.Holding - s.Sold
}

// Add adds another month's (or team's) figures, for totals.
func (s *MonthSpend) Add(o MonthSpend) {
	s.Bought += o.Bought
	s.Sold += o.Sold
	s.Reservations += o.Reservations
	s.BestEffort += o.BestEffort
	s.Holding += o.Holding
}

// SpendByMonth returns each team's spend per month for entries posted in [from,
// to), by team then month; team "" gives every team, months without spend are
// left out. Returns EINVALID when to is before from.
func (l *Ledger) SpendByMonth(ctx context.Context, team string, from, to time.Time) ([]MonthSpend, error) {
	if to.Before(from) {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "to: the period ends before it starts")
	}
	var rows []struct {
		AccountID AccountID
		Amount    Money
		Reason    Reason
		Ref       string
		Reversal  bool
		PostedAt  time.Time
	}
	q := l.read(ctx).Raw(`SELECT p.account_id, p.amount, COALESCE(o.reason, e.reason) AS reason, COALESCE(o.ref, e.ref) AS ref,
		o.id IS NOT NULL AS reversal, e.posted_at
		FROM ledger_postings p JOIN ledger_entries e ON e.id = p.entry_id LEFT JOIN ledger_entries o ON o.id = e.reverses
		WHERE p.account_id LIKE 'team:%' AND e.posted_at >= ? AND e.posted_at < ?
		AND (p.account_id = ? OR ? = '')
		ORDER BY e.posted_at, e.id`, bound(from), bound(to), TeamAccount(team), team)
	if err := q.Scan(&rows).Error; err != nil {
		return nil, err
	}
	byKey := map[[2]string]*MonthSpend{}
	for _, r := range rows {
		t, _ := r.AccountID.Team()
		key := [2]string{t, r.PostedAt.UTC().Format("2006-01")}
		s := byKey[key]
		if s == nil {
			s = &MonthSpend{Team: key[0], Month: key[1]}
			byKey[key] = s
		}
		switch {
		case r.Reason == ReasonBestEffort || strings.HasPrefix(r.Ref, "best-effort:"):
			s.BestEffort -= r.Amount
		case r.Reason == ReasonReservation:
			s.Reservations -= r.Amount
		case r.Reason == ReasonHolding:
			s.Holding -= r.Amount
		case r.Reason == ReasonSettlement:
			// A payment takes from the budget, a sale pays into it; a reversal's
			// posting has the opposite sign of the one it undoes.
			if paid := r.Amount < 0; paid != r.Reversal {
				s.Bought -= r.Amount
			} else {
				s.Sold += r.Amount
			}
		}
	}
	out := make([]MonthSpend, 0, len(byKey))
	for _, s := range byKey {
		if *s != (MonthSpend{Team: s.Team, Month: s.Month}) {
			out = append(out, *s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Team != out[j].Team {
			return out[i].Team < out[j].Team
		}
		return out[i].Month < out[j].Month
	})
	return out, nil
}
