package moneyfmt_test

import (
	"math"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/ledger"
	. "github.com/clearhouse/clearhouse/moneyfmt"
	"pgregory.net/rapid"
)

func TestCents(t *testing.T) {
	for _, c := range []struct {
		in   int64
		want string
	}{
		{0, "$0.00"}, {1, "$0.00"}, {4_999, "$0.00"}, {5_000, "$0.01"}, {-5_000, "-$0.01"}, {-4_999, "$0.00"},
		{245_488_540_722, "$245,488.54"}, {1_314_921_216, "$1,314.92"}, {250_000_000, "$250.00"},
		{-299_948_330, "-$299.95"}, {999_995_000, "$1,000.00"}, {123_456_789_012_345, "$123,456,789.01"},
		{math.MaxInt64, "$9,223,372,036,854.78"}, {math.MinInt64, "-$9,223,372,036,854.78"},
	} {
		if got := Cents(c.in); got != c.want {
			t.Errorf("Cents(%d) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestExactAndCSV(t *testing.T) {
	for _, c := range []struct {
		in         int64
		exact, csv string
	}{
		{0, "$0.00", "0.000000"}, {1, "$0.000001", "0.000001"}, {-1, "-$0.000001", "-0.000001"},
		{250_000_000, "$250.00", "250.000000"}, {245_488_540_722, "$245,488.540722", "245488.540722"},
		{1_500_000, "$1.50", "1.500000"}, {math.MinInt64, "-$9,223,372,036,854.775808", "-9223372036854.775808"},
	} {
		if got := Exact(c.in); got != c.exact {
			t.Errorf("Exact(%d) = %q, want %q", c.in, got, c.exact)
		}
		if got := CSV(c.in); got != c.csv {
			t.Errorf("CSV(%d) = %q, want %q", c.in, got, c.csv)
		}
	}
}

func TestMagnitude(t *testing.T) {
	if got := Magnitude(-250_000_000); got != "$250.00" {
		t.Errorf("Magnitude(-250) = %q", got)
	}
	if got := Magnitude(math.MinInt64); got != "$9,223,372,036,854.78" {
		t.Errorf("Magnitude(min) = %q", got)
	}
}

func TestPrice(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0.0139, "$0.0139"}, {0, "$0.00"}, {217.39891, "$217.39891"}, {1217.39891, "$1,217.39891"},
		{0.368862, "$0.368862"}, {1.15, "$1.15"}, {0.0000123456, "$0.000012"}, {-0.00001, "-$0.00001"},
		{-0.00000001, "-$0.0000000100"}, {0.0000004, "$0.000000400"}, {0.0000005, "$0.000001"},
		{-0.00006, "-$0.00006"}, {math.NaN(), "—"},
	} {
		if got := Price(c.in); got != c.want {
			t.Errorf("Price(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := UnitPrice(0.0139, "GiB"); got != "$0.0139 per GiB" {
		t.Errorf("UnitPrice = %q", got)
	}
	if got := UnitPrice(2, ""); got != "$2.00 per unit" {
		t.Errorf("UnitPrice without unit = %q", got)
	}
}

// A price is shown to the micro-dollar, so quantity x the shown price is the
// payment at that price, exactly (issue 31: "2,000 GiB x $0.368862 = $737.724").
func TestShownPriceTimesQuantityIsThePayment(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		price := rapid.Int64Range(1, 5_000_000_000).Draw(t, "price micros")
		q := rapid.Int64Range(1, 100_000).Draw(t, "quantity")
		shown := Price(float64(price) / 1e6)
		back, err := Parse(shown)
		if err != nil {
			t.Fatal(err)
		}
		if back != price || PriceMicros(float64(price)/1e6) != price {
			t.Fatalf("price %d micro-dollars shows as %s, which reads back as %d", price, shown, back)
		}
		if pay, err := Parse(Exact(q * price)); err != nil || pay != q*back {
			t.Fatalf("%d x %s = %s, not %d", q, shown, Exact(q*price), q*back)
		}
	})
}

// The exact forms say precisely what the ledger holds: parsing them back gives the
// amount, and Cents is never more than half a cent away from it.
func TestExactRoundTripsAndCentsIsClose(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.Int64Range(-1<<62, 1<<62).Draw(t, "micros")
		for _, s := range []string{Exact(m), CSV(m)} {
			got, err := ledger.ParseMoney(strings.Replace(s, "-$", "-", 1))
			if err != nil || int64(got) != m {
				t.Fatalf("%q parses to %d, %v; want %d", s, got, err, m)
			}
		}
		c, err := ledger.ParseMoney(strings.Replace(Cents(m), "-$", "-", 1))
		if err != nil {
			t.Fatal(err)
		}
		if d := int64(c) - m; d > 5_000 || d < -5_000 {
			t.Fatalf("Cents(%d) = %s is %d micro-dollars away", m, Cents(m), d)
		}
		if !strings.Contains(Cents(m), ".") || len(Cents(m))-strings.Index(Cents(m), ".") != 3 {
			t.Fatalf("Cents(%d) = %s does not have two decimals", m, Cents(m))
		}
	})
}

