package templates

import (
	"context"
	"strings"
	"testing"
)

// A core winner's outcome gives its VCG payment and what a lower bid could at most
// save: in the past once settled, conditionally on a preliminary run's outcome.
func TestOutcomeGivesTheVCGPaymentInTheRightTense(t *testing.T) {
	vcg := Money(700_000_000)
	for _, c := range []struct {
		final bool
		want  string
	}{
		{true, "Its VCG payment was $700.00: a lower bid could have saved at most $40.00."},
		{false, "Its VCG payment would be $700.00: a lower bid could save at most $40.00."},
	} {
		var b strings.Builder
		o := Outcome{Bundle: 1, Amount: Money(740_000_000), Final: c.final, Rule: "a core payment", VCG: &vcg}
		if err := OutcomeText(o).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(stripTags(b.String())), " ")
		if !strings.Contains(text, c.want) {
			t.Errorf("final=%v: %q, want it to say %q", c.final, text, c.want)
		}
	}
	var b strings.Builder
	if err := OutcomeText(Outcome{Bundle: 1, Amount: Money(740_000_000), Final: true}).Render(context.Background(), &b); err != nil || strings.Contains(b.String(), "VCG") {
		t.Errorf("an outcome without a VCG payment: %q (%v)", b.String(), err)
	}
}

// stripTags drops HTML tags, leaving the text.
func stripTags(s string) string {
	var out strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			out.WriteRune(r)
		}
	}
	return out.String()
}
