package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// Capture is one hold to capture in a Batch.
type Capture struct {
	Key    string
	HoldID int64
	Amount Money
	To     AccountID
	Reason Reason
	Ref    string
}

// Release is one hold to release in a Batch.
type Release struct {
	Key    string
	HoldID int64
}

// Batch is many ledger writes applied together, as settlement of a large auction
// needs them: releases and captures of distinct holds, and new entries.
type Batch struct {
	Releases []Release
	Captures []Capture
	Entries  []NewEntry
}

// BatchResult is what Apply did: one entry per capture (empty for a capture of
// zero) and one per new entry, in the batch's order.
type BatchResult struct {
	Captured []Entry
	Posted   []Entry
}

// chunk bounds the rows or parameters one statement takes, well under SQLite's
// 32,766 variables and PostgreSQL's 65,535 parameters.
const chunk = 1000

// Apply applies a batch with the same effect as calling ReleaseHold, CaptureHold
// and Post for each of its items, in one transaction and in a few statements per
// thousand items. Items replayed with their first key and content return their
// first result and change nothing, each on its own: one replayed item does not
// slow the others down. It refuses the whole batch (changing nothing) with
// EINVALID for a malformed item or a hold named twice, ENOTFOUND for an unknown
// hold or account, ECONFLICT for a hold resolved by another key or a key used for
// other content, and EUNPROCESSABLE when a team's available balance would fall
// below zero. Locks follow the package's lock order: the holds in ascending id,
// then the accounts in ascending id.
func (l *Ledger) Apply(ctx context.Context, b Batch) (BatchResult, error) {
	out := BatchResult{Captured: make([]Entry, len(b.Captures)), Posted: make([]Entry, len(b.Entries))}
	if err := b.validate(); err != nil {
		return BatchResult{}, err
	}
	err := l.write(ctx, func(tx *gorm.DB) error {
		a := &applier{l: l, tx: tx, now: l.now(), held: map[AccountID]Money{}, moved: map[AccountID]Money{}}
		return a.apply(ctx, b, &out)
	})
	if err != nil {
		return BatchResult{}, err
	}
	return out, nil
}

func (b Batch) validate() error {
	seen := map[int64]bool{}
	keys := map[string]bool{}
	key := func(k string) error {
		if keys[strings.TrimSpace(k)] {
			return clearhouse.Errorf(clearhouse.EINVALID, "key: %q appears twice in one batch", k)
		}
		keys[strings.TrimSpace(k)] = true
		return nil
	}
	hold := func(id int64, k string) error {
		if k = strings.TrimSpace(k); k == "" || len(k) > 200 {
			return clearhouse.Errorf(clearhouse.EINVALID, "key: an idempotency key of 1 to 200 characters is required")
		}
		if err := key(k); err != nil {
			return err
		}
		if seen[id] {
			return clearhouse.Errorf(clearhouse.EINVALID, "hold: %d appears twice in one batch", id)
		}
		seen[id] = true
		return nil
	}
	for _, r := range b.Releases {
		if err := hold(r.HoldID, r.Key); err != nil {
			return err
		}
	}
	for _, c := range b.Captures {
		if err := hold(c.HoldID, c.Key); err != nil {
			return err
		}
		if c.Amount < 0 {
			return clearhouse.Errorf(clearhouse.EINVALID, "amount: a capture must not be negative")
		}
		if !c.Reason.valid() {
			return clearhouse.Errorf(clearhouse.EINVALID, "reason: %q is not a reason ("+reasonList+")", c.Reason)
		}
		if _, err := c.To.kind(); err != nil {
			return err
		}
	}
	for i := range b.Entries {
		if err := b.Entries[i].validate(); err != nil {
			return err
		}
		if err := key(b.Entries[i].Key); err != nil {
			return err
		}
	}
	return nil
}

// applier is one Apply's work in its transaction: the net change to each account's
// held and balance columns, applied once at the end in the lock order.
type applier struct {
	l     *Ledger
	tx    *gorm.DB
	now   time.Time
	held  map[AccountID]Money
	moved map[AccountID]Money

	entries  []entryRow
	postings [][]Posting // per entries row
	resolves []holdResolve
}

type holdResolve struct {
	hold     Hold
	key      string
	status   HoldStatus
	captured Money
	entry    int // index in entries, or -1
}

