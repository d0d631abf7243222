package ledger_test

import (
	"math"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
)

func TestParseAndFormat(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want ledger.Money
		out  string
	}{
		{"1,234.56", 1_234_560_000, "1,234.56"},
		{"-12", -12_000_000, "-12.00"},
		{"$5.5", 5_500_000, "5.50"},
		{"0.000001", 1, "0.000001"},
		{"+3", 3_000_000, "3.00"},
		{" 1000000 ", 1_000_000_000_000, "1,000,000.00"},
		{"0.5", 500_000, "0.50"},
		{"1.0", 1_000_000, "1.00"},
		{"-$0.25", -250_000, "-0.25"},
		{"9223372036854.775807", ledger.MaxMoney, "9,223,372,036,854.775807"},
	} {
		got, err := ledger.ParseMoney(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseMoney(%q) = %d, %v; want %d", c.in, got, err, c.want)
			continue
		}
		if got.String() != c.out {
			t.Errorf("(%d).String() = %q, want %q", got, got.String(), c.out)
		}
	}
	if s := ledger.Money(math.MinInt64).String(); s != "-9,223,372,036,854.775808" {
		t.Errorf("MinInt64 formats as %q", s)
	}
}

func TestParseRefusesMalformedAmounts(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "-", "$", "abc", "1.2.3", "1,23", "12,3456", ",123", "1.0000001", "1e6", "9223372036854.775808",
		"99999999999999999999", "--1", "1 000", "0x10", "NaN", ".",
		".5", "1.", "$.5", "-.5", "1,000.", "$1,000.", "$-5", "1,000.5.", "١٢"} {
		if m, err := ledger.ParseMoney(in); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Errorf("ParseMoney(%q) = %d, %v; want EINVALID", in, m, err)
		}
	}
}

func TestCheckedArithmetic(t *testing.T) {
	t.Parallel()
	if _, err := ledger.MaxMoney.Add(1); err == nil {
		t.Error("MaxMoney+1 did not overflow")
	}
	if _, err := ledger.Money(math.MinInt64).Sub(1); err == nil {
		t.Error("MinInt64-1 did not overflow")
	}
	if _, err := ledger.Money(math.MinInt64).Neg(); err == nil {
		t.Error("-MinInt64 did not overflow")
	}
	if _, err := ledger.MaxMoney.MulInt(2); err == nil {
		t.Error("MaxMoney*2 did not overflow")
	}
	if _, err := ledger.Money(-1).MulInt(math.MinInt64); err == nil {
		t.Error("-1*MinInt64 did not overflow")
	}
	if s, err := ledger.Dollar.MulInt(-3); err != nil || s != -3*ledger.Dollar {
		t.Errorf("Dollar*-3 = %d, %v", s, err)
	}
	if s, err := ledger.Money(5).Sub(7); err != nil || s != -2 {
		t.Errorf("5-7 = %d, %v", s, err)
	}
}

func TestFromDollarsRoundsHalfAwayFromZero(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   float64
		want ledger.Money
	}{{1.23, 1_230_000}, {0.0000005, 1}, {-0.0000005, -1}, {0.00000049, 0}, {191.89, 191_890_000}, {-250, -250_000_000}} {
		if got, err := ledger.FromDollars(c.in); err != nil || got != c.want {
			t.Errorf("FromDollars(%v) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e13, -1e13} {
		if _, err := ledger.FromDollars(bad); err == nil {
			t.Errorf("FromDollars(%v) did not fail", bad)
		}
	}
}

func FuzzParseMoney(f *testing.F) {
	for _, s := range []string{"1,234.56", "-0.000001", "$5", "9223372036854.775807", "1,2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ledger.ParseMoney(s)
		if err != nil {
			return
		}
		back, err := ledger.ParseMoney(m.String())
		if err != nil || back != m {
			t.Fatalf("%q parsed to %d, formatted %q, parsed back to %d, %v", s, m, m.String(), back, err)
		}
		if p, err := ledger.ParseMoney(m.Plain()); err != nil || p != m {
			t.Fatalf("Plain %q does not round-trip: %d, %v", m.Plain(), p, err)
		}
	})
}
