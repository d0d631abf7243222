package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"gorm.io/gorm"
)

// HoldPart is one partial settlement of a hold by SettleHoldPart: how much it
// captured (posted by entry EntryID, nil when it captured nothing) and released.
// Parts are never changed or deleted; a hold's Captured and Released are at least
// the sums of its parts' (CaptureHold may capture more when it resolves the hold).
type HoldPart struct {
	ID        int64
	Hold      int64  `gorm:"column:hold_id"`
	Key       string `gorm:"column:idem_key"`
	Captured  Money
	Released  Money
	EntryID   *int64
	CreatedAt time.Time
}

// TableName is the hold parts table.
func (HoldPart) TableName() string { return "ledger_hold_parts" }

// partRow is a part with the fingerprint of its request, for idempotent replays.
type partRow struct {
	HoldPart
	Fingerprint string
}

func (partRow) TableName() string { return "ledger_hold_parts" }

// partFingerprint identifies a part's request, so that a replay of its key with
// other content is told apart.
func partFingerprint(id int64, capture, release Money, to AccountID, reason Reason, ref string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%d\x00%d\x00%s\x00%s\x00%s", id, capture, release, to, reason, ref)
	return hex.EncodeToString(h.Sum(nil))
}

// SettleHoldPart captures `capture` of an active hold (posting it from the hold's
// account to `to` in one entry with reason and ref) and releases `release` of it.
// The hold stays active while any amount remains; when capture and release use up
// the rest it resolves (status captured if anything was ever captured, else released).
// key is the part's idempotency key: repeating the same key with the same hold,
// capture, release, to, reason and ref returns the hold as it is now and changes
// nothing; other content is ECONFLICT. capture and release must be >= 0, not both 0,
// and together at most the hold's remaining amount (EINVALID otherwise). A resolved
// hold is ECONFLICT; an unknown hold ENOTFOUND.
//
// The part, its entry and the hold's new totals commit together, and the
// account's held column drops by capture + release, so it keeps equal to the sum of
// the account's active holds' remaining amounts. The capture is checked against the
// funds the part frees, so it never fails for want of funds unless the hold's
// account is overdrawn some other way (EUNPROCESSABLE).
func (l *Ledger) SettleHoldPart(ctx context.Context, key string, id int64, capture, release Money, to AccountID, reason Reason, ref string) (Hold, error) {
	key = strings.TrimSpace(key)
	if key == "" || len(key) > 200 {
		return Hold{}, clearhouse.Errorf(clearhouse.EINVALID, "key: an idempotency key of 1 to 200 characters is required")
	}
	if capture < 0 || release < 0 {
		return Hold{}, clearhouse.Errorf(clearhouse.EINVALID, "amount: capture and release must not be negative")
	}
	if capture == 0 && release == 0 {
		return Hold{}, clearhouse.Errorf(clearhouse.EINVALID, "amount: a part must capture or release something")
	}
	if capture > 0 {
		if _, err := to.kind(); err != nil {
			return Hold{}, err
		}
		if !reason.valid() {
			return Hold{}, clearhouse.Errorf(clearhouse.EINVALID, "reason: %q is not a reason ("+reasonList+")", reason)
		}
	}
	fp := partFingerprint(id, capture, release, to, reason, ref)
	var h Hold
	settle := func(tx *gorm.DB) error {
		var err error
		h, err = l.settlePart(tx, key, fp, id, capture, release, to, reason, ref)
		return err
	}
	err := l.write(ctx, settle)
	if err != nil && errors.Is(err, gorm.ErrDuplicatedKey) && l.tx == nil {
		err = l.write(ctx, settle) // a concurrent first write with this key won; replay it
	}
	if err != nil {
		return Hold{}, err
	}
	return h, nil
}

