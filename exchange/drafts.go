package exchange

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/notify"
)

// Draft is an order a team prepares before an auction takes bids. It holds no
// money or quota and takes part in no auction until a member places it.
type Draft struct {
	ID        int64
	TeamID    string
	CreatedBy int64
	Spec      OrderSpec
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MaxDraftsPerTeam bounds the drafts one team keeps.
const MaxDraftsPerTeam = 200

// NoticeDraftsReady is the notification kind that tells a team's members that an
// auction opened while the team has drafts (ref "auction:N").
const NoticeDraftsReady = "drafts_ready"

type draftRow struct {
	ID        int64
	TeamID    string
	CreatedBy int64
	Spec      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

func (draftRow) TableName() string { return "order_drafts" }

// draftSpec is how a draft's order is stored: bundles and limits in micro-dollars.
type draftSpec struct {
	Bundles []Bundle `json:"bundles"`
	Limit   *int64   `json:"limit,omitempty"`
	Limits  []int64  `json:"limits,omitempty"`
}

func encodeDraft(spec OrderSpec) (string, error) {
	d := draftSpec{Bundles: spec.Bundles}
	if spec.Limit != nil {
		l := int64(*spec.Limit)
		d.Limit = &l
	}
	for _, l := range spec.Limits {
		d.Limits = append(d.Limits, int64(l))
	}
	b, err := json.Marshal(d)
	return string(b), err
}

func (r draftRow) draft() (Draft, error) {
	var d draftSpec
	if err := json.Unmarshal([]byte(r.Spec), &d); err != nil {
		return Draft{}, fmt.Errorf("draft %d: %w", r.ID, err)
	}
	spec := OrderSpec{Team: r.TeamID, Bundles: d.Bundles}
	if d.Limit != nil {
		l := ledger.Money(*d.Limit)
		spec.Limit = &l
	}
	for _, l := range d.Limits {
		spec.Limits = append(spec.Limits, ledger.Money(l))
	}
	return Draft{ID: r.ID, TeamID: r.TeamID, CreatedBy: r.CreatedBy, Spec: spec, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}

// checkDraftSpec checks what every draft write checks: by acts for spec's team, and
// the spec is well formed and names pools that exist.
func (m *Market) checkDraftSpec(ctx context.Context, by identity.User, spec OrderSpec) error {
	if !by.Role.OnTeam() || by.TeamID != spec.Team {
		return clearhouse.Errorf(clearhouse.EFORBIDDEN, "only the team's members and owners keep its drafts")
	}
	if spec.Key != "" {
		return clearhouse.Errorf(clearhouse.EINVALID, "idempotency key: drafts take none; give it when placing")
	}
	if err := spec.Validate(); err != nil {
		return err
	}
	return poolsExist(m.db.Read.WithContext(ctx), spec)
}

// SaveDraft keeps spec as a draft of by's team: a new one when id is 0, otherwise
// it replaces draft id. Nothing is held. Returns EINVALID for a bad spec,
// ENOTFOUND for an unknown pool or another team's draft, EFORBIDDEN for a user
// not on the team, and EUNPROCESSABLE when the team has MaxDraftsPerTeam drafts.
func (m *Market) SaveDraft(ctx context.Context, by identity.User, id int64, spec OrderSpec) (Draft, error) {
	if err := m.checkDraftSpec(ctx, by, spec); err != nil {
		return Draft{}, err
	}
	text, err := encodeDraft(spec)
	if err != nil {
		return Draft{}, err
	}
	now := m.now()
	row := draftRow{ID: id, TeamID: spec.Team, CreatedBy: by.ID, Spec: text, CreatedAt: now, UpdatedAt: now}
	err = m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if id != 0 {
			res := tx.Model(&draftRow{}).Where("id = ? AND team_id = ?", id, spec.Team).Updates(map[string]any{"spec": text, "updated_at": now})
			if res.Error == nil && res.RowsAffected == 0 {
				return clearhouse.Errorf(clearhouse.ENOTFOUND, "draft: no draft %d", id)
			}
			return res.Error
		}
		var team Team // the team's row serialises its drafts, so the count holds
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&team, "id = ?", spec.Team).Error; err != nil {
			return notFound(err, "team: no team %q", spec.Team)
		}
		var n int64
		if err := tx.Model(&draftRow{}).Where("team_id = ?", spec.Team).Count(&n).Error; err != nil {
			return err
		}
		if n >= MaxDraftsPerTeam {
			return clearhouse.Errorf(clearhouse.EUNPROCESSABLE, "drafts: team %s already keeps %d drafts, the most it may; place or delete some first", spec.Team, n)
		}
		return tx.Omit("ID").Create(&row).Error
	})
	if err != nil {
		return Draft{}, err
	}
	if id != 0 {
		return m.Draft(ctx, by, id)
	}
	return row.draft()
}

