package ledger

import (
	"context"
	"database/sql/driver"
	"fmt"
	"math"
	"reflect"

	"gorm.io/gorm"
)

// Violation is one broken invariant found by a Verify: which check, and what was
// found (a few examples at most, so a badly broken database still gives a short
// report).
type Violation struct {
	Check  string
	Detail string
}

func (v Violation) String() string { return v.Check + ": " + v.Detail }

// Check is one invariant as a query that returns the rows breaking it; Describe
// turns each row into a line.
type Check struct {
	Name     string
	Query    string
	Args     []any
	Describe func(row map[string]any) string
}

// maxExamples bounds the rows each check reports.
const maxExamples = 20

// RunChecks runs checks on db and returns a Violation per offending row, at most
// maxExamples per check (the last one says how many more there were).
func RunChecks(ctx context.Context, db *gorm.DB, checks []Check) ([]Violation, error) {
	var out []Violation
	for _, c := range checks {
		var rows []map[string]any
		if err := db.WithContext(ctx).Raw(c.Query, c.Args...).Scan(&rows).Error; err != nil {
			return out, fmt.Errorf("check %q: %w", c.Name, err)
		}
		for i, r := range rows {
			if i == maxExamples {
				out = append(out, Violation{Check: c.Name, Detail: fmt.Sprintf("and %d more", len(rows)-maxExamples)})
				break
			}
			for k, v := range r {
				r[k] = plainValue(v)
			}
			out = append(out, Violation{Check: c.Name, Detail: c.Describe(r)})
		}
	}
	return out, nil
}

// plainValue is a scanned column as Describe should print it: the drivers hand some
// columns (an aggregate such as SUM, whose type the query does not declare) over as
// pointers, or as a driver's own value type, which %v prints as an address, and
// PostgreSQL's numeric sums as floats, which %v prints as 2e+07.
func plainValue(v any) any {
	for {
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Pointer {
			break
		}
		if rv.IsNil() {
			return nil
		}
		v = rv.Elem().Interface()
	}
	switch x := v.(type) {
	case []byte:
		return string(x)
	case float64: // PostgreSQL's SUM of bigints is a numeric, scanned as a float
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	case driver.Valuer:
		if dv, err := x.Value(); err == nil {
			return plainValue(dv)
		}
	}
	return v
}

// Verify checks the ledger's invariants on its database: every entry has two or
// more postings summing to zero; each account's balance equals the sum of its
// postings and its held amount the remaining of its active holds; holds resolve
// consistently; the trial balance is zero; no team's available balance is
// negative. It returns every violation found (none on a sound ledger).
func (l *Ledger) Verify(ctx context.Context) ([]Violation, error) {
	return RunChecks(ctx, l.db.Read, []Check{
		{Name: "entry sums to zero", Query: `SELECT entry_id, SUM(amount) AS total, COUNT(*) AS n FROM ledger_postings
			GROUP BY entry_id HAVING SUM(amount) <> 0 OR COUNT(*) < 2 ORDER BY entry_id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("entry %v has %v postings summing to %v micro-dollars", r["entry_id"], r["n"], r["total"])
			}},
		{Name: "entry has postings", Query: `SELECT e.id FROM ledger_entries e
			WHERE NOT EXISTS (SELECT 1 FROM ledger_postings p WHERE p.entry_id = e.id) ORDER BY e.id`,
			Describe: func(r map[string]any) string { return fmt.Sprintf("entry %v has no postings", r["id"]) }},
		{Name: "balance equals postings", Query: `SELECT a.id, a.balance, COALESCE(p.total, 0) AS posted FROM ledger_accounts a
			LEFT JOIN (SELECT account_id, SUM(amount) AS total FROM ledger_postings GROUP BY account_id) p ON p.account_id = a.id
			WHERE a.balance <> COALESCE(p.total, 0) ORDER BY a.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("account %v has balance %v but its postings sum to %v", r["id"], r["balance"], r["posted"])
			}},
		{Name: "held equals active holds", Query: `SELECT a.id, a.held, COALESCE(h.total, 0) AS holds FROM ledger_accounts a
			LEFT JOIN (SELECT account_id, SUM(amount - captured - released) AS total FROM ledger_holds WHERE status = 'active' GROUP BY account_id) h
			ON h.account_id = a.id WHERE a.held <> COALESCE(h.total, 0) ORDER BY a.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("account %v holds %v but its active holds set aside %v", r["id"], r["held"], r["holds"])
			}},
		{Name: "hold resolved consistently", Query: `SELECT id, status, amount, captured, released FROM ledger_holds
			WHERE captured + released > amount OR (status = 'active') <> (resolved_at IS NULL)
			OR (status <> 'active' AND resolve_key IS NULL AND captured + released <> amount) ORDER BY id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("hold %v is %v with amount %v, captured %v, released %v", r["id"], r["status"], r["amount"], r["captured"], r["released"])
			}},
		{Name: "trial balance is zero", Query: `SELECT SUM(balance) AS total FROM ledger_accounts HAVING SUM(balance) <> 0`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("account balances sum to %v micro-dollars", r["total"])
			}},
		{Name: "available balance not negative", Query: `SELECT id, balance, held FROM ledger_accounts
			WHERE kind = 'team' AND balance - held < 0 ORDER BY id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("account %v has balance %v and holds %v", r["id"], r["balance"], r["held"])
			}},
	})
}