func (a *applier) apply(ctx context.Context, b Batch, out *BatchResult) error {
	ids := make([]int64, 0, len(b.Releases)+len(b.Captures))
	for _, r := range b.Releases {
		ids = append(ids, r.HoldID)
	}
	for _, c := range b.Captures {
		ids = append(ids, c.HoldID)
	}
	holds, err := lockHolds(a.tx, ids)
	if err != nil {
		return err
	}
	one := a.l.WithTx(a.tx)
	for _, r := range b.Releases {
		h := holds[r.HoldID]
		if h.Status != HoldActive { // a replay, or a conflict ReleaseHold names
			if err := one.ReleaseHold(ctx, r.Key, r.HoldID); err != nil {
				return err
			}
			continue
		}
		if err := a.free(h); err != nil {
			return err
		}
		a.resolves = append(a.resolves, holdResolve{hold: h, key: strings.TrimSpace(r.Key), status: HoldReleased, captured: h.Captured, entry: -1})
	}
	captureRow := make([]int, len(b.Captures)) // entries index of each capture, or -1
	for i, c := range b.Captures {
		captureRow[i] = -1
		h := holds[c.HoldID]
		if h.Status != HoldActive {
			if out.Captured[i], err = one.CaptureHold(ctx, c.Key, c.HoldID, c.Amount, c.To, c.Reason, c.Ref); err != nil {
				return err
			}
			continue
		}
		if c.Amount > h.Remaining() {
			return clearhouse.Errorf(clearhouse.EINVALID, "amount: a capture must be between 0 and the hold's remaining %s", h.Remaining())
		}
		if err := a.free(h); err != nil {
			return err
		}
		entry := -1
		if c.Amount > 0 {
			e := NewEntry{Key: strings.TrimSpace(c.Key), Reason: c.Reason, Ref: c.Ref, Memo: fmt.Sprintf("capture of hold %d (%s)", h.ID, h.Ref),
				Postings: []Posting{{Account: h.Account, Amount: -c.Amount}, {Account: c.To, Amount: c.Amount}}}
			if entry, err = a.entry(e); err != nil {
				return err
			}
			captureRow[i] = entry
		}
		a.resolves = append(a.resolves, holdResolve{hold: h, key: strings.TrimSpace(c.Key), status: HoldCaptured, captured: h.Captured + c.Amount, entry: entry})
	}
	postedRow, err := a.newEntries(b.Entries, out)
	if err != nil {
		return err
	}
	if err := a.write(ctx); err != nil {
		return err
	}
	for i, k := range captureRow {
		if k >= 0 {
			out.Captured[i] = a.entryOf(k)
		}
	}
	for i, k := range postedRow {
		if k >= 0 {
			out.Posted[i] = a.entryOf(k)
		}
	}
	return nil
}

// lockHolds reads the holds with ids and locks them (FOR UPDATE on PostgreSQL) in
// ascending id; ENOTFOUND when one does not exist. Only the columns Apply uses are
// read (id, account, amount, reference, status, captured, released), row by row
// rather than through gorm's reflection (0.6 s of a 100,000-order settlement's
// CPU): the other fields of each Hold are left zero.
func lockHolds(tx *gorm.DB, ids []int64) (map[int64]Hold, error) {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	holds := make(map[int64]Hold, len(ids))
	const cols = "SELECT id, account_id, amount, ref, status, captured, released FROM ledger_holds WHERE "
	pg := tx.Dialector.Name() == store.Postgres
	per := chunk
	if pg {
		per = max(len(sorted), 1) // one array parameter; LockRows takes the rows in ORDER BY's order
	}
	for part := range slices.Chunk(sorted, per) {
		q := tx.Raw(cols+"id IN ? ORDER BY id", part)
		if pg {
			q = tx.Raw(cols+"id = ANY(CAST(? AS BIGINT[])) ORDER BY id FOR UPDATE", store.BigintArray(part))
		}
		rs, err := q.Rows()
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			var h Hold
			if err := rs.Scan(&h.ID, &h.Account, &h.Amount, &h.Ref, &h.Status, &h.Captured, &h.Released); err != nil {
				rs.Close()
				return nil, err
			}
			holds[h.ID] = h
		}
		err = rs.Err()
		rs.Close()
		if err != nil {
			return nil, err
		}
	}
	for _, id := range ids {
		if _, ok := holds[id]; !ok {
			return nil, clearhouse.Errorf(clearhouse.ENOTFOUND, "hold: no hold %d", id)
		}
	}
	return holds, nil
}

// free counts what an active hold still sets aside as freed from its account.
func (a *applier) free(h Hold) error {
	var err error
	a.held[h.Account], err = a.held[h.Account].Sub(h.Remaining())
	return err
}