// Drafts lists a team's drafts, newest first.
func (m *Market) Drafts(ctx context.Context, team string) ([]Draft, error) {
	var rows []draftRow
	if err := m.db.Read.WithContext(ctx).Where("team_id = ?", team).Order("id DESC").Limit(MaxDraftsPerTeam).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]Draft, 0, len(rows))
	for _, r := range rows {
		d, err := r.draft()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Draft returns one draft of by's team (ENOTFOUND for another team's).
func (m *Market) Draft(ctx context.Context, by identity.User, id int64) (Draft, error) {
	var r draftRow
	if err := m.db.Read.WithContext(ctx).Take(&r, "id = ?", id).Error; err != nil {
		return Draft{}, notFound(err, "draft: no draft %d", id)
	}
	if r.TeamID != by.TeamID {
		return Draft{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "draft: no draft %d", id)
	}
	return r.draft()
}

// DeleteDraft deletes a draft of by's team (ENOTFOUND when there is none).
func (m *Market) DeleteDraft(ctx context.Context, by identity.User, id int64) error {
	if !by.Role.OnTeam() {
		return clearhouse.Errorf(clearhouse.EFORBIDDEN, "only the team's members and owners keep its drafts")
	}
	res := m.db.Write.WithContext(ctx).Where("id = ? AND team_id = ?", id, by.TeamID).Delete(&draftRow{})
	if res.Error == nil && res.RowsAffected == 0 {
		return clearhouse.Errorf(clearhouse.ENOTFOUND, "draft: no draft %d", id)
	}
	return res.Error
}

// PlaceDraft places draft id of by's team in the auction taking bids, with every
// check and hold of PlaceOrder at this moment, and deletes the draft in the same
// transaction: it is placed once, or stays a draft. With spec non-nil (an edited
// draft placed from its form), spec is placed instead of the stored order.
// Returns PlaceOrder's errors, ENOTFOUND for another team's draft, and ECONFLICT
// when the draft was placed or deleted concurrently.
func (m *Market) PlaceDraft(ctx context.Context, by identity.User, id int64, spec *OrderSpec) (Order, error) {
	d, err := m.Draft(ctx, by, id)
	if err != nil {
		return Order{}, err
	}
	s := d.Spec
	if spec != nil {
		s = *spec
	}
	if err := m.checkDraftSpec(ctx, by, s); err != nil {
		return Order{}, err
	}
	if err := pricedNow(m.db.Read.WithContext(ctx), s); err != nil {
		return Order{}, err
	}
	var o Order
	err = m.db.Grouped(ctx, func(tx *gorm.DB) error {
		var err error
		if o, err = m.placeOrder(ctx, tx, by, s, s.digest(by.ID)); err != nil {
			return err
		}
		// The draft's row is the last lock taken (after the ledger's): a concurrent
		// placing of the same draft finds it gone and rolls back.
		res := tx.Where("id = ? AND team_id = ?", id, by.TeamID).Delete(&draftRow{})
		if res.Error == nil && res.RowsAffected == 0 {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "draft: draft %d was placed or deleted just now; nothing more was placed", id)
		}
		return res.Error
	})
	if err != nil {
		return Order{}, err
	}
	m.interestChanged()
	return o, nil
}

// notifyDrafts tells the members and owners of every team with drafts that
// auction a opened and takes them now. It runs in the opening's transaction.
func (m *Market) notifyDrafts(tx *gorm.DB, a Auction) error {
	var counts []struct {
		TeamID string
		N      int
	}
	if err := tx.Model(&draftRow{}).Select("team_id, COUNT(*) AS n").Group("team_id").Order("team_id").Scan(&counts).Error; err != nil || len(counts) == 0 {
		return err
	}
	teams := make([]string, len(counts))
	n := map[string]int{}
	for i, c := range counts {
		teams[i], n[c.TeamID] = c.TeamID, c.N
	}
	users, err := teamUsers(tx, teams, identity.RoleMember, identity.RoleOwner)
	if err != nil {
		return err
	}
	var all []identity.User
	for _, t := range teams {
		all = append(all, users[t]...)
	}
	return m.notices.Send(tx, all, func(u identity.User) notify.Message {
		drafts := "1 draft order"
		if n[u.TeamID] != 1 {
			drafts = fmt.Sprintf("%d draft orders", n[u.TeamID])
		}
		body := fmt.Sprintf("Auction #%d takes bids until %s. Your team %s has %s: place them from your orders page, where each is checked and its holds are taken as it is placed.",
			a.ID, a.ClosesAt.UTC().Format("2006-01-02 15:04 MST"), u.TeamID, drafts)
		return notify.Message{Kind: NoticeDraftsReady, Ref: fmt.Sprintf("auction:%d", a.ID), Subject: fmt.Sprintf("Auction #%d is open: your team has %s", a.ID, drafts), Body: body, Link: "/orders"}
	})
}
