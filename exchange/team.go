package exchange

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"gorm.io/gorm"
)

// Team is an engineering team: it holds a budget and quota, and its members bid.
type Team struct {
	ID   string
	Name string
	// ApprovalThreshold, in micro-dollars: orders that may pay more than this wait
	// for an owner's approval. Zero means no order needs approval.
	ApprovalThreshold int64
	CreatedAt         time.Time
}

// NewTeam is what AddTeam needs.
type NewTeam struct {
	ID, Name          string
	ApprovalThreshold int64
	Budget            ledger.Money // granted from the grants account when the team is made
}

// Validate checks the fields and names the one at fault.
func (t *NewTeam) Validate() error {
	t.ID = strings.TrimSpace(t.ID)
	t.Name = strings.TrimSpace(t.Name)
	if err := checkSlug("id", t.ID); err != nil {
		return err
	}
	if t.Name == "" {
		t.Name = t.ID
	}
	if len(t.Name) > 100 {
		return clearhouse.Errorf(clearhouse.EINVALID, "name: at most 100 characters")
	}
	if t.ApprovalThreshold < 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "approval threshold: must not be negative")
	}
	if t.Budget < 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "budget: must not be negative")
	}
	return nil
}

// AddTeam creates a team. Returns EINVALID for bad fields and ECONFLICT for a taken id.
func (m *Market) AddTeam(ctx context.Context, nt NewTeam) (Team, error) {
	if err := nt.Validate(); err != nil {
		return Team{}, err
	}
	t := Team{ID: nt.ID, Name: nt.Name, ApprovalThreshold: nt.ApprovalThreshold, CreatedAt: m.now()}
	err := m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&t).Error; errors.Is(err, gorm.ErrDuplicatedKey) {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "id: team %q already exists", nt.ID)
		} else if err != nil {
			return err
		}
		l := m.ledger.WithTx(tx)
		for _, a := range []ledger.AccountID{ledger.Grants, ledger.Treasury, ledger.TeamAccount(t.ID)} {
			if err := l.OpenAccount(ctx, a); err != nil {
				return err
			}
		}
		if nt.Budget > 0 {
			_, err := l.Post(ctx, ledger.NewEntry{Key: "team/" + t.ID + "/initial-budget", Reason: ledger.ReasonGrant, Ref: "grant",
				Memo: "initial budget", Postings: []ledger.Posting{{Account: ledger.Grants, Amount: -nt.Budget}, {Account: ledger.TeamAccount(t.ID), Amount: nt.Budget}}})
			if err != nil {
				return err
			}
		}
		return m.record(ctx, tx, "team.add", "team:"+t.ID, nil, map[string]any{"name": t.Name, "approval_threshold": t.ApprovalThreshold, "budget": nt.Budget})
	})
	if err != nil {
		return Team{}, err
	}
	return t, nil
}

// Grant moves a positive amount from the grants account to a team's budget. The
// key makes a repeated grant a no-op. Returns ENOTFOUND for an unknown team and
// EINVALID for an amount that is not positive (budget is taken back with TakeBack).
func (m *Market) Grant(ctx context.Context, key, team string, amount ledger.Money, memo string) (ledger.Entry, error) {
	if amount <= 0 {
		return ledger.Entry{}, clearhouse.Errorf(clearhouse.EINVALID, "amount: a grant must be positive; take budget back with a take-back")
	}
	return m.moveBudget(ctx, key, team, amount, memo)
}

// TakeBack moves a positive amount from a team's budget back to the grants account,
// never below what the team has available. The key makes a repeat a no-op. Returns
// ENOTFOUND for an unknown team, EINVALID for an amount that is not positive and
// EUNPROCESSABLE when the team has less available.
func (m *Market) TakeBack(ctx context.Context, key, team string, amount ledger.Money, memo string) (ledger.Entry, error) {
	if amount <= 0 {
		return ledger.Entry{}, clearhouse.Errorf(clearhouse.EINVALID, "amount: the amount to take back must be positive")
	}
	neg, err := amount.Neg()
	if err != nil {
		return ledger.Entry{}, err
	}
	return m.moveBudget(ctx, key, team, neg, memo)
}

// moveBudget posts amount from grants to team (negative: back) and records it in
// the audit trail ("budget.grant" or "budget.take_back", the team's posted balance
// before and after) in the same transaction. A replayed key posts and records nothing.
func (m *Market) moveBudget(ctx context.Context, key, team string, amount ledger.Money, memo string) (ledger.Entry, error) {
	if _, err := m.Team(ctx, team); err != nil {
		return ledger.Entry{}, err
	}
	neg, err := amount.Neg()
	if err != nil {
		return ledger.Entry{}, err
	}
	e := ledger.NewEntry{Key: key, Reason: ledger.ReasonGrant, Ref: "grant", Memo: strings.TrimSpace(memo),
		Postings: []ledger.Posting{{Account: ledger.Grants, Amount: neg}, {Account: ledger.TeamAccount(team), Amount: amount}}}
	action := "budget.grant"
	if amount < 0 {
		action = "budget.take_back"
	}
	var out ledger.Entry
	err = m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		l := m.ledger.WithTx(tx)
		if _, err := l.EntryByKey(ctx, strings.TrimSpace(key)); err == nil { // a replay: the ledger answers it
			out, err = l.Post(ctx, e)
			return err
		}
		before, err := l.Balance(ctx, ledger.TeamAccount(team))
		if err != nil {
			return err
		}
		if out, err = l.Post(ctx, e); err != nil {
			return err
		}
		return m.record(ctx, tx, action, "team:"+team, budgetState{Balance: before.Posted},
			budgetState{Balance: before.Posted + amount, Amount: amount, Memo: e.Memo, Entry: out.ID, Key: out.Key})
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) { // two first writes of one key: the winner's entry answers
		return m.ledger.Post(ctx, e)
	}
	return out, err
}

// budgetState is a team's budget in the audit trail: its posted balance and, after a
// grant or take-back, what moved.
type budgetState struct {
	Balance ledger.Money `json:"balance"`
	Amount  ledger.Money `json:"amount,omitempty"`
	Memo    string       `json:"memo,omitempty"`
	Entry   int64        `json:"entry,omitempty"`
	Key     string       `json:"key,omitempty"`
}

// Team returns one team or ENOTFOUND.
func (m *Market) Team(ctx context.Context, id string) (Team, error) {
	var t Team
	err := m.db.Read.WithContext(ctx).Take(&t, "id = ?", id).Error
	return t, notFound(err, "team: no team %q", id)
}

// Teams lists every team by id.
func (m *Market) Teams(ctx context.Context) ([]Team, error) {
	var ts []Team
	err := m.db.Read.WithContext(ctx).Order("id").Find(&ts).Error
	return ts, err
}

// SetApprovalThreshold changes a team's approval threshold (micro-dollars).
func (m *Market) SetApprovalThreshold(ctx context.Context, team string, threshold int64) error {
	if threshold < 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "approval threshold: must not be negative")
	}
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var t Team
		if err := tx.Take(&t, "id = ?", team).Error; err != nil {
			return notFound(err, "team: no team %q", team)
		}
		if err := tx.Model(&Team{}).Where("id = ?", team).Update("approval_threshold", threshold).Error; err != nil {
			return err
		}
		return m.record(ctx, tx, "team.approval_threshold", "team:"+team, map[string]int64{"approval_threshold": t.ApprovalThreshold},
			map[string]int64{"approval_threshold": threshold})
	})
}