// entry queues a new entry and its balance moves; it returns its index.
func (a *applier) entry(e NewEntry) (int, error) {
	for _, p := range e.Postings {
		var err error
		if a.moved[p.Account], err = a.moved[p.Account].Add(p.Amount); err != nil {
			return 0, err
		}
	}
	a.entries = append(a.entries, entryRow{IdemKey: e.Key, Fingerprint: e.fingerprint(), Reason: e.Reason, Ref: e.Ref, Memo: e.Memo, PostedAt: a.now})
	a.postings = append(a.postings, e.Postings)
	return len(a.entries) - 1, nil
}

// newEntries queues the batch's new entries, replaying those whose key was used
// with the same content; it returns each one's queued index (-1 for a replay).
func (a *applier) newEntries(es []NewEntry, out *BatchResult) ([]int, error) {
	queued := make([]int, len(es))
	keys := make([]string, 0, len(es)+len(a.entries))
	for _, e := range es {
		keys = append(keys, e.Key)
	}
	for _, r := range a.entries {
		keys = append(keys, r.IdemKey)
	}
	prior := map[string]entryRow{}
	per, array := chunk, a.tx.Dialector.Name() == store.Postgres
	if array {
		per = max(len(keys), 1) // one array parameter
	}
	for part := range slices.Chunk(keys, per) {
		var rows []entryRow
		q := a.tx.Where("idem_key IN ?", part)
		if array {
			q = a.tx.Where("idem_key = ANY(CAST(? AS TEXT[]))", store.TextArray(part))
		}
		if err := q.Find(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			prior[r.IdemKey] = r
		}
	}
	for _, r := range a.entries { // captures of active holds: a used key is another write's
		if _, used := prior[r.IdemKey]; used {
			return nil, conflictKey(r.IdemKey)
		}
	}
	for i, e := range es {
		if p, ok := prior[e.Key]; ok {
			if p.Fingerprint != e.fingerprint() {
				return nil, conflictKey(e.Key)
			}
			var err error
			if out.Posted[i], err = a.l.load(a.tx, p); err != nil {
				return nil, err
			}
			queued[i] = -1
			continue
		}
		k, err := a.entry(e)
		if err != nil {
			return nil, err
		}
		queued[i] = k
	}
	return queued, nil
}

// write inserts the queued entries and postings, resolves the holds and moves the
// accounts, in the lock order.
func (a *applier) write(ctx context.Context) error {
	if len(a.entries) > 0 {
		rows := make([][]any, len(a.entries))
		for k, r := range a.entries {
			rows[k] = []any{r.IdemKey, r.Fingerprint, string(r.Reason), r.Ref, r.Memo, r.PostedAt}
		}
		ids, err := store.Insert(a.tx, "ledger_entries", []string{"idem_key", "fingerprint", "reason", "ref", "memo", "posted_at"}, rows, "id")
		if err != nil {
			return err
		}
		var postings [][]any
		for k, ps := range a.postings {
			a.entries[k].ID = ids[k]
			for _, p := range ps {
				postings = append(postings, []any{ids[k], string(p.Account), int64(p.Amount)})
			}
		}
		if _, err := store.Insert(a.tx, "ledger_postings", []string{"entry_id", "account_id", "amount"}, postings, ""); err != nil {
			return err
		}
	}
	slices.SortFunc(a.resolves, func(x, y holdResolve) int { return int(x.hold.ID - y.hold.ID) })
	if err := a.resolveHolds(ctx); err != nil {
		return err
	}
	accts := map[AccountID]bool{}
	for acct := range a.held {
		accts[acct] = true
	}
	for acct := range a.moved {
		accts[acct] = true
	}
	sorted := make([]AccountID, 0, len(accts))
	for acct := range accts {
		sorted = append(sorted, acct)
	}
	slices.Sort(sorted)
	for _, acct := range sorted {
		if err := moveAccount(a.tx, acct, a.held[acct], a.moved[acct]); err != nil {
			return err
		}
	}
	return nil
}

