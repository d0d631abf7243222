package ledger

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/clearhouse/clearhouse"
	"gorm.io/gorm"
)

// Balance is an account's money now: Posted is the sum of its postings, Held the
// sum of its active holds, Available = Posted - Held.
type Balance struct {
	Posted, Held, Available Money
}

// Balance returns an account's balance now, or ENOTFOUND.
func (l *Ledger) Balance(ctx context.Context, acct AccountID) (Balance, error) {
	var a account
	if err := l.read(ctx).Take(&a, "id = ?", acct).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return Balance{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "account: no account %s", acct)
	} else if err != nil {
		return Balance{}, err
	}
	return Balance{Posted: a.Balance, Held: a.Held, Available: a.Balance - a.Held}, nil
}

// BalanceAt returns an account's posted balance at instant t: the sum of the
// postings of entries posted at or before t.
func (l *Ledger) BalanceAt(ctx context.Context, acct AccountID, t time.Time) (Money, error) {
	return sumBefore(l.read(ctx), acct, t.UTC(), true)
}

// Latest is the last instant a query bound may name: the end of year 9999, the
// last year a date form accepts and RFC 3339 can write. SQLite keeps times as text,
// where "10000-01-01" sorts before "2026-01-01", so a later bound (the exclusive end
// of a period ending 9999-12-31) would find nothing; every bound goes through
// bound, which clamps it here, and PostgreSQL gives the same rows.
var Latest = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)

// bound is t in UTC, no later than Latest.
func bound(t time.Time) time.Time {
	if t = t.UTC(); t.After(Latest) {
		return Latest
	}
	return t
}

// lastInstant is a period's exclusive end as a closing balance's date: the end
// itself, or Latest when the end lies past what RFC 3339 can write.
func lastInstant(end time.Time) time.Time {
	if end.After(Latest) {
		return Latest
	}
	return end
}

func sumBefore(db *gorm.DB, acct AccountID, t time.Time, inclusive bool) (Money, error) {
	op := "<"
	if inclusive {
		op = "<="
	}
	var sum int64
	err := db.Raw(`SELECT COALESCE(SUM(p.amount), 0) FROM ledger_postings p JOIN ledger_entries e ON e.id = p.entry_id
		WHERE p.account_id = ? AND e.posted_at `+op+` ?`, acct, bound(t)).Scan(&sum).Error
	return Money(sum), err
}

// StatementLine is one entry on a statement, with the account's running balance.
type StatementLine struct {
	EntryID  int64
	At       time.Time
	Reason   Reason
	Ref      string
	Memo     string
	Amount   Money
	Running  Money
	Reverses int64
}

// Statement is an account's activity in [From, To): the opening balance, each entry
// with the running balance, and the closing balance.
type Statement struct {
	Account          AccountID
	From, To         time.Time
	Opening, Closing Money
	Lines            []StatementLine
}

// Statement returns an account's statement for [from, to). Returns ENOTFOUND for
// an unknown account and EINVALID when to is before from.
func (l *Ledger) Statement(ctx context.Context, acct AccountID, from, to time.Time) (Statement, error) {
	from, to = from.UTC(), to.UTC()
	if to.Before(from) {
		return Statement{}, clearhouse.Errorf(clearhouse.EINVALID, "to: the period ends before it starts")
	}
	db := l.read(ctx)
	if err := db.Take(&account{}, "id = ?", acct).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return Statement{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "account: no account %s", acct)
	} else if err != nil {
		return Statement{}, err
	}
	opening, err := sumBefore(db, acct, from, false)
	if err != nil {
		return Statement{}, err
	}
	var rows []struct {
		EntryID  int64
		PostedAt time.Time
		Reason   Reason
		Ref      string
		Memo     string
		Reverses *int64
		Amount   Money
	}
	err = db.Raw(`SELECT e.id AS entry_id, e.posted_at, e.reason, e.ref, e.memo, e.reverses, p.amount
		FROM ledger_postings p JOIN ledger_entries e ON e.id = p.entry_id
		WHERE p.account_id = ? AND e.posted_at >= ? AND e.posted_at < ? ORDER BY e.posted_at, e.id`, acct, bound(from), bound(to)).Scan(&rows).Error
	if err != nil {
		return Statement{}, err
	}
	s := Statement{Account: acct, From: from, To: to, Opening: opening, Closing: opening}
	for _, r := range rows {
		if s.Closing, err = s.Closing.Add(r.Amount); err != nil {
			return Statement{}, err
		}
		line := StatementLine{EntryID: r.EntryID, At: r.PostedAt.UTC(), Reason: r.Reason, Ref: r.Ref, Memo: r.Memo, Amount: r.Amount, Running: s.Closing}
		if r.Reverses != nil {
			line.Reverses = *r.Reverses
		}
		s.Lines = append(s.Lines, line)
	}
	return s, nil
}

