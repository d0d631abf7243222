package ledger

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// AccountID names an account: "team:<id>" for a team's budget, "treasury" for the
// operator's treasury, "grants" for the account finance funds budgets from.
type AccountID string

// The operator's accounts.
const (
	Treasury AccountID = "treasury"
	Grants   AccountID = "grants"
)

// TeamAccount returns the budget account of a team.
func TeamAccount(team string) AccountID { return AccountID("team:" + team) }

// Team returns the team whose budget the account is, and whether it is one.
func (a AccountID) Team() (string, bool) { return strings.CutPrefix(string(a), "team:") }

func (a AccountID) kind() (string, error) {
	switch {
	case a == Treasury:
		return "treasury", nil
	case a == Grants:
		return "grants", nil
	case strings.HasPrefix(string(a), "team:") && len(a) > len("team:"):
		return "team", nil
	}
	return "", clearhouse.Errorf(clearhouse.EINVALID, "account: %q is not an account name (team:<id>, treasury or grants)", a)
}

// Reason says why an entry was posted.
type Reason string

// Reasons.
const (
	ReasonGrant       Reason = "grant"       // finance funds (or takes back) a budget
	ReasonSettlement  Reason = "settlement"  // an auction's payment
	ReasonReservation Reason = "reservation" // a short-term reservation's charge
	ReasonReversal    Reason = "reversal"    // corrects an earlier entry
	ReasonAdjustment  Reason = "adjustment"  // any other correction by finance
	ReasonBestEffort  Reason = "best-effort" // an abacus best-effort job's budget, charged when the job is done (migration 00014)
	ReasonHolding     Reason = "holding"     // a pool's monthly holding charge for the quota a team holds (migration 00027)
)

// reasonList names the reasons, for messages.
const reasonList = "grant, settlement, reservation, reversal, adjustment, best-effort, holding"

func (r Reason) valid() bool {
	switch r {
	case ReasonGrant, ReasonSettlement, ReasonReservation, ReasonReversal, ReasonAdjustment, ReasonBestEffort, ReasonHolding:
		return true
	}
	return false
}

// Posting is one line of an entry: a positive amount credits the account (its
// balance grows), a negative one debits it.
type Posting struct {
	Account AccountID
	Amount  Money
}

// NewEntry is what Post takes.
type NewEntry struct {
	Key      string // idempotency key, required
	Reason   Reason
	Ref      string // what the entry is about: "auction:12", "order:7", "reservation:3", "grant"
	Memo     string
	Postings []Posting
}

// Entry is a posted journal entry. Entries are never changed or deleted.
type Entry struct {
	ID       int64
	Key      string
	Reason   Reason
	Ref      string
	Memo     string
	At       time.Time
	Reverses int64 // the entry this one reverses, or 0
	Postings []Posting
}

// Ledger posts entries and manages holds on one database.
type Ledger struct {
	db  *store.DB
	tx  *gorm.DB
	now func() time.Time
}

// New returns the ledger on db with the clock now.
func New(db *store.DB, now func() time.Time) *Ledger {
	return &Ledger{db: db, now: func() time.Time { return now().UTC() }}
}

// WithTx returns the same ledger with every call running inside the caller's
// transaction tx (as a savepoint), so that a use case such as settlement commits
// its postings together with its own writes, or none of them.
func (l *Ledger) WithTx(tx *gorm.DB) *Ledger {
	c := *l
	c.tx = tx
	return &c
}

// write runs fn in a transaction: its own, or a savepoint in the caller's.
func (l *Ledger) write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if l.tx != nil {
		return l.tx.Transaction(fn)
	}
	return l.db.Write.WithContext(ctx).Transaction(fn)
}

func (l *Ledger) read(ctx context.Context) *gorm.DB {
	if l.tx != nil {
		return l.tx
	}
	return l.db.Read.WithContext(ctx)
}

// account is a row of ledger_accounts. Balance and Held are kept equal to the sum
// of the account's postings and of its active holds, in the same transaction as
// every change to them.
type account struct {
	ID        AccountID
	Kind      string
	Balance   Money
	Held      Money
	CreatedAt time.Time
}

