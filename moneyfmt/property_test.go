package moneyfmt_test

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/ledger"
	. "github.com/clearhouse/clearhouse/moneyfmt"
	"pgregory.net/rapid"
)

// The reference computations below share no code with the package: amounts are
// rounded by math/big (big.Rat.FloatString rounds halves away from zero) or by hand
// on the exact decimal digits strconv writes, and digits are grouped by dividing
// by a thousand.

// refGroup groups a non-negative decimal integer in threes by repeated division.
func refGroup(digits string) string {
	n, ok := new(big.Int).SetString(digits, 10)
	if !ok || n.Sign() < 0 {
		panic("refGroup: " + digits)
	}
	thousand := big.NewInt(1000)
	var parts []string
	for n.Cmp(thousand) >= 0 {
		q, r := new(big.Int).QuoRem(n, thousand, new(big.Int))
		parts = append([]string{fmt.Sprintf("%03d", r.Int64())}, parts...)
		n = q
	}
	return strings.Join(append([]string{n.String()}, parts...), ",")
}

// refRound is micros as dollars rounded to places decimals (halves away from
// zero), grouped, with "-" unless it rounds to zero.
func refRound(micros int64, places int) string {
	s := new(big.Rat).SetFrac(big.NewInt(micros), big.NewInt(1_000_000)).FloatString(places)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	out := refGroup(whole)
	if frac != "" {
		out += "." + frac
	}
	if neg && strings.Trim(whole+frac, "0") != "" {
		out = "-" + out
	}
	return out
}

// refFloat rounds x to places decimals from its exact decimal expansion (strconv
// writes every digit of a float64 at 1,100 places), halves away from zero, by
// adding one at the last kept digit by hand.
func refFloat(x float64, places int) string {
	s := strconv.FormatFloat(math.Abs(x), 'f', 1100, 64)
	whole, frac, _ := strings.Cut(s, ".")
	digits := []byte(whole + frac[:places])
	if frac[places] >= '5' { // the first dropped digit: a half or more rounds up
		i := len(digits) - 1
		for ; i >= 0 && digits[i] == '9'; i-- {
			digits[i] = '0'
		}
		if i < 0 {
			digits = append([]byte{'1'}, digits...)
		} else {
			digits[i]++
		}
	}
	w, f := string(digits[:len(digits)-places]), string(digits[len(digits)-places:])
	out := refGroup(w)
	if places > 0 {
		out += "." + f
	}
	if x < 0 && strings.Trim(string(digits), "0") != "" {
		out = "-" + out
	}
	return out
}

// dollarSign puts "$" after the sign of a formatted number: "-$1,234.57".
func dollarSign(n string) string {
	if rest, ok := strings.CutPrefix(n, "-"); ok {
		return "-$" + rest
	}
	return "$" + n
}

// amounts draws micro-dollars: any int64, or a digit at a place value (one
// micro-dollar to 10^18) plus an offset that lands on, just below or just above a
// rounding boundary of cents (5,000) or whole dollars (500,000), with either sign.
func amounts() *rapid.Generator[int64] {
	atPlace := rapid.Custom(func(t *rapid.T) int64 {
		place := int64(1)
		for range rapid.IntRange(0, 18).Draw(t, "place") {
			place *= 10
		}
		digit := rapid.Int64Range(1, 9).Draw(t, "digit")
		off := rapid.SampledFrom([]int64{0, 1, -1, 4_999, 5_000, 5_001, -4_999, -5_000, -5_001, 499_999, 500_000, 500_001, -500_000}).Draw(t, "offset")
		m := digit*place + off
		if m < 0 { // only for small places; keep the shape, move it up
			m = -m
		}
		if rapid.Bool().Draw(t, "negative") {
			m = -m
		}
		return m
	})
	return rapid.OneOf(atPlace, rapid.Int64(), rapid.Int64Range(-20_000, 20_000))
}

func TestCentsMatchesExactRounding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := amounts().Draw(t, "micros")
		want := dollarSign(refRound(m, 2))
		if got := Cents(m); got != want {
			t.Fatalf("Cents(%d) = %q, want %q", m, got, want)
		}
		if got, mag := Magnitude(m), strings.TrimPrefix(want, "-"); got != mag {
			t.Fatalf("Magnitude(%d) = %q, want %q", m, got, mag)
		}
	})
}

// Exact, Amount and ledger.Money's String lose no digit: six decimals, trailing
// zeros beyond the cents dropped.
func TestExactAmountAndMoneyStringAgree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := amounts().Draw(t, "micros")
		want := refRound(m, 6)
		whole, frac, _ := strings.Cut(want, ".")
		frac = strings.TrimRight(frac, "0")
		for len(frac) < 2 {
			frac += "0"
		}
		want = whole + "." + frac
		if got := Amount(m); got != want {
			t.Fatalf("Amount(%d) = %q, want %q", m, got, want)
		}
		if got := ledger.Money(m).String(); got != want {
			t.Fatalf("Money(%d).String() = %q, want %q", m, got, want)
		}
		if got, w := Exact(m), strings.Replace("$"+want, "$-", "-$", 1); got != w {
			t.Fatalf("Exact(%d) = %q, want %q", m, got, w)
		}
		if got, w := ledger.Money(m).Plain(), strings.ReplaceAll(want, ",", ""); got != w {
			t.Fatalf("Money(%d).Plain() = %q, want %q", m, got, w)
		}
	})
}

