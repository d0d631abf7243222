package ledger_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"pgregory.net/rapid"
)

// Every period a date form accepts (from and to between 0000-01-01 and 9999-12-31,
// to inclusive, so its exclusive end may be 10000-01-01) gives a statement and a
// journal holding exactly the entries posted in it, on SQLite as on PostgreSQL.
// SQLite compares its text timestamps, where year 10000 sorted before 2026 and a
// statement to 9999-12-31 came back empty.
func TestEveryAcceptedPeriodGivesItsEntries(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		clock := storetest.NewClock(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC))
		l := newLedger(t, db, clock, 0)
		posted := []time.Time{
			time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(2026, 1, 1, 12, 0, 0, 500_000_000, time.UTC),
			time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
			time.Date(2099, 12, 31, 23, 59, 59, 0, time.UTC),
			time.Date(9999, 12, 31, 12, 0, 0, 0, time.UTC),
		}
		for i, at := range posted {
			clock.Set(at)
			grant(t, l, "g"+string(rune('a'+i)), search, ledger.Money(i+1)*ledger.Dollar)
		}
		first := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
		days := int(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC).Sub(first).Hours() / 24)
		date := func(rt *rapid.T, label string) time.Time {
			// Half the draws land within a day of an entry or an end of the range.
			if rapid.Bool().Draw(rt, label+"-near") {
				at := rapid.SampledFrom(append(posted, first, ledger.Latest)).Draw(rt, label+"-at")
				d := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, rapid.IntRange(-1, 1).Draw(rt, label+"-shift"))
				if d.Before(first) {
					d = first
				}
				if d.After(ledger.Latest) {
					d = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
				}
				return d
			}
			return first.AddDate(0, 0, rapid.IntRange(0, days).Draw(rt, label))
		}
		rapid.Check(t, func(rt *rapid.T) {
			from, last := date(rt, "from"), date(rt, "to")
			if last.Before(from) {
				from, last = last, from
			}
			to := last.AddDate(0, 0, 1) // the form's "to" is inclusive
			var want []time.Time
			var opening ledger.Money
			for i, at := range posted {
				if !at.Before(from) && at.Before(to) {
					want = append(want, at)
				}
				if at.Before(from) {
					opening += ledger.Money(i+1) * ledger.Dollar
				}
			}
			st, err := l.Statement(ctx, search, from, to)
			if err != nil {
				rt.Fatal(err)
			}
			if len(st.Lines) != len(want) || st.Opening != opening {
				rt.Fatalf("%s..%s: %d lines, opening %s; want %d, %s", from.Format(time.DateOnly), last.Format(time.DateOnly), len(st.Lines), st.Opening, len(want), opening)
			}
			for i, line := range st.Lines {
				if !line.At.Equal(want[i]) {
					rt.Fatalf("line %d at %s, want %s", i, line.At, want[i])
				}
			}
			var buf bytes.Buffer
			if err := ledger.WriteStatementCSV(&buf, st); err != nil {
				rt.Fatal(err)
			}
			recs, err := csv.NewReader(&buf).ReadAll()
			if err != nil {
				rt.Fatal(err)
			}
			for _, r := range recs[1:] { // every timestamp is RFC 3339, whole seconds, UTC
				if at, err := time.Parse(time.RFC3339, r[1]); err != nil || at.Nanosecond() != 0 || at.Location() != time.UTC {
					rt.Fatalf("statement CSV time %q: %v", r[1], err)
				}
			}
			buf.Reset()
			if err := l.WriteJournalCSV(ctx, &buf, from, to); err != nil {
				rt.Fatal(err)
			}
			if recs, _ := csv.NewReader(&buf).ReadAll(); len(recs) != 1+2*len(want) {
				rt.Fatalf("%s..%s: journal has %d rows, want %d", from.Format(time.DateOnly), last.Format(time.DateOnly), len(recs)-1, 2*len(want))
			}
		})
	})
}