func TestFromDollars(t *testing.T) {
	if m, ok := FromDollars(2.0000005); !ok || m != 2_000_001 {
		t.Errorf("FromDollars(2.0000005) = %d, %v", m, ok)
	}
	if _, ok := FromDollars(math.Inf(1)); ok {
		t.Error("FromDollars(+Inf) ok")
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 4000: "4,000", -1234567: "-1,234,567",
		1_000_000_000_000: "1,000,000,000,000", math.MinInt64: "-9,223,372,036,854,775,808"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestQuantitySaysItsUnitInTheRightNumber(t *testing.T) {
	for _, c := range []struct {
		n    int64
		unit string
		want string
	}{
		{1, "core", "1 core"}, {4000, "core", "4,000 cores"}, {0, "core", "0 cores"}, {-1, "core", "-1 cores"},
		{2, "GPU", "2 GPUs"}, {1, "GPU", "1 GPU"}, {16, "GiB", "16 GiB"}, {2000, "TiB", "2,000 TiB"},
		{3, "tasks", "3 tasks"}, {7, "", "7"},
	} {
		if got := Quantity(c.n, c.unit); got != c.want {
			t.Errorf("Quantity(%d, %q) = %q, want %q", c.n, c.unit, got, c.want)
		}
	}
}

// Shown amounts read back, and a total in cents with its rounding line adds up to
// the rows in cents as a person adds them (issue 31).
func TestRoundingLineMakesCentsAddUp(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rows := rapid.SliceOfN(rapid.Int64Range(-1e12, 1e12), 1, 40).Draw(t, "rows")
		total := int64(0)
		shown := int64(0)
		for _, r := range rows {
			total += r
			c, err := Parse(Cents(r))
			if err != nil {
				t.Fatal(err)
			}
			shown += c
			if e, err := Parse(Exact(r)); err != nil || e != r {
				t.Fatalf("Exact(%d) = %s reads back as %d, %v", r, Exact(r), e, err)
			}
		}
		shownTotal, _ := Parse(Cents(total))
		if shown+Rounding(total, rows...) != shownTotal {
			t.Fatalf("rows in cents add to %d, rounding %d, total shown %d", shown, Rounding(total, rows...), shownTotal)
		}
		if RoundCents(total) != shownTotal {
			t.Fatalf("RoundCents(%d) = %d, Cents shows %s", total, RoundCents(total), Cents(total))
		}
	})
	for _, bad := range []string{"", "$", "$1.2345678", "abc", "$1,2x3.00", "$1.00 per core"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// RoundCents rounds as Cents shows: the shown amount and the rounded one agree.
func TestRoundCentsIsWhatCentsShows(t *testing.T) {
	for _, c := range []struct{ in, want int64 }{
		{1_234_567, 1_230_000}, {5_000, 10_000}, {4_999, 0}, {-5_000, -10_000}, {-4_999, 0}, {0, 0}, {16_010_000, 16_010_000},
	} {
		got := RoundCents(c.in)
		if got != c.want || Cents(got) != Cents(c.in) {
			t.Errorf("RoundCents(%d) = %d (%s), want %d (%s)", c.in, got, Cents(got), c.want, Cents(c.in))
		}
	}
}
