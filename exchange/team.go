package exchange

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
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
	return nil
}

// AddTeam creates a team. Returns EINVALID for bad fields and ECONFLICT for a taken id.
func (m *Market) AddTeam(ctx context.Context, nt NewTeam) (Team, error) {
	if err := nt.Validate(); err != nil {
		return Team{}, err
	}
	t := Team{ID: nt.ID, Name: nt.Name, ApprovalThreshold: nt.ApprovalThreshold, CreatedAt: m.now()}
	err := m.db.Write.WithContext(ctx).Create(&t).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return Team{}, clearhouse.Errorf(clearhouse.ECONFLICT, "id: team %q already exists", nt.ID)
	}
	return t, err
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
	res := m.db.Write.WithContext(ctx).Model(&Team{}).Where("id = ?", team).Update("approval_threshold", threshold)
	if res.Error == nil && res.RowsAffected == 0 {
		return clearhouse.Errorf(clearhouse.ENOTFOUND, "team: no team %q", team)
	}
	return res.Error
}