// AccountBalance is one line of the trial balance.
type AccountBalance struct {
	Account AccountID
	Kind    string
	Posted  Money
	Held    Money
}

// TrialBalance lists every account's posted balance; they sum to zero.
func (l *Ledger) TrialBalance(ctx context.Context) ([]AccountBalance, error) {
	var as []account
	if err := l.read(ctx).Order("kind, id").Find(&as).Error; err != nil {
		return nil, err
	}
	out := make([]AccountBalance, len(as))
	for i, a := range as {
		out[i] = AccountBalance{Account: a.ID, Kind: a.Kind, Posted: a.Balance, Held: a.Held}
	}
	return out, nil
}

// StatementCSVHeader is the stable header of statement CSV exports.
var StatementCSVHeader = []string{"entry_id", "posted_at", "reason", "reference", "memo", "amount", "balance", "reverses"}

// WriteStatementCSV writes a statement as CSV: the header, an "opening" line, one
// line per entry, and a "closing" line. Amounts are plain dollars ("-1234.56"); the
// text cells (reason, reference, memo, account) go through clearhouse.CSVText so that
// none is read as a spreadsheet formula.
func WriteStatementCSV(w io.Writer, s Statement) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(StatementCSVHeader)
	_ = cw.Write([]string{"", clearhouse.CSVTime(s.From), "opening", clearhouse.CSVText(string(s.Account)), "", "", s.Opening.CSV(), ""})
	for _, l := range s.Lines {
		rev := ""
		if l.Reverses != 0 {
			rev = strconv.FormatInt(l.Reverses, 10)
		}
		_ = cw.Write([]string{strconv.FormatInt(l.EntryID, 10), clearhouse.CSVTime(l.At), clearhouse.CSVText(string(l.Reason)),
			clearhouse.CSVText(l.Ref), clearhouse.CSVText(l.Memo), l.Amount.CSV(), l.Running.CSV(), rev})
	}
	_ = cw.Write([]string{"", clearhouse.CSVTime(lastInstant(s.To)), "closing", clearhouse.CSVText(string(s.Account)), "", "", s.Closing.CSV(), ""})
	cw.Flush()
	return cw.Error()
}

// JournalCSVHeader is the stable header of journal CSV exports: one line per
// posting.
var JournalCSVHeader = []string{"entry_id", "posted_at", "key", "reason", "reference", "memo", "reverses", "account", "amount"}

// WriteJournalCSV writes every posting of entries posted in [from, to) as CSV, in
// posting order. Amounts are plain dollars; the text cells (key, reason, reference,
// memo, account) go through clearhouse.CSVText.
func (l *Ledger) WriteJournalCSV(ctx context.Context, w io.Writer, from, to time.Time) error {
	return l.WriteJournalCSVWords(ctx, w, from, to, nil)
}

// MemoWords turns an entry's stored reference and memo into the memo people read
// on pages, so an export can say the same; nil keeps the stored memo.
type MemoWords func(ref, memo string) string

// WriteJournalCSVWords is WriteJournalCSV with each memo as words gives it.
func (l *Ledger) WriteJournalCSVWords(ctx context.Context, w io.Writer, from, to time.Time, words MemoWords) error {
	rows, err := l.read(ctx).Raw(`SELECT e.id, e.posted_at, e.idem_key, e.reason, e.ref, e.memo, e.reverses, p.account_id, p.amount
		FROM ledger_entries e JOIN ledger_postings p ON p.entry_id = e.id
		WHERE e.posted_at >= ? AND e.posted_at < ? ORDER BY e.posted_at, e.id, p.account_id`, bound(from), bound(to)).Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	cw := csv.NewWriter(w)
	_ = cw.Write(JournalCSVHeader)
	for rows.Next() {
		var (
			id       int64
			at       time.Time
			key      string
			reason   string
			ref      string
			memo     string
			reverses *int64
			acct     string
			amount   int64
		)
		if err := rows.Scan(&id, &at, &key, &reason, &ref, &memo, &reverses, &acct, &amount); err != nil {
			return err
		}
		rev := ""
		if reverses != nil {
			rev = strconv.FormatInt(*reverses, 10)
		}
		if words != nil {
			memo = words(ref, memo)
		}
		_ = cw.Write([]string{strconv.FormatInt(id, 10), clearhouse.CSVTime(at), clearhouse.CSVText(key), clearhouse.CSVText(reason),
			clearhouse.CSVText(ref), clearhouse.CSVText(memo), rev, clearhouse.CSVText(acct), Money(amount).CSV()})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}
