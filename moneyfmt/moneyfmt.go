// Package moneyfmt is Clearhouse's one rule for showing money. Amounts are integer
// micro-dollars (the ledger's unit); prices per unit, which the auction engine
// computes in floats, are dollars.
//
//   - Pages show dollars with cents: Cents(245488540722) = "$245,488.54". The exact
//     amount, for a title attribute (hover) and for exports, is Exact: "$245,488.540722".
//   - Exports (CSV) give every money column the same six decimals and no separators:
//     CSV(250000000) = "250.000000".
//   - Prices per unit have four decimals and say their unit: UnitPrice(0.0139, "GiB")
//     = "$0.0139 per GiB"; prices below a hundredth of a cent keep three significant
//     digits, so a price is never shown as $0.0000.
//   - Amounts the simulators compute in float dollars are shown in whole dollars:
//     Dollars(-1234.5) = "-$1,235".
//   - Counts and other figures share the thousands grouping: Count(4000) = "4,000",
//     Decimal(17990.16, 1) = "17,990.2"; a quantity says its unit in the right
//     number: Quantity(4000, "core") = "4,000 cores", Quantity(16, "GiB") = "16 GiB".
//
// This package is the one place where digits are grouped in threes; ledger.Money's
// String is Amount. Rounding is to the nearest shown digit, halves away from zero,
// like the ledger's, and an amount that rounds to zero has no minus sign.
package moneyfmt

import (
	"math"
	"strconv"
	"strings"
)

const perDollar = 1_000_000

// Cents formats micro-dollars as dollars with thousands separators and exactly two
// decimals, rounded half away from zero: "$1,234.57", "-$3.00", "$0.00".
func Cents(micros int64) string {
	neg, u := split(micros)
	c := cents(u)
	return sign(neg && c != "$0.00") + c
}

func cents(u uint64) string {
	c := u/10_000 + (u%10_000)/5_000 // halves away from zero, without overflow
	return "$" + group(c/100) + "." + pad(c%100, 2)
}

// Exact formats micro-dollars with every decimal the amount has (at least two):
// "$1,234.567891", "$250.00", "-$0.000001".
func Exact(micros int64) string {
	neg, u := split(micros)
	return sign(neg) + "$" + exact(u)
}

// Amount is Exact without the dollar sign, as ledger.Money prints itself:
// "1,234.567891", "250.00", "-0.000001".
func Amount(micros int64) string {
	neg, u := split(micros)
	return sign(neg) + exact(u)
}

