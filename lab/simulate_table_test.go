package lab

import (
	"strings"
	"testing"
)

// The table rounds dollar amounts as every other figure does, halves away from
// zero with the sign before the "$": its own rule added a half and truncated, so a
// negative revenue of -1,234.60 was shown as "$-1,234", and -123 as "$-,123".
func TestSimulateTableNegativeDollars(t *testing.T) {
	res := SimResult{title: "t", classes: []string{"c"}, UpperBoundValue: 2000}
	res.Workload.Jobs, res.Workload.Slots, res.Workload.RequestedValue = 1, 1, 1234.5
	res.Algorithms = []SimAlgorithm{
		{Name: "a", AcceptedValue: -123, Revenue: -1234.6, Classes: map[string][2]int{"c": {1, 1}}},
		{Name: "b", AcceptedValue: 999_999.5, Revenue: -0.4, Classes: map[string][2]int{"c": {1, 1}}},
	}
	var b strings.Builder
	WriteSimTable(&b, res)
	out := b.String()
	for _, want := range []string{"requested value $1,235,", "upper bound $2,000 ", "-$123", "-$1,235", "$1,000,000", " $0 "} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"$-", "-,"} {
		if strings.Contains(out, bad) {
			t.Errorf("the table has %q:\n%s", bad, out)
		}
	}
}
