package templates

import (
	"context"
	"strings"
	"testing"
)

// A rejected form's summary lists every problem it counts, a problem no field
// marks included (the grant form's "correct the field marked below" with nothing
// marked), and says "Nothing was saved" only where something could have been.
func TestErrorSummaryCountsWhatItShows(t *testing.T) {
	var b strings.Builder
	errs := FieldErrors{"amount": "must be positive", "memo_dup": "the same grant was made a minute ago"}
	if err := FormErrors(errs).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if !strings.Contains(html, "Nothing was saved: please correct these 2 problems.") || strings.Count(html, "<li") != 2 ||
		!strings.Contains(html, "the same grant was made a minute ago") || !strings.Contains(html, `href="#f-amount"`) {
		t.Fatalf("form errors: %s", html)
	}
	b.Reset()
	if err := FormErrors(FieldErrors{"unit_cost": "enter an amount"}).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if html := b.String(); !strings.Contains(html, "please correct this problem.") || !strings.Contains(html, "unit cost</a>: enter an amount") {
		t.Fatalf("one error: %s", html)
	}
	b.Reset()
	if err := QueryErrors(FieldErrors{"count": "enter a whole number"}).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if html := b.String(); strings.Contains(html, "saved") || !strings.Contains(html, "enter a whole number") {
		t.Fatalf("a search's errors: %s", html)
	}
}

func TestUnitsTakeTheRightNumber(t *testing.T) {
	for _, c := range []struct {
		n          int64
		unit, want string
	}{{1, "core", "1 core"}, {1500, "core", "1,500 cores"}, {6800, "GiB", "6,800 GiB"}, {2, "GPU", "2 GPUs"}, {0, "core", "0 cores"}} {
		if got := units(c.n, c.unit); got != c.want {
			t.Errorf("units(%d, %q) = %q, want %q", c.n, c.unit, got, c.want)
		}
	}
}