func (account) TableName() string { return "ledger_accounts" }

type entryRow struct {
	ID          int64
	IdemKey     string
	Fingerprint string
	Reason      Reason
	Ref         string
	Memo        string
	Reverses    *int64
	PostedAt    time.Time
}

func (entryRow) TableName() string { return "ledger_entries" }

type postingRow struct {
	EntryID   int64
	AccountID AccountID
	Amount    Money
}

func (postingRow) TableName() string { return "ledger_postings" }

// OpenAccount creates an account if it does not exist. Accounts are never deleted.
func (l *Ledger) OpenAccount(ctx context.Context, id AccountID) error {
	kind, err := id.kind()
	if err != nil {
		return err
	}
	return l.write(ctx, func(tx *gorm.DB) error {
		return openAccount(tx, id, kind, l.now())
	})
}

func openAccount(tx *gorm.DB, id AccountID, kind string, now time.Time) error {
	return tx.Exec("INSERT INTO ledger_accounts (id, kind, balance, held, created_at) VALUES (?, ?, 0, 0, ?) ON CONFLICT (id) DO NOTHING",
		id, kind, now).Error
}

// Post appends an entry. Its postings must be two or more, each non-zero, to
// distinct existing accounts, and sum to exactly zero; no team's available balance
// may fall below zero. A repeated key with the same content returns the first
// entry; with other content it is ECONFLICT. Returns EINVALID for a malformed
// entry, ENOTFOUND for an unknown account and EUNPROCESSABLE for insufficient funds.
func (l *Ledger) Post(ctx context.Context, e NewEntry) (Entry, error) {
	if err := e.validate(); err != nil {
		return Entry{}, err
	}
	var out Entry
	err := l.grouped(ctx, func(tx *gorm.DB) error {
		var err error
		out, err = l.post(tx, e, nil)
		return err
	})
	return l.retryReplay(ctx, err, out, e.Key, e.fingerprint())
}

// retryReplay handles the race of two first writes with one key: the loser's
// unique-key error becomes the winner's result when the contents agree.
func (l *Ledger) retryReplay(ctx context.Context, err error, out Entry, key, fp string) (Entry, error) {
	if err == nil || !errors.Is(err, gorm.ErrDuplicatedKey) || l.tx != nil {
		return out, err
	}
	var prior entryRow
	if e := l.db.Read.WithContext(ctx).Take(&prior, "idem_key = ?", key).Error; e != nil {
		return Entry{}, err
	}
	if prior.Fingerprint != fp {
		return Entry{}, conflictKey(key)
	}
	return l.load(l.db.Read.WithContext(ctx), prior)
}

func conflictKey(key string) error {
	return clearhouse.Errorf(clearhouse.ECONFLICT, "key: %q was already used for a different write", key)
}

func (e *NewEntry) validate() error {
	e.Key = strings.TrimSpace(e.Key)
	if e.Key == "" || len(e.Key) > 200 {
		return clearhouse.Errorf(clearhouse.EINVALID, "key: an idempotency key of 1 to 200 characters is required")
	}
	if !e.Reason.valid() {
		return clearhouse.Errorf(clearhouse.EINVALID, "reason: %q is not a reason ("+reasonList+")", e.Reason)
	}
	if len(e.Postings) < 2 {
		return clearhouse.Errorf(clearhouse.EINVALID, "postings: an entry needs at least two postings")
	}
	var sum Money
	seen := map[AccountID]bool{}
	for i, p := range e.Postings {
		if _, err := p.Account.kind(); err != nil {
			return err
		}
		if p.Amount == 0 {
			return clearhouse.Errorf(clearhouse.EINVALID, "postings[%d]: amount must not be zero", i)
		}
		if seen[p.Account] {
			return clearhouse.Errorf(clearhouse.EINVALID, "postings[%d]: account %s appears twice", i, p.Account)
		}
		seen[p.Account] = true
		var err error
		if sum, err = sum.Add(p.Amount); err != nil {
			return err
		}
	}
	if sum != 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "postings: amounts sum to %s, not zero", sum)
	}
	return nil
}

