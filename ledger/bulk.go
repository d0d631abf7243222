package ledger

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/clearhouse/clearhouse"
	"gorm.io/gorm"
)

// Capture is one hold to capture in CaptureHolds.
type Capture struct {
	Key    string
	HoldID int64
	Amount Money
	To     AccountID
	Reason Reason
	Ref    string
}

// Release is one hold to release in ReleaseHolds.
type Release struct {
	Key    string
	HoldID int64
}

const chunk = 500

// chunks calls fn on consecutive slices of at most chunk ids.
func chunks(ids []int64, fn func([]int64) error) error {
	for lo := 0; lo < len(ids); lo += chunk {
		if err := fn(ids[lo:min(lo+chunk, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}

// loadActive loads holds by id and reports whether every one is active.
func loadActive(tx *gorm.DB, ids []int64) (map[int64]Hold, bool, error) {
	holds := make(map[int64]Hold, len(ids))
	err := chunks(ids, func(part []int64) error {
		var hs []Hold
		if err := tx.Where("id IN ?", part).Find(&hs).Error; err != nil {
			return err
		}
		for _, h := range hs {
			holds[h.ID] = h
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	for _, id := range ids {
		if h, ok := holds[id]; !ok || h.Status != HoldActive {
			return holds, false, nil
		}
	}
	return holds, len(holds) == len(ids), nil
}

// CaptureHolds captures many holds at once, with the same effect as calling
// CaptureHold for each in order (the same entries, keys and checks), but with a few
// statements per batch instead of a dozen per hold: settlement of a large auction
// uses it. When a hold is not active or a key was used before, it falls back to one
// CaptureHold per capture, so replays and conflicts behave as there. It returns
// one entry per capture (empty for a capture of zero).
func (l *Ledger) CaptureHolds(ctx context.Context, cs []Capture) ([]Entry, error) {
	out := make([]Entry, len(cs))
	err := l.write(ctx, func(tx *gorm.DB) error {
		one := l.WithTx(tx)
		ids := make([]int64, len(cs))
		keys := make([]string, 0, len(cs))
		seen := map[int64]bool{}
		for i, c := range cs {
			ids[i] = c.HoldID
			keys = append(keys, c.Key)
			if seen[c.HoldID] || c.Key == "" || len(c.Key) > 200 || c.Amount < 0 || !c.Reason.valid() {
				return l.captureEach(ctx, one, cs, out)
			}
			seen[c.HoldID] = true
		}
		holds, allActive, err := loadActive(tx, ids)
		if err != nil {
			return err
		}
		var used int64
		for lo := 0; lo < len(keys) && used == 0; lo += chunk {
			if err := tx.Model(&entryRow{}).Where("idem_key IN ?", keys[lo:min(lo+chunk, len(keys))]).Count(&used).Error; err != nil {
				return err
			}
		}
		if !allActive || used > 0 {
			return l.captureEach(ctx, one, cs, out)
		}
		now := l.now()
		held := map[AccountID]Money{}
		moved := map[AccountID]Money{}
		var rows []entryRow
		var entryOf []int // capture index of each row
		for i, c := range cs {
			h := holds[c.HoldID]
			if c.Amount > h.Remaining() {
				return clearhouse.Errorf(clearhouse.EINVALID, "amount: a capture must be between 0 and the hold's remaining %s", h.Remaining())
			}
			if _, err := c.To.kind(); err != nil {
				return err
			}
			if held[h.Account], err = held[h.Account].Sub(h.Remaining()); err != nil {
				return err
			}
			if c.Amount == 0 {
				continue
			}
			if moved[h.Account], err = moved[h.Account].Sub(c.Amount); err != nil {
				return err
			}
			if moved[c.To], err = moved[c.To].Add(c.Amount); err != nil {
				return err
			}
			e := NewEntry{Key: c.Key, Reason: c.Reason, Ref: c.Ref, Memo: fmt.Sprintf("capture of hold %d (%s)", h.ID, h.Ref),
				Postings: []Posting{{Account: h.Account, Amount: -c.Amount}, {Account: c.To, Amount: c.Amount}}}
			rows = append(rows, entryRow{IdemKey: e.Key, Fingerprint: e.fingerprint(), Reason: e.Reason, Ref: e.Ref, Memo: e.Memo, PostedAt: now})
			entryOf = append(entryOf, i)
			out[i] = Entry{Key: e.Key, Reason: e.Reason, Ref: e.Ref, Memo: e.Memo, At: now, Postings: e.Postings}
		}
		// Free the holds first, so the captures are checked against the freed balance.
		for _, acct := range sortedAccounts(held) {
			if err := addToAccount(tx, acct, "held", held[acct]); err != nil {
				return err
			}
		}
		for _, acct := range sortedAccounts(moved) {
			if d := moved[acct]; d != 0 {
				if err := addToAccount(tx, acct, "balance", d); err != nil {
					return err
				}
			}
		}
		if len(rows) > 0 {
			if err := tx.Omit("ID").CreateInBatches(&rows, chunk).Error; err != nil {
				return err
			}
		}
		var postings []postingRow
		entryID := map[int]int64{}
		for j, r := range rows {
			i := entryOf[j]
			entryID[i] = r.ID
			out[i].ID = r.ID
			for _, p := range out[i].Postings {
				postings = append(postings, postingRow{EntryID: r.ID, AccountID: p.Account, Amount: p.Amount})
			}
		}
		if len(postings) > 0 {
			if err := tx.CreateInBatches(&postings, chunk).Error; err != nil {
				return err
			}
		}
		for i, c := range cs {
			var eid *int64
			if id, ok := entryID[i]; ok {
				eid = &id
			}
			h := holds[c.HoldID]
			if err := resolveRow(tx, h, c.Key, HoldCaptured, h.Captured+c.Amount, eid, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (l *Ledger) captureEach(ctx context.Context, one *Ledger, cs []Capture, out []Entry) error {
	for i, c := range cs {
		e, err := one.CaptureHold(ctx, c.Key, c.HoldID, c.Amount, c.To, c.Reason, c.Ref)
		if err != nil {
			return err
		}
		out[i] = e
	}
	return nil
}

// resolveRow marks hold h resolved with captured as its captured total, provided it
// is still active and no part was settled since h was read (ECONFLICT otherwise),
// so that the caller frees exactly h.Remaining() from the account's held column.
func resolveRow(tx *gorm.DB, h Hold, key string, status HoldStatus, captured Money, entryID *int64, now time.Time) error {
	res := tx.Exec(`UPDATE ledger_holds SET status = ?, captured = ?, entry_id = ?, resolve_key = ?, resolved_at = ?
		WHERE id = ? AND status = ? AND captured = ? AND released = ?`,
		status, captured, entryID, key, now, h.ID, HoldActive, h.Captured, h.Released)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return clearhouse.Errorf(clearhouse.ECONFLICT, "hold: %d was resolved or settled concurrently", h.ID)
	}
	return nil
}

// ReleaseHolds releases many holds at once, with the same effect as ReleaseHold for
// each (falling back to it when a hold is not active, so replays behave as there).
func (l *Ledger) ReleaseHolds(ctx context.Context, rs []Release) error {
	return l.write(ctx, func(tx *gorm.DB) error {
		one := l.WithTx(tx)
		ids := make([]int64, len(rs))
		seen := map[int64]bool{}
		dup := false
		for i, r := range rs {
			ids[i] = r.HoldID
			dup = dup || seen[r.HoldID] || r.Key == "" || len(r.Key) > 200
			seen[r.HoldID] = true
		}
		holds, allActive, err := loadActive(tx, ids)
		if err != nil {
			return err
		}
		if dup || !allActive {
			for _, r := range rs {
				if err := one.ReleaseHold(ctx, r.Key, r.HoldID); err != nil {
					return err
				}
			}
			return nil
		}
		held := map[AccountID]Money{}
		now := l.now()
		for _, r := range rs {
			h := holds[r.HoldID]
			if held[h.Account], err = held[h.Account].Sub(h.Remaining()); err != nil {
				return err
			}
			if err := resolveRow(tx, h, r.Key, HoldReleased, h.Captured, nil, now); err != nil {
				return err
			}
		}
		for _, acct := range sortedAccounts(held) {
			if err := addToAccount(tx, acct, "held", held[acct]); err != nil {
				return err
			}
		}
		return nil
	})
}

// sortedAccounts lists a map's accounts in order, so that writers touch accounts
// in one order.
func sortedAccounts(m map[AccountID]Money) []AccountID {
	out := make([]AccountID, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}
