package web

import "testing"

func TestGroupDigitsAndWholeNumberMessages(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567", 1 << 31: "2,147,483,648"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
	if _, err := parseWhole("3000000000", 1, 1<<31); err == nil || err.Error() != "must be between 1 and 2,147,483,648" {
		t.Errorf("a number over the bound: %v", err)
	}
	if _, err := parseWhole("99999999999999999999", 1, 1<<31); err == nil || err.Error() != "too large: at most 2,147,483,648" {
		t.Errorf("a number over int64: %v", err)
	}
}