// fingerprint identifies an entry's content, for idempotent replays.
func (e NewEntry) fingerprint() string {
	ps := slices.Clone(e.Postings)
	slices.SortFunc(ps, func(a, b Posting) int { return strings.Compare(string(a.Account), string(b.Account)) })
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s", e.Reason, e.Ref, e.Memo)
	for _, p := range ps {
		fmt.Fprintf(h, "\x00%s=%d", p.Account, p.Amount)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// post writes a validated entry inside tx, or returns the prior one for its key.
func (l *Ledger) post(tx *gorm.DB, e NewEntry, reverses *int64) (Entry, error) {
	fp := e.fingerprint()
	var prior entryRow
	err := tx.Take(&prior, "idem_key = ?", e.Key).Error
	if err == nil {
		if prior.Fingerprint != fp {
			return Entry{}, conflictKey(e.Key)
		}
		return l.load(tx, prior)
	} else if !errors.Is(err, gorm.ErrRecordNotFound) {
		return Entry{}, err
	}
	row := entryRow{IdemKey: e.Key, Fingerprint: fp, Reason: e.Reason, Ref: e.Ref, Memo: e.Memo, Reverses: reverses, PostedAt: l.now()}
	if err := tx.Omit("ID").Create(&row).Error; err != nil {
		return Entry{}, err
	}
	// Accounts are updated in one order (by id) by every writer: see LockOrder.
	sorted := slices.Clone(e.Postings)
	slices.SortFunc(sorted, func(a, b Posting) int { return strings.Compare(string(a.Account), string(b.Account)) })
	for _, p := range sorted {
		if err := applyPosting(tx, row.ID, p); err != nil {
			return Entry{}, err
		}
	}
	out := Entry{ID: row.ID, Key: row.IdemKey, Reason: row.Reason, Ref: row.Ref, Memo: row.Memo, At: row.PostedAt, Postings: e.Postings}
	if reverses != nil {
		out.Reverses = *reverses
	}
	return out, nil
}

// applyPosting records one posting and moves its account's balance, refusing to
// take a team's available balance below zero.
func applyPosting(tx *gorm.DB, entryID int64, p Posting) error {
	if err := addToAccount(tx, p.Account, "balance", p.Amount); err != nil {
		return err
	}
	return tx.Create(&postingRow{EntryID: entryID, AccountID: p.Account, Amount: p.Amount}).Error
}

// addToAccount adds delta to an account's balance or held column. The sum is
// checked in Go first (SQLite would silently turn an overflowing integer into a
// float), and the schema's check refuses a team's available balance below zero.
func addToAccount(tx *gorm.DB, acct AccountID, column string, delta Money) error {
	// One statement, guarded so that the sum cannot leave int64 (SQLite would turn
	// it into a float); only when it changes no row is the account read, to say
	// whether it is missing or the sum would overflow.
	var guard string
	var bound int64
	if delta >= 0 {
		guard, bound = column+" <= ?", math.MaxInt64-int64(delta)
	} else {
		guard, bound = column+" >= ?", math.MinInt64-int64(delta)
	}
	n, err := store.Exec(tx, "UPDATE ledger_accounts SET "+column+" = "+column+" + ? WHERE id = ? AND "+guard, delta, acct, bound)
	if err != nil {
		if strings.Contains(err.Error(), "22003") { // PostgreSQL: out of range
			return overflow("adding")
		}
		return fundsError(err, acct)
	}
	if n == 1 {
		return nil
	}
	var cur Money
	err = tx.Raw("SELECT "+column+" FROM ledger_accounts WHERE id = ?", acct).Row().Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		return clearhouse.Errorf(clearhouse.ENOTFOUND, "account: no account %s", acct)
	} else if err != nil {
		return err
	}
	if _, err := cur.Add(delta); err != nil {
		return err
	}
	return fmt.Errorf("ledger: account %s: %s did not change", acct, column)
}

// fundsError turns the schema's refusal of a negative available balance into
// EUNPROCESSABLE; other errors pass through.
func fundsError(err error, acct AccountID) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, gorm.ErrCheckConstraintViolated) || strings.Contains(err.Error(), "CHECK constraint failed") {
		return insufficientFunds(acct)
	}
	return err
}

