// Package ledger is Clearhouse's double-entry budget ledger: accounts for each
// team's budget, the operator's treasury and the grants account finance funds
// budgets from; journal entries whose postings sum to exactly zero; holds that set
// money aside for open orders; and the reads finance relies on (balances at any
// instant, statements, the trial balance, CSV exports).
//
// Every write takes an idempotency key: repeating a write with the same key and the
// same content returns the first result; with different content it is refused as a
// conflict. Every write runs in one transaction, so a failed write changes nothing.
//
// Lock order. Every writer that touches several rows takes them in one order, so
// that writers sharing a PostgreSQL database wait for each other but never
// deadlock: holds before accounts; holds by ascending id; accounts by ascending id
// (as strings: "grants" < "team:..." < "treasury"); entries and postings are only
// inserted. Callers that lock rows of their own (the market's auctions and orders,
// the reservation plan) take those first; see exchange's package documentation.
package ledger

import (
	"math"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/moneyfmt"
)

// Money is an amount in micro-dollars (millionths of a dollar). Arithmetic on it is
// checked: an overflow is an error, never a wrap.
type Money int64

// Units of money.
const (
	Microdollar Money = 1
	Cent        Money = 10_000
	Dollar      Money = 1_000_000
)

// MaxMoney is the largest amount: about 9.2 trillion dollars.
const MaxMoney = Money(math.MaxInt64)

func overflow(op string) error {
	// People read the limit in words, not the integer type's range.
	return clearhouse.Errorf(clearhouse.EINVALID, "amount: too large to %s: no amount can be more than about $9.2 trillion", map[string]string{"adding": "add", "subtracting": "subtract", "multiplying": "multiply", "negating": "negate", "parsing": "read", "converting": "convert"}[op])
}

// Add returns m+n, or EINVALID on overflow.
func (m Money) Add(n Money) (Money, error) {
	s := m + n
	if (n > 0 && s < m) || (n < 0 && s > m) {
		return 0, overflow("adding")
	}
	return s, nil
}

// Sub returns m-n, or EINVALID on overflow.
func (m Money) Sub(n Money) (Money, error) {
	if n == math.MinInt64 {
		return 0, overflow("subtracting")
	}
	return m.Add(-n)
}

// Neg returns -m, or EINVALID for the one amount with no negation.
func (m Money) Neg() (Money, error) {
	if m == math.MinInt64 {
		return 0, overflow("negating")
	}
	return -m, nil
}

// MulInt returns m*k, or EINVALID on overflow.
func (m Money) MulInt(k int64) (Money, error) {
	if m == 0 || k == 0 {
		return 0, nil
	}
	p := int64(m) * k
	if p/k != int64(m) || (int64(m) == -1 && k == math.MinInt64) || (k == -1 && int64(m) == math.MinInt64) {
		return 0, overflow("multiplying")
	}
	return Money(p), nil
}

// Dollars returns the amount in dollars as a float, for display and for the
// auction engine, which works in floats.
func (m Money) Dollars() float64 { return float64(m) / float64(Dollar) }

// FromDollars converts dollars to money with the ledger's one rounding rule: to the
// nearest micro-dollar, halves away from zero (2.0000005 → 2.000001, -2.0000005 →
// -2.000001). NaN, infinities and amounts beyond MaxMoney are EINVALID.
func FromDollars(d float64) (Money, error) {
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return 0, clearhouse.Errorf(clearhouse.EINVALID, "amount: %v is not a number of dollars", d)
	}
	micros := math.Round(d * float64(Dollar))
	if micros >= 9.223372036854775e18 || micros <= -9.223372036854775e18 {
		return 0, overflow("converting")
	}
	return Money(int64(micros)), nil
}

// String formats the amount as dollars with thousands separators and at least two
// decimals, more when the amount has them: "1,234.56", "-3.00", "0.000001"
// (moneyfmt.Amount).
func (m Money) String() string { return moneyfmt.Amount(int64(m)) }

// Plain formats the amount like String but without thousands separators, for CSV
// and forms: "1234.56".
func (m Money) Plain() string { return strings.ReplaceAll(m.String(), ",", "") }

// CSV formats the amount for an export column: six decimals always, so a column
// never mixes precisions: "1234.560000" (moneyfmt.CSV).
func (m Money) CSV() string { return moneyfmt.CSV(int64(m)) }

// ParseMoney reads an amount of dollars. It is the one parser of amounts: web forms,
// the JSON API (a string or a number, read from its text) and the command line all
// take exactly these forms (docs/trading.md, "Amounts"): an optional sign, an
// optional "$", digits with optional thousands separators (commas in groups of
// three), and optionally a point followed by one to six decimals: "1,234.56", "-12",
// "$5.5", "-$0.25", "0.000001", "+3". A point needs digits on both sides (".5" is
// refused: write 0.5; "1." too: write 1 or 1.0), so that a truncated amount is not
// read as another. Anything else, and amounts beyond MaxMoney, are EINVALID with a
// message that says why.
func ParseMoney(s string) (Money, error) {
	in := s
	s = strings.TrimSpace(s)
	bad := func(why string) (Money, error) {
		return 0, clearhouse.Errorf(clearhouse.EINVALID, "amount: %q is not an amount of dollars: %s", in, why)
	}
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	s = strings.TrimPrefix(s, "$")
	if s == "" {
		return bad("no digits")
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if strings.Contains(whole, ",") {
		groups := strings.Split(whole, ",")
		if len(groups[0]) == 0 || len(groups[0]) > 3 {
			return bad("misplaced thousands separator")
		}
		for _, g := range groups[1:] {
			if len(g) != 3 {
				return bad("misplaced thousands separator")
			}
		}
		whole = strings.Join(groups, "")
	}
	if whole == "" && (!hasDot || frac == "") {
		return bad("no digits")
	}
	if hasDot && whole == "" {
		return bad("no digit before the point (write 0." + frac + ")")
	}
	if hasDot && frac == "" {
		return bad("no digit after the point (write " + s[:len(s)-1] + " or " + s + "0)")
	}
	if hasDot && len(frac) > 6 {
		return bad("more than six decimals (the smallest amount is $0.000001)")
	}
	for _, part := range []string{whole, frac} {
		for _, c := range part {
			if c < '0' || c > '9' {
				return bad("unexpected character " + strconv.QuoteRune(c))
			}
		}
	}
	var w uint64
	if whole != "" {
		var err error
		w, err = strconv.ParseUint(whole, 10, 64)
		if err != nil || w > uint64(MaxMoney/Dollar) {
			return 0, overflow("parsing")
		}
	}
	f := uint64(0)
	if frac != "" {
		f, _ = strconv.ParseUint((frac + "000000")[:6], 10, 64)
	}
	total := w*uint64(Dollar) + f
	if total > uint64(MaxMoney) {
		return 0, overflow("parsing")
	}
	if neg {
		return -Money(total), nil
	}
	return Money(total), nil
}
