package exchange

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/notify"
)

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
	return m.notices.Send(tx, placer, func(identity.User) notify.Message {
		if approved {
			return notify.Message{Kind: NoticeOrderApproved, Ref: ref, Subject: fmt.Sprintf("Order #%d approved", o.ID),
				Body: fmt.Sprintf("%s approved your order #%d for %s. It now takes part in %s; what it may pay stays held on the team's budget until the auction settles.", owner, o.ID, team.Name, auction),
				Link: "/orders"}
		}
		return notify.Message{Kind: NoticeOrderRejected, Ref: ref, Subject: fmt.Sprintf("Order #%d rejected", o.ID),
			Body: fmt.Sprintf("%s rejected your order #%d for %s. It will not take part in %s, and what it held on the team's budget is released.", owner, o.ID, team.Name, auction),
			Link: "/orders"}
	})
}