// resolveHolds marks the locked active holds resolved, on SQLite a thousand holds
// a statement (UPDATE ... FROM VALUES), on PostgreSQL all in one
// (resolveHoldsArrays). On SQLite the statement of a full thousand is
// prepared once and run for every full thousand: with the writer's statement
// journal in memory this takes about half the CPU of one prepared UPDATE per hold.
func (a *applier) resolveHolds(ctx context.Context) error {
	const per = 1000
	text := func(n int) string {
		var sb strings.Builder
		sb.WriteString(`UPDATE ledger_holds SET status = v.column2, captured = v.column3, entry_id = v.column4, resolve_key = v.column5, resolved_at = ?
			FROM (VALUES `)
		for i := range n {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT))")
		}
		sb.WriteString(") AS v WHERE ledger_holds.id = v.column1 AND ledger_holds.status = 'active'")
		return sb.String()
	}
	if a.tx.Dialector.Name() == store.Postgres {
		return a.resolveHoldsArrays()
	}
	reuse := len(a.resolves) > per
	var done int64
	var full [][]any // SQLite's full chunks' arguments, for the one prepared statement
	for part := range slices.Chunk(a.resolves, per) {
		args := make([]any, 0, 1+5*len(part))
		args = append(args, a.now)
		for _, r := range part {
			var entry *int64
			if r.entry >= 0 {
				entry = &a.entries[r.entry].ID
			}
			args = append(args, r.hold.ID, string(r.status), int64(r.captured), entry, r.key)
		}
		if reuse && len(part) == per {
			full = append(full, args)
			continue
		}
		res := a.tx.Exec(text(len(part)), args...)
		if res.Error != nil {
			return res.Error
		}
		done += res.RowsAffected
	}
	if len(full) > 0 {
		n, err := store.ExecEach(ctx, a.tx, text(per), full)
		if err != nil {
			return err
		}
		done += n
	}
	if done != int64(len(a.resolves)) {
		return clearhouse.Errorf(clearhouse.ECONFLICT, "hold: %d of %d holds were resolved concurrently", int64(len(a.resolves))-done, len(a.resolves))
	}
	return nil
}

// resolveHoldsArrays is resolveHolds on PostgreSQL: one UPDATE ... FROM
// unnest(...) for all the holds, each column one array parameter.
func (a *applier) resolveHoldsArrays() error {
	n := len(a.resolves)
	if n == 0 {
		return nil
	}
	ids, captured, entries := make([]int64, n), make([]int64, n), make([]*int64, n)
	statuses, keys := make([]string, n), make([]string, n)
	for i, r := range a.resolves {
		ids[i], statuses[i], captured[i], keys[i] = r.hold.ID, string(r.status), int64(r.captured), r.key
		if r.entry >= 0 {
			entries[i] = &a.entries[r.entry].ID
		}
	}
	done, err := store.ExecArrays(a.tx, `UPDATE ledger_holds SET status = v.status, captured = v.captured, entry_id = v.entry_id,
		resolve_key = v.resolve_key, resolved_at = $1
		FROM unnest(CAST($2 AS BIGINT[]), CAST($3 AS TEXT[]), CAST($4 AS BIGINT[]), CAST($5 AS BIGINT[]), CAST($6 AS TEXT[]))
			AS v (id, status, captured, entry_id, resolve_key)
		WHERE ledger_holds.id = v.id AND ledger_holds.status = 'active'`, a.now, ids, statuses, captured, entries, keys)
	if err != nil {
		return err
	}
	if done != int64(n) {
		return clearhouse.Errorf(clearhouse.ECONFLICT, "hold: %d of %d holds were resolved concurrently", int64(n)-done, n)
	}
	return nil
}

// moveAccount adds heldDelta and balanceDelta to an account in one statement, so
// the schema checks its available balance once, on the result.
func moveAccount(tx *gorm.DB, acct AccountID, heldDelta, balanceDelta Money) error {
	if heldDelta == 0 && balanceDelta == 0 {
		return nil
	}
	var cur account
	if err := tx.Take(&cur, "id = ?", acct).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return clearhouse.Errorf(clearhouse.ENOTFOUND, "account: no account %s", acct)
	} else if err != nil {
		return err
	}
	if _, err := cur.Held.Add(heldDelta); err != nil {
		return err
	}
	if _, err := cur.Balance.Add(balanceDelta); err != nil {
		return err
	}
	err := tx.Exec("UPDATE ledger_accounts SET held = held + ?, balance = balance + ? WHERE id = ?", heldDelta, balanceDelta, acct).Error
	if err != nil && strings.Contains(err.Error(), "22003") {
		return overflow("adding")
	}
	return fundsError(err, acct)
}

func (a *applier) entryOf(k int) Entry {
	r := a.entries[k]
	return Entry{ID: r.ID, Key: r.IdemKey, Reason: r.Reason, Ref: r.Ref, Memo: r.Memo, At: r.PostedAt, Postings: a.postings[k]}
}

// CaptureHolds captures many holds at once: Apply with only captures.
func (l *Ledger) CaptureHolds(ctx context.Context, cs []Capture) ([]Entry, error) {
	res, err := l.Apply(ctx, Batch{Captures: cs})
	return res.Captured, err
}

// ReleaseHolds releases many holds at once: Apply with only releases.
func (l *Ledger) ReleaseHolds(ctx context.Context, rs []Release) error {
	_, err := l.Apply(ctx, Batch{Releases: rs})
	return err
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
