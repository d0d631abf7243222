package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"gorm.io/gorm"
)

// HoldStatus is where a hold is: active until it resolves once, by capture or
// release.
type HoldStatus string

// Hold statuses.
const (
	HoldActive   HoldStatus = "active"
	HoldCaptured HoldStatus = "captured"
	HoldReleased HoldStatus = "released"
)

// Hold is money set aside on a team's budget for an open order. While active it
// reduces the available balance; it resolves once, captured in part or whole (the
// rest released) or released.
type Hold struct {
	ID         int64
	Key        string    `gorm:"column:idem_key"`
	Account    AccountID `gorm:"column:account_id"`
	Amount     Money
	Ref        string
	Status     HoldStatus
	Captured   Money
	EntryID    *int64
	ResolveKey *string
	CreatedAt  time.Time
	ResolvedAt *time.Time
}

// TableName is the holds table.
func (Hold) TableName() string { return "ledger_holds" }

// PlaceHold sets amount aside on a team's account. The available balance must
// cover it (EUNPROCESSABLE otherwise), under any interleaving of writers. A repeated
// key with the same account, amount and reference returns the first hold; with
// other content it is ECONFLICT.
func (l *Ledger) PlaceHold(ctx context.Context, key string, acct AccountID, amount Money, ref string) (Hold, error) {
	key = strings.TrimSpace(key)
	if key == "" || len(key) > 200 {
		return Hold{}, clearhouse.Errorf(clearhouse.EINVALID, "key: an idempotency key of 1 to 200 characters is required")
	}
	if _, ok := acct.Team(); !ok {
		return Hold{}, clearhouse.Errorf(clearhouse.EINVALID, "account: holds are placed on team budgets, not on %s", acct)
	}
	if amount <= 0 {
		return Hold{}, clearhouse.Errorf(clearhouse.EINVALID, "amount: a hold must be positive")
	}
	var h Hold
	place := func(tx *gorm.DB) error {
		err := tx.Take(&h, "idem_key = ?", key).Error
		if err == nil {
			if h.Account != acct || h.Amount != amount || h.Ref != ref {
				return conflictKey(key)
			}
			return nil
		} else if !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		if err := addToAccount(tx, acct, "held", amount); err != nil {
			return err
		}
		h = Hold{Key: key, Account: acct, Amount: amount, Ref: ref, Status: HoldActive, CreatedAt: l.now()}
		return tx.Omit("ID").Create(&h).Error
	}
	err := l.grouped(ctx, place)
	if err != nil && errors.Is(err, gorm.ErrDuplicatedKey) && l.tx == nil {
		err = l.grouped(ctx, place) // a concurrent first write with this key won; replay it
	}
	if err != nil {
		return Hold{}, err
	}
	return h, nil
}

// resolve loads an active hold for resolution with key, or reports a replay: done
// is true when the hold was already resolved by this same key.
func resolve(tx *gorm.DB, key string, id int64) (h Hold, done bool, err error) {
	key = strings.TrimSpace(key)
	if key == "" || len(key) > 200 {
		return Hold{}, false, clearhouse.Errorf(clearhouse.EINVALID, "key: an idempotency key of 1 to 200 characters is required")
	}
	if err := tx.Take(&h, "id = ?", id).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return Hold{}, false, clearhouse.Errorf(clearhouse.ENOTFOUND, "hold: no hold %d", id)
	} else if err != nil {
		return Hold{}, false, err
	}
	if h.Status != HoldActive {
		if h.ResolveKey != nil && *h.ResolveKey == key {
			return h, true, nil
		}
		return Hold{}, false, clearhouse.Errorf(clearhouse.ECONFLICT, "hold: %d is already %s", id, h.Status)
	}
	return h, false, nil
}

// ReleaseHold releases an active hold whole. Releasing again with the same key is a
// no-op; a hold resolved otherwise is ECONFLICT.
func (l *Ledger) ReleaseHold(ctx context.Context, key string, id int64) error {
	return l.write(ctx, func(tx *gorm.DB) error {
		h, done, err := resolve(tx, key, id)
		if err != nil || done {
			if done && h.Status != HoldReleased {
				return conflictKey(key)
			}
			return err
		}
		return l.finish(tx, h, key, HoldReleased, 0, nil)
	})
}

// finish resolves hold h: its amount stops counting against the account.
func (l *Ledger) finish(tx *gorm.DB, h Hold, key string, status HoldStatus, captured Money, entryID *int64) error {
	now := l.now()
	res := tx.Model(&Hold{}).Where("id = ? AND status = ?", h.ID, HoldActive).Updates(map[string]any{
		"status": status, "captured": captured, "entry_id": entryID, "resolve_key": key, "resolved_at": now})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return clearhouse.Errorf(clearhouse.ECONFLICT, "hold: %d was resolved concurrently", h.ID)
	}
	return addToAccount(tx, h.Account, "held", -h.Amount)
}

// CaptureHold resolves an active hold by posting amount (at most the hold's) from
// the hold's account to the account `to`, with reason and reference; the rest is
// released. Capturing zero releases the hold and posts nothing. Repeating with the
// same key returns the first entry; a hold resolved otherwise is ECONFLICT.
func (l *Ledger) CaptureHold(ctx context.Context, key string, id int64, amount Money, to AccountID, reason Reason, ref string) (Entry, error) {
	var out Entry
	err := l.write(ctx, func(tx *gorm.DB) error {
		h, done, err := resolve(tx, key, id)
		if err != nil {
			return err
		}
		if done {
			if h.Status != HoldCaptured || h.Captured != amount {
				return conflictKey(key)
			}
			if h.EntryID == nil {
				return nil
			}
			var r entryRow
			if err := tx.Take(&r, "id = ?", *h.EntryID).Error; err != nil {
				return err
			}
			out, err = l.load(tx, r)
			return err
		}
		if amount < 0 || amount > h.Amount {
			return clearhouse.Errorf(clearhouse.EINVALID, "amount: a capture must be between 0 and the hold's %s", h.Amount)
		}
		// Release first, so the capture's debit is checked against the freed balance.
		if err := l.finish(tx, h, key, HoldCaptured, amount, nil); err != nil {
			return err
		}
		if amount == 0 {
			return nil
		}
		e := NewEntry{Key: key, Reason: reason, Ref: ref, Memo: fmt.Sprintf("capture of hold %d (%s)", h.ID, h.Ref),
			Postings: []Posting{{Account: h.Account, Amount: -amount}, {Account: to, Amount: amount}}}
		if err := e.validate(); err != nil {
			return err
		}
		out, err = l.post(tx, e, nil)
		if err != nil {
			return err
		}
		return tx.Model(&Hold{}).Where("id = ?", h.ID).Update("entry_id", out.ID).Error
	})
	return out, err
}

// Holds lists an account's holds, newest first; activeOnly keeps the active ones.
func (l *Ledger) Holds(ctx context.Context, acct AccountID, activeOnly bool) ([]Hold, error) {
	q := l.read(ctx).Where("account_id = ?", acct).Order("id DESC")
	if activeOnly {
		q = q.Where("status = ?", HoldActive)
	}
	var hs []Hold
	return hs, q.Find(&hs).Error
}