// settlePart is SettleHoldPart inside tx, with its arguments checked.
func (l *Ledger) settlePart(tx *gorm.DB, key, fp string, id int64, capture, release Money, to AccountID, reason Reason, ref string) (Hold, error) {
	var prior partRow
	err := tx.Take(&prior, "idem_key = ?", key).Error
	if err == nil {
		if prior.Hold != id || prior.Captured != capture || prior.Released != release || prior.Fingerprint != fp {
			return Hold{}, conflictKey(key)
		}
		return loadHold(tx, id)
	} else if !errors.Is(err, gorm.ErrRecordNotFound) {
		return Hold{}, err
	}
	h, err := loadHold(tx, id)
	if err != nil {
		return Hold{}, err
	}
	if h.Status != HoldActive {
		return Hold{}, clearhouse.Errorf(clearhouse.ECONFLICT, "hold: %d is already %s", id, h.Status)
	}
	part, err := capture.Add(release)
	if err != nil || part > h.Remaining() {
		return Hold{}, clearhouse.Errorf(clearhouse.EINVALID, "amount: capture and release together must be at most the hold's remaining %s", h.Remaining())
	}
	if err := l.advance(tx, h, capture, release); err != nil {
		return Hold{}, err
	}
	// Free the part first, so the capture's debit is checked against the freed balance.
	if err := addToAccount(tx, h.Account, "held", -part); err != nil {
		return Hold{}, err
	}
	row := partRow{HoldPart: HoldPart{Hold: id, Key: key, Captured: capture, Released: release, CreatedAt: l.now()}, Fingerprint: fp}
	if capture > 0 {
		// The part's entry takes its key; a key some other write already gave an
		// entry is refused rather than replayed, which would free the hold unpaid.
		var used int64
		if err := tx.Model(&entryRow{}).Where("idem_key = ?", key).Count(&used).Error; err != nil {
			return Hold{}, err
		}
		if used > 0 {
			return Hold{}, conflictKey(key)
		}
		e := NewEntry{Key: key, Reason: reason, Ref: ref, Memo: fmt.Sprintf("partial capture of hold %d (%s)", h.ID, h.Ref),
			Postings: []Posting{{Account: h.Account, Amount: -capture}, {Account: to, Amount: capture}}}
		if err := e.validate(); err != nil {
			return Hold{}, err
		}
		out, err := l.post(tx, e, nil)
		if err != nil {
			return Hold{}, err
		}
		row.EntryID = &out.ID
	}
	if err := tx.Omit("ID").Create(&row).Error; err != nil {
		return Hold{}, err
	}
	return loadHold(tx, id)
}

// advance adds a part to active hold h's totals, resolving it when nothing
// remains. It refuses (ECONFLICT) when the hold changed since h was read.
func (l *Ledger) advance(tx *gorm.DB, h Hold, capture, release Money) error {
	set := map[string]any{"captured": h.Captured + capture, "released": h.Released + release}
	if h.Remaining() == capture+release {
		status := HoldReleased
		if h.Captured+capture > 0 {
			status = HoldCaptured
		}
		set["status"], set["resolved_at"] = status, l.now()
	}
	res := tx.Model(&Hold{}).Where("id = ? AND status = ? AND captured = ? AND released = ?", h.ID, HoldActive, h.Captured, h.Released).Updates(set)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return clearhouse.Errorf(clearhouse.ECONFLICT, "hold: %d was resolved or settled concurrently", h.ID)
	}
	return nil
}

// loadHold reads a hold or returns ENOTFOUND.
func loadHold(tx *gorm.DB, id int64) (Hold, error) {
	var h Hold
	if err := tx.Take(&h, "id = ?", id).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return Hold{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "hold: no hold %d", id)
	} else if err != nil {
		return Hold{}, err
	}
	return h, nil
}

// partsCaptured sums what a hold's parts captured.
func partsCaptured(tx *gorm.DB, id int64) (Money, error) {
	var sum int64
	err := tx.Raw("SELECT COALESCE(SUM(captured), 0) FROM ledger_hold_parts WHERE hold_id = ?", id).Scan(&sum).Error
	return Money(sum), err
}

// HoldParts lists a hold's parts in the order they were settled, or returns
// ENOTFOUND for an unknown hold.
func (l *Ledger) HoldParts(ctx context.Context, id int64) ([]HoldPart, error) {
	db := l.read(ctx)
	if _, err := loadHold(db, id); err != nil {
		return nil, err
	}
	var ps []HoldPart
	return ps, db.Where("hold_id = ?", id).Order("id").Find(&ps).Error
}
