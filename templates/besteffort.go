package templates

import "strings"

func joinComma(s []string) string { return strings.Join(s, ", ") }

// unfairnessLabel names the i-th unfairness of a fairness table: the measured
// one, then each policy's.
func unfairnessLabel(policies []string, i int) string {
	if i == 0 {
		return "Measured"
	}
	return policies[i-1]
}
