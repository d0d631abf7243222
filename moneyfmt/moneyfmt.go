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
//
// Rounding is to the nearest shown digit, halves away from zero, like the ledger's.
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
	frac := strings.TrimRight(pad(u%perDollar, 6), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return sign(neg) + "$" + group(u/perDollar) + "." + frac
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

func group(v uint64) string {
	digits := strconv.FormatUint(v, 10)
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Count writes a whole number with thousands separators, as people read counts and
// quantities: "4,000", "-1,000,000,000,000".
func Count(n int64) string {
	if n < 0 {
		return "-" + group(uint64(-(n+1))+1)
	}
	return group(uint64(n))
}