// insufficientFunds is the error of a debit or hold that the account's available
// balance does not cover.
func insufficientFunds(acct AccountID) error {
	who := string(acct)
	if team, ok := strings.CutPrefix(who, "team:"); ok {
		who = "team " + team
	}
	return clearhouse.Errorf(clearhouse.EUNPROCESSABLE, "insufficient funds: %s does not have that much available (its budget less what is held for open orders and reservations)", who)
}

// load reads an entry's postings.
func (l *Ledger) load(tx *gorm.DB, r entryRow) (Entry, error) {
	var ps []postingRow
	if err := tx.Where("entry_id = ?", r.ID).Order("account_id").Find(&ps).Error; err != nil {
		return Entry{}, err
	}
	e := Entry{ID: r.ID, Key: r.IdemKey, Reason: r.Reason, Ref: r.Ref, Memo: r.Memo, At: r.PostedAt.UTC()}
	if r.Reverses != nil {
		e.Reverses = *r.Reverses
	}
	for _, p := range ps {
		e.Postings = append(e.Postings, Posting{Account: p.AccountID, Amount: p.Amount})
	}
	return e, nil
}

// EntryByKey returns the entry posted with idempotency key key, or ENOTFOUND.
func (l *Ledger) EntryByKey(ctx context.Context, key string) (Entry, error) {
	var r entryRow
	db := l.read(ctx)
	if err := db.Take(&r, "idem_key = ?", key).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return Entry{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "entry: no entry with key %q", key)
	} else if err != nil {
		return Entry{}, err
	}
	return l.load(db, r)
}

// Entry returns one entry or ENOTFOUND.
func (l *Ledger) Entry(ctx context.Context, id int64) (Entry, error) {
	var r entryRow
	db := l.read(ctx)
	if err := db.Take(&r, "id = ?", id).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return Entry{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "entry: no entry %d", id)
	} else if err != nil {
		return Entry{}, err
	}
	return l.load(db, r)
}

// Reverse posts an entry that undoes entry id, pointing at it. An entry is reversed
// at most once (ECONFLICT), and a reversal is itself never reversed; reversing may
// fail with EUNPROCESSABLE when a team has since spent the money.
func (l *Ledger) Reverse(ctx context.Context, key string, id int64, memo string) (Entry, error) {
	var out Entry
	var ne NewEntry
	err := l.write(ctx, func(tx *gorm.DB) error {
		var orig entryRow
		if err := tx.Take(&orig, "id = ?", id).Error; errors.Is(err, gorm.ErrRecordNotFound) {
			return clearhouse.Errorf(clearhouse.ENOTFOUND, "entry: no entry %d", id)
		} else if err != nil {
			return err
		}
		if orig.Reason == ReasonReversal {
			return clearhouse.Errorf(clearhouse.EINVALID, "entry: %d is a reversal; post a new entry instead", id)
		}
		e, err := l.load(tx, orig)
		if err != nil {
			return err
		}
		ne = NewEntry{Key: key, Reason: ReasonReversal, Ref: fmt.Sprintf("entry:%d", id), Memo: memo}
		for _, p := range e.Postings {
			ne.Postings = append(ne.Postings, Posting{Account: p.Account, Amount: -p.Amount})
		}
		if err := ne.validate(); err != nil {
			return err
		}
		var prior entryRow
		if tx.Take(&prior, "reverses = ?", id).Error == nil && prior.IdemKey != ne.Key {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "entry: %d was already reversed by entry %d", id, prior.ID)
		}
		out, err = l.post(tx, ne, &id)
		return err
	})
	if err != nil && ne.Key != "" {
		return l.retryReplay(ctx, err, out, ne.Key, ne.fingerprint())
	}
	return out, err
}
