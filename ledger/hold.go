package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// HoldStatus is where a hold is: active until it resolves once, by capture or
// release (see Hold.Status).
type HoldStatus string

// Hold statuses.
const (
	HoldActive   HoldStatus = "active"
	HoldCaptured HoldStatus = "captured"
	HoldReleased HoldStatus = "released"
)

// Hold is money set aside on a team's budget for an open order or reservation.
// While active, its remaining amount reduces the available balance. SettleHoldPart
// captures and releases it in parts; CaptureHold and ReleaseHold resolve it at once,
// taking whatever remains. Captured and Released are running totals, and
// Captured + Released <= Amount always.
//
// Status is active until the hold resolves. A hold resolved by CaptureHold is
// captured and one resolved by ReleaseHold is released (even when earlier parts
// captured some of it: Captured says how much was charged); one whose last part
// used up the rest is captured if any part captured money, else released.
// EntryID and ResolveKey are those of CaptureHold or ReleaseHold; the entries of
// parts are on the parts (HoldParts).
type Hold struct {
	ID         int64
	Key        string    `gorm:"column:idem_key"`
	Account    AccountID `gorm:"column:account_id"`
	Amount     Money
	Ref        string
	Status     HoldStatus
	Captured   Money
	Released   Money
	EntryID    *int64
	ResolveKey *string
	CreatedAt  time.Time
	ResolvedAt *time.Time
}

// TableName is the holds table.
func (Hold) TableName() string { return "ledger_holds" }

// Remaining is the part of the hold neither captured nor released yet: what it
// still sets aside while active.
func (h Hold) Remaining() Money { return h.Amount - h.Captured - h.Released }

// PlaceHold sets amount aside on a team's account. The available balance must
// cover it (EUNPROCESSABLE otherwise), under any interleaving of writers. A repeated
// key with the same account, amount and reference returns the first hold; with
// other content it is ECONFLICT.
func (l *Ledger) PlaceHold(ctx context.Context, key string, acct AccountID, amount Money, ref string) (Hold, error) {
	key, err := checkHold(key, acct, amount)
	if err != nil {
		return Hold{}, err
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
	err = l.grouped(ctx, place)
	if err != nil && errors.Is(err, gorm.ErrDuplicatedKey) && l.tx == nil {
		err = l.grouped(ctx, place) // a concurrent first write with this key won; replay it
	}
	if err != nil {
		return Hold{}, err
	}
	return h, nil
}

// checkHold validates a hold's key, account and amount; it returns the key trimmed.
func checkHold(key string, acct AccountID, amount Money) (string, error) {
	key = strings.TrimSpace(key)
	if key == "" || len(key) > 200 {
		return "", clearhouse.Errorf(clearhouse.EINVALID, "key: an idempotency key of 1 to 200 characters is required")
	}
	if _, ok := acct.Team(); !ok {
		return "", clearhouse.Errorf(clearhouse.EINVALID, "account: holds are placed on team budgets, not on %s", acct)
	}
	if amount <= 0 {
		return "", clearhouse.Errorf(clearhouse.EINVALID, "amount: a hold must be positive")
	}
	return key, nil
}

// PlaceNewHold is PlaceHold inside the caller's transaction tx for a key no hold
// can have yet, because it names a row the caller created in tx (placing an order
// holds its money under "order/<new id>/hold"). It neither looks for an earlier
// hold with the key nor opens a savepoint: a caller that gets an error abandons tx.
// Placing orders is the market's busiest write; this spares it three statements.
func (l *Ledger) PlaceNewHold(tx *gorm.DB, key string, acct AccountID, amount Money, ref string) (Hold, error) {
	key, err := checkHold(key, acct, amount)
	if err != nil {
		return Hold{}, err
	}
	if err := addToAccount(tx, acct, "held", amount); err != nil {
		return Hold{}, err
	}
	h := Hold{Key: key, Account: acct, Amount: amount, Ref: ref, Status: HoldActive, CreatedAt: l.now()}
	err = store.ScanRow(tx, `INSERT INTO ledger_holds (idem_key, account_id, amount, ref, status, captured, released, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, []any{h.Key, h.Account, h.Amount, h.Ref, h.Status, h.Captured, h.Released, h.CreatedAt}, &h.ID)
	return h, err
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

// ReleaseHold resolves an active hold by releasing what remains of it (all of it
// when no part was settled); parts already captured stay captured. Releasing again
// with the same key is a no-op; a hold resolved otherwise is ECONFLICT.
func (l *Ledger) ReleaseHold(ctx context.Context, key string, id int64) error {
	return l.write(ctx, func(tx *gorm.DB) error {
		h, done, err := resolve(tx, key, id)
		if err != nil || done {
			if done && h.Status != HoldReleased {
				return conflictKey(key)
			}
			return err
		}
		return l.finish(tx, h, key, HoldReleased, h.Captured, nil)
	})
}

// finish resolves hold h with captured as its new captured total: its remaining
// amount stops counting against the account. It refuses (ECONFLICT) when the hold
// changed since h was read, so the account's held column keeps equal to the sum of
// its active holds' remaining amounts.
func (l *Ledger) finish(tx *gorm.DB, h Hold, key string, status HoldStatus, captured Money, entryID *int64) error {
	if err := resolveRow(tx, h, key, status, captured, entryID, l.now()); err != nil {
		return err
	}
	return addToAccount(tx, h.Account, "held", -h.Remaining())
}

// CaptureHold resolves an active hold by posting amount (at most what remains of
// the hold: its amount less any parts settled by SettleHoldPart) from the hold's
// account to the account `to`, with reason and reference; the rest is released and
// the hold's Captured becomes the earlier parts' captures plus amount. Capturing
// zero releases the rest and posts nothing. Repeating with the same key returns the
// first entry; a hold resolved otherwise is ECONFLICT, an amount out of range
// EINVALID.
func (l *Ledger) CaptureHold(ctx context.Context, key string, id int64, amount Money, to AccountID, reason Reason, ref string) (Entry, error) {
	var out Entry
	err := l.write(ctx, func(tx *gorm.DB) error {
		h, done, err := resolve(tx, key, id)
		if err != nil {
			return err
		}
		if done {
			parts, err := partsCaptured(tx, h.ID)
			if err != nil {
				return err
			}
			if h.Status != HoldCaptured || h.Captured-parts != amount {
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
		if amount < 0 || amount > h.Remaining() {
			return clearhouse.Errorf(clearhouse.EINVALID, "amount: a capture must be between 0 and the hold's remaining %s", h.Remaining())
		}
		// Release first, so the capture's debit is checked against the freed balance.
		if err := l.finish(tx, h, key, HoldCaptured, h.Captured+amount, nil); err != nil {
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