func exact(u uint64) string {
	frac := strings.TrimRight(pad(u%perDollar, 6), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return group(u/perDollar) + "." + frac
}

// CSV formats micro-dollars for an export column: no "$", no separators, exactly
// six decimals, so every row of a column has the same shape: "1234.560000", "-0.000001".
func CSV(micros int64) string {
	neg, u := split(micros)
	return sign(neg) + strconv.FormatUint(u/perDollar, 10) + "." + pad(u%perDollar, 6)
}

// Magnitude is the amount without its sign, as Cents formats it: offers and
// receipts are shown as what a team gets ("sell for at least $250.00"), never as a
// negative payment.
func Magnitude(micros int64) string {
	_, u := split(micros)
	return cents(u)
}

// Price formats a price per unit in dollars with four decimals and thousands
// separators ("$0.0139", "$1,217.3989"); a price below $0.0001 (but not zero)
// keeps three significant digits ("$0.0000123").
func Price(dollars float64) string {
	if math.IsNaN(dollars) || math.IsInf(dollars, 0) {
		return "—"
	}
	neg := dollars < 0
	a := math.Abs(dollars)
	if a != 0 && a < 0.00005 {
		digits := 3 - 1 - int(math.Floor(math.Log10(a)))
		s := strconv.FormatFloat(a, 'f', digits, 64)
		return sign(neg) + "$" + s
	}
	s := strconv.FormatFloat(a, 'f', 4, 64)
	whole, frac, _ := strings.Cut(s, ".")
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil {
		return sign(neg) + "$" + s
	}
	if neg && strings.Trim(whole+frac, "0") == "" {
		neg = false
	}
	return sign(neg) + "$" + group(w) + "." + frac
}

// UnitPrice is Price with its unit: "$0.0139 per GiB". An empty unit leaves
// "per unit".
func UnitPrice(dollars float64, unit string) string {
	if unit == "" {
		unit = "unit"
	}
	return Price(dollars) + " per " + unit
}

// FromDollars converts a float amount of dollars (an auction payment) to
// micro-dollars, rounding halves away from zero; NaN and infinities give 0 and false.
func FromDollars(d float64) (int64, bool) {
	m := math.Round(d * perDollar)
	if math.IsNaN(m) || m >= math.MaxInt64 || m <= math.MinInt64 {
		return 0, false
	}
	return int64(m), true
}

func split(micros int64) (bool, uint64) {
	if micros < 0 {
		return true, uint64(-(micros + 1)) + 1 // safe for math.MinInt64
	}
	return false, uint64(micros)
}

func sign(neg bool) string {
	if neg {
		return "-"
	}
	return ""
}

func pad(v uint64, n int) string {
	s := strconv.FormatUint(v, 10)
	for len(s) < n {
		s = "0" + s
	}
	return s
}

func group(v uint64) string { return groupDigits(strconv.FormatUint(v, 10)) }

// groupDigits puts a comma between each group of three digits of a string of
// digits, from the right.
func groupDigits(digits string) string {
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Dollars formats an amount of dollars computed in floats (the simulators' values
// and revenues) in whole dollars with thousands separators, rounded half away from
// zero: "$1,235", "-$1,235" (for -1234.5), "$0" (never "-$0"). NaN and infinities
// are "—".
func Dollars(d float64) string {
	s := Decimal(d, 0)
	if s == "—" {
		return s
	}
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		return "-$" + rest
	}
	return "$" + s
}

// Decimal writes x rounded to places decimals, halves away from zero, with
// thousands separators: "17,990.2", "-5.87", "0.00" (never "-0.00"). x is scaled by
// 10^places before rounding, so a figure computed as 123.44999999999999 (100 ×
// 1.2345) shows as 123.5 with one decimal, as it was meant; a value too large to
// scale exactly is written as it is. NaN and infinities are "—".
func Decimal(x float64, places int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	places = max(places, 0)
	p := math.Pow10(places)
	r := math.Round(math.Abs(x)*p) / p
	if math.Abs(x)*p >= 1<<52 { // scaled past a float's integers: the digits are x's own
		r = math.Abs(x)
	}
	whole, frac, _ := strings.Cut(strconv.FormatFloat(r, 'f', places, 64), ".")
	s := groupDigits(whole)
	if frac != "" {
		s += "." + frac
	}
	if x < 0 && r != 0 {
		s = "-" + s
	}
	return s
}

// Count writes a whole number with thousands separators, as people read counts and
// quantities: "4,000", "-1,000,000,000,000".
func Count(n int64) string {
	if n < 0 {
		return "-" + group(uint64(-(n+1))+1)
	}
	return group(uint64(n))
}

// Unit is a pool's unit in the singular (one) or the plural: "core" and "cores",
// "GPU" and "GPUs". Units of bytes ("GiB", "TiB") and words that already end in s stay
// as they are.
func Unit(unit string, one bool) string {
	if one || unit == "" || strings.HasSuffix(unit, "B") || strings.HasSuffix(unit, "s") {
		return unit
	}
	return unit + "s"
}

// Quantity is a quantity of a unit, grouped, with the unit in the right number:
// "1 core", "4,000 cores", "16 GiB", "2 GPUs", "1 task".
func Quantity(n int64, unit string) string {
	return strings.TrimSpace(Count(n) + " " + Unit(unit, n == 1))
}

// RoundCents is micro-dollars rounded to the cent as Cents shows them (halves away
// from zero), still in micro-dollars: RoundCents(1_234_567) = 1_230_000. A table
// whose rows are shown in cents adds its rows' RoundCents to know whether they add
// to its shown total, and shows the difference as a rounding line when not.
func RoundCents(micros int64) int64 {
	neg, u := split(micros)
	c := int64(u/10_000+(u%10_000)/5_000) * 10_000
	if neg {
		return -c
	}
	return c
}
