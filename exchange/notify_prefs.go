package exchange

import (
	"context"
	"fmt"
	"time"

	"github.com/clearhouse/clearhouse/identity"
	"gorm.io/gorm"
)

// SetEmailNotifications turns a user's notification emails on or off. Off, the
// user still gets every notification in the app; no email is queued for them, and
// emails queued but not yet sent are dropped in the same transaction. Turning it
// on again sends only what comes after. Setting what is already set changes
// nothing.
func (m *Market) SetEmailNotifications(ctx context.Context, userID int64, on bool) error {
	now := m.now()
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if on {
			return tx.Model(&identity.User{}).Where("id = ?", userID).Update("email_off_at", nil).Error
		}
		if err := tx.Model(&identity.User{}).Where("id = ? AND email_off_at IS NULL", userID).Update("email_off_at", now).Error; err != nil {
			return err
		}
		return dropEmailsOff(tx, now, userID)
	})
}

// dropEmailsOff marks unsent emails of users who have turned email off as
// dropped: of one user, or of everyone when userID is 0.
func dropEmailsOff(tx *gorm.DB, now time.Time, userID int64) error {
	off := tx.Table("notifications").Select("notifications.id").
		Joins("JOIN users ON users.id = notifications.user_id").Where("users.email_off_at IS NOT NULL")
	if userID != 0 {
		off = off.Where("users.id = ?", userID)
	}
	return tx.Model(&Email{}).Where("sent_at IS NULL AND dropped_at IS NULL AND notification_id IN (?)", off).
		Update("dropped_at", now).Error
}

// notifyDecision tells whoever placed order o that an owner approved or rejected
// it (nobody, when the owner decided an order of their own).
func (m *Market) notifyDecision(tx *gorm.DB, o Order, by identity.User, approved bool) error {
	if o.CreatedBy == by.ID {
		return nil
	}
	var placer []identity.User
	if err := tx.Where("id = ?", o.CreatedBy).Find(&placer).Error; err != nil {
		return err
	}
	var team Team
	if err := tx.Where("id = ?", o.TeamID).Take(&team).Error; err != nil {
		return err
	}
	owner := by.Name
	if owner == "" {
		owner = by.Email
	}
	auction := "the auction it was placed for"
	if o.AuctionID != nil {
		auction = fmt.Sprintf("auction #%d", *o.AuctionID)
	}
	ref := fmt.Sprintf("order:%d", o.ID)
	return m.notifyUsers(tx, placer, func(identity.User) message {
		if approved {
			return message{NoticeOrderApproved, ref, fmt.Sprintf("Order #%d approved", o.ID),
				fmt.Sprintf("%s approved your order #%d for %s. It now takes part in %s; what it may pay stays held on the team's budget until the auction settles.", owner, o.ID, team.Name, auction),
				"/orders"}
		}
		return message{NoticeOrderRejected, ref, fmt.Sprintf("Order #%d rejected", o.ID),
			fmt.Sprintf("%s rejected your order #%d for %s. It will not take part in %s, and what it held on the team's budget is released.", owner, o.ID, team.Name, auction),
			"/orders"}
	})
}