func TestCountMatchesBigIntGrouping(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := amounts().Draw(t, "n")
		want := refGroup(new(big.Int).Abs(big.NewInt(n)).String())
		if n < 0 {
			want = "-" + want
		}
		if got := Count(n); got != want {
			t.Fatalf("Count(%d) = %q, want %q", n, got, want)
		}
	})
}

// floats draws dollar amounts: micro-dollar amounts as floats, halves and
// near-halves at every place value, and any finite float64 up to 1e22.
func floats() *rapid.Generator[float64] {
	nearHalf := rapid.Custom(func(t *rapid.T) float64 {
		k := rapid.IntRange(0, 15).Draw(t, "place")
		x := float64(rapid.Int64Range(0, 9).Draw(t, "digit"))*math.Pow10(k) + 0.5
		x = []float64{x, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1))}[rapid.IntRange(0, 2).Draw(t, "which")]
		if rapid.Bool().Draw(t, "negative") {
			x = -x
		}
		return x
	})
	micros := rapid.Custom(func(t *rapid.T) float64 { return float64(amounts().Draw(t, "micros")) / 1e6 })
	return rapid.OneOf(nearHalf, micros, rapid.Float64Range(-1e22, 1e22))
}

// Whole dollars are the float's exact value rounded, halves away from zero.
func TestDollarsRoundHalvesAwayFromZero(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := floats().Draw(t, "x")
		want := dollarSign(refFloat(x, 0))
		if got := Dollars(x); got != want {
			t.Fatalf("Dollars(%v) = %q, want %q", x, got, want)
		}
	})
}

// Decimal scales by 10^places before it rounds (so 100 × 1.2345 shows as 123.5, as
// meant): where the scaled value is exact, as for multiples of 1/8, and for any
// float at whole numbers, it is the exact rounding; everywhere its sign is x's unless
// it shows zero, and it is within half a unit of the last place of x.
func TestDecimalRoundsAtEveryPlace(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		places := rapid.IntRange(0, 6).Draw(t, "places")
		eighths := float64(rapid.Int64Range(-1<<50, 1<<50).Draw(t, "eighths")) / 8
		if places >= 3 {
			if got, want := Decimal(eighths, places), refFloat(eighths, places); got != want {
				t.Fatalf("Decimal(%v, %d) = %q, want %q", eighths, places, got, want)
			}
		}
		x := floats().Draw(t, "x")
		if got, want := Decimal(x, 0), refFloat(x, 0); got != want {
			t.Fatalf("Decimal(%v, 0) = %q, want %q", x, got, want)
		}
		got := Decimal(x, places)
		back, err := strconv.ParseFloat(strings.ReplaceAll(got, ",", ""), 64)
		if err != nil {
			t.Fatalf("Decimal(%v, %d) = %q: %v", x, places, got, err)
		}
		if unit := math.Pow10(-places); math.Abs(back-x) > unit/2+math.Abs(x)*1e-15 {
			t.Fatalf("Decimal(%v, %d) = %q is more than half a unit away", x, places, got)
		}
		if strings.Trim(got, "-0.,") == "" {
			if strings.HasPrefix(got, "-") {
				t.Fatalf("Decimal(%v, %d) = %q: a minus zero", x, places, got)
			}
		} else if strings.HasPrefix(got, "-") != (x < 0) {
			t.Fatalf("Decimal(%v, %d) = %q: wrong sign", x, places, got)
		}
		if neg := Decimal(-x, places); x != 0 && strings.Trim(got, "-0.,") != "" && strings.TrimPrefix(neg, "-") != strings.TrimPrefix(got, "-") {
			t.Fatalf("Decimal(%v) = %q but Decimal(%v) = %q", x, got, -x, neg)
		}
	})
}

// The simulators' old whole-dollar rule added a half and truncated, which rounds a
// negative amount toward zero (-1234.6 became -1,234) and put the minus sign inside
// the groups (-123 became "-,123").
func TestDollarsNegative(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{-1234.6, "-$1,235"}, {-1234.5, "-$1,235"}, {-1234.4, "-$1,234"}, {-123, "-$123"}, {-123456, "-$123,456"},
		{-0.4, "$0"}, {-0.5, "-$1"}, {0.5, "$1"}, {2.5, "$3"}, {999_999.5, "$1,000,000"}, {math.NaN(), "—"},
	} {
		if got := Dollars(c.in); got != c.want {
			t.Errorf("Dollars(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
