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

// Kinds of spend: what a charge to a team's budget paid for.
const (
	SpendBought      = "bought"      // an auction payment for quota bought
	SpendSold        = "sold"        // an auction receipt for quota sold
	SpendReservation = "reservation" // a short-term reservation's charge
	SpendBestEffort  = "best-effort" // a best-effort job's charge
	SpendHolding     = "holding"     // a pool's holding charge
)

// TeamCharge is one posting to a team's budget that is spend: Amount is what it
// cost the team (positive), or for Kind SpendSold what it brought in (positive).
// A reversal has the kind of the entry it reverses and the opposite sign; Source
// is that entry (the charge's own entry otherwise), and Ref its reference.
type TeamCharge struct {
	Team     string
	Kind     string
	Amount   Money
	EntryID  int64
	Source   int64
	Ref      string
	Memo     string
	PostedAt time.Time
}

// TeamCharges returns every posting to a team's budget (every team's for "")
// posted in [from, to) that is spend (grants and adjustments are not), in posting
// order. It is the one rule SpendByMonth, the spend page and the FOCUS export
// classify charges by. Returns EINVALID when to is before from.
func (l *Ledger) TeamCharges(ctx context.Context, team string, from, to time.Time) ([]TeamCharge, error) {
	if to.Before(from) {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "to: the period ends before it starts")
	}
	var rows []struct {
		AccountID AccountID
		Amount    Money
		Reason    Reason
		Ref       string
		Memo      string
		EntryID   int64
		Source    int64
		Reversal  bool
		PostedAt  time.Time
	}
	q := l.read(ctx).Raw(`SELECT p.account_id, p.amount, COALESCE(o.reason, e.reason) AS reason, COALESCE(o.ref, e.ref) AS ref,
		e.memo, e.id AS entry_id, COALESCE(o.id, e.id) AS source, o.id IS NOT NULL AS reversal, e.posted_at
		FROM ledger_postings p JOIN ledger_entries e ON e.id = p.entry_id LEFT JOIN ledger_entries o ON o.id = e.reverses
		WHERE p.account_id LIKE 'team:%' AND e.posted_at >= ? AND e.posted_at < ?
		AND (p.account_id = ? OR ? = '')
		ORDER BY e.posted_at, e.id, p.account_id`, bound(from), bound(to), TeamAccount(team), team)
	if err := q.Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]TeamCharge, 0, len(rows))
	for _, r := range rows {
		t, _ := r.AccountID.Team()
		c := TeamCharge{Team: t, Amount: -r.Amount, EntryID: r.EntryID, Source: r.Source, Ref: r.Ref, Memo: r.Memo, PostedAt: r.PostedAt.UTC()}
		switch {
		case r.Reason == ReasonBestEffort || strings.HasPrefix(r.Ref, "best-effort:"):
			c.Kind = SpendBestEffort
		case r.Reason == ReasonReservation:
			c.Kind = SpendReservation
		case r.Reason == ReasonHolding:
			c.Kind = SpendHolding
		case r.Reason == ReasonSettlement:
			// A payment takes from the budget, a sale pays into it; a reversal's
			// posting has the opposite sign of the one it undoes.
			if paid := r.Amount < 0; paid != r.Reversal {
				c.Kind = SpendBought
			} else {
				c.Kind, c.Amount = SpendSold, r.Amount
			}
		default:
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// AddCharge adds a charge to the month's figures by its kind.
func (s *MonthSpend) AddCharge(c TeamCharge) {
	switch c.Kind {
	case SpendBought:
		s.Bought += c.Amount
	case SpendSold:
		s.Sold += c.Amount
	case SpendReservation:
		s.Reservations += c.Amount
	case SpendBestEffort:
		s.BestEffort += c.Amount
	case SpendHolding:
		s.Holding += c.Amount
	}
}

// SpendByMonth returns each team's spend per month for entries posted in [from,
// to), by team then month; team "" gives every team, months without spend are
// left out. Returns EINVALID when to is before from.
func (l *Ledger) SpendByMonth(ctx context.Context, team string, from, to time.Time) ([]MonthSpend, error) {
	cs, err := l.TeamCharges(ctx, team, from, to)
	if err != nil {
		return nil, err
	}
	byKey := map[[2]string]*MonthSpend{}
	for _, c := range cs {
		key := [2]string{c.Team, c.PostedAt.Format("2006-01")}
		s := byKey[key]
		if s == nil {
			s = &MonthSpend{Team: key[0], Month: key[1]}
			byKey[key] = s
		}
		s.AddCharge(c)
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
