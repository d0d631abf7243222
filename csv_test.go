package clearhouse_test

import (
	"testing"

	"github.com/clearhouse/clearhouse"
)

func TestCSVTextNeutralizesFormulas(t *testing.T) {
	cases := map[string]string{
		`=HYPERLINK("http://evil.example","x")`: `'=HYPERLINK("http://evil.example","x")`,
		"+1+1":                                  "'+1+1",
		"-2+3":                                  "'-2+3",
		"@SUM(A1:A9)":                           "'@SUM(A1:A9)",
		"\t=1":                                  "'\t=1",
		"\r=1":                                  "'\r=1",
		"grant for Q3":                          "grant for Q3",
		"a=b":                                   "a=b",
		"":                                      "",
		"'quoted":                               "'quoted",
	}
	for in, want := range cases {
		if got := clearhouse.CSVText(in); got != want {
			t.Errorf("CSVText(%q) = %q, want %q", in, got, want)
		}
	}
}
