package templates

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse/moneyfmt"
)

func statusText(status int) string {
	return fmt.Sprintf("%d %s", status, http.StatusText(status))
}

func inputType(t string) string {
	if t == "" {
		return "text"
	}
	return t
}

// problemsText is how many problems a form's summary lists: "this problem",
// "these 2 problems".
func problemsText(n int) string {
	if n == 1 {
		return "this problem"
	}
	return fmt.Sprintf("these %d problems", n)
}

// sortedKeys is a form's fields with errors, in a stable order.
func sortedKeys(errs FieldErrors) []string {
	return slices.Sorted(maps.Keys(errs))
}

// fieldWords names a form field for people: "unit_cost" is "unit cost", "q.cpu"
// and "u.cpu" are "cpu".
func fieldWords(name string) string {
	if _, rest, ok := strings.Cut(name, "."); ok {
		name = rest
	}
	return strings.ReplaceAll(name, "_", " ")
}

func itoa(n int) string { return fmt.Sprint(n) }

func i64(n int64) string { return fmt.Sprint(n) }

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func statusLabel(s string) string {
	switch s {
	case "awaiting_approval":
		return "awaiting approval"
	}
	return s
}

// bidQuery is the step-1 state of a bid form as a query string.
func bidQuery(f BidForm) url.Values {
	q := url.Values{}
	for _, r := range f.Resources {
		if r.Value != "" {
			q.Set("q."+r.Name, r.Value)
		}
	}
	for _, c := range f.Clusters {
		if c.Checked {
			q.Add("cluster", c.ID)
		}
	}
	if f.Shape != "" {
		q.Set("shape", f.Shape)
		q.Set("count", f.Count)
	}
	return q
}

func switchModeURL(f BidForm, mode string) string {
	q := bidQuery(f)
	q.Set("step", "2")
	q.Set("limit_mode", mode)
	return "/orders/new?" + q.Encode()
}

func backURL(f BidForm) string { return "/orders/new?" + bidQuery(f).Encode() }

func joinRuns(runs []string) string {
	switch len(runs) {
	case 0:
		return ""
	case 1:
		return runs[0]
	}
	out := runs[0]
	for _, r := range runs[1:] {
		out += "; " + r
	}
	return out
}

// priceTitle is a price with every digit the float has (at least four decimals),
// for the hover text of a rounded price.
func priceTitle(d float64) string {
	s := strconv.FormatFloat(d, 'f', -1, 64)
	if i := strings.IndexByte(s, '.'); i < 0 {
		s += ".0000"
	} else if n := len(s) - i - 1; n < 4 {
		s += strings.Repeat("0", 4-n)
	}
	if strings.HasPrefix(s, "-") {
		return "-$" + s[1:]
	}
	return "$" + s
}

func closeOrdersText(v CloseConfirm) string {
	more := ""
	if v.More {
		more = " or more"
	}
	if v.Open == 1 && !v.More {
		return "1 order takes part."
	}
	return itoa(v.Open) + more + " orders take part."
}

// unitSuffix is " per GiB" after a price, or nothing without a unit.
func unitSuffix(unit string) string {
	if unit == "" {
		return ""
	}
	return " per " + unit
}

// teamLabel is a team's name with its id, "Search (search)", or the id alone.
func teamLabel(names map[string]string, id string) string {
	if n := names[id]; n != "" && n != id {
		return n + " (" + id + ")"
	}
	return id
}

// count is a quantity or count with thousands separators: "4,000".
func count(n int64) string { return moneyfmt.Count(n) }

// units is a quantity with its pool's unit in the right number: "1 core",
// "1,500 cores", "6,800 GiB", "2 GPUs" (units of bytes and words ending in s stay
// as they are).
func units(n int64, unit string) string { return moneyfmt.Quantity(n, unit) }

// counti is count for an int: "1,200".
func counti(n int) string { return moneyfmt.Count(int64(n)) }

// plural is a count with its noun in the right number: "1 order", "12 orders",
// "1,200 orders".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return moneyfmt.Count(int64(n)) + " " + many
}

func doesOrDo(n int) string {
	if n == 1 {
		return "does"
	}
	return "do"
}

func itsOrTheir(n int) string {
	if n == 1 {
		return "its"
	}
	return "their"
}

// anyIdleWords reports whether any idle account has something to say.
func anyIdleWords(rows []IdleAccountRow) bool {
	for _, r := range rows {
		if r.Words != "" {
			return true
		}
	}
	return false
}

// FormTimePlaceholder is what an empty date-and-time field shows: the pages' one
// format (UTC, 24 h), which the server reads (web.parseFormTime).
const FormTimePlaceholder = "YYYY-MM-DD HH:MM (UTC, 24 h)"
