package web

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
)

// fieldOf returns the field a domain error names ("limit: must ..." names limit),
// so a form can show the message beside that field.
func fieldOf(err error) (field, message string) {
	msg := clearhouse.ErrorMessage(err)
	if f, rest, ok := strings.Cut(msg, ": "); ok && !strings.ContainsAny(f, " \"") {
		return f, rest
	}
	return "", msg
}

// formErrors puts a domain error beside its field, or under fallback.
func formErrors(err error, fallback string) templates.FieldErrors {
	f, msg := fieldOf(err)
	if f == "" {
		f = fallback
	}
	return templates.FieldErrors{f: msg}
}

// formWording is where a form shows a domain error about one field, and in what words:
// the domain's message names the API's field and rule ("limits[1]: must be
// positive"); a form shows its own sentence beside its own input.
type formWording struct {
	field, text string
}

// inFormWords moves each error of errs (formErrors) whose field, or the field's name
// before an index ("limits" for "limits[1]"), words lists to the form's field, in the
// form's words. Other errors stay as the domain said them.
func inFormWords(errs templates.FieldErrors, words map[string]formWording) templates.FieldErrors {
	out := templates.FieldErrors{}
	for f, msg := range errs {
		name, _, _ := strings.Cut(f, "[")
		if w, ok := words[name]; ok {
			f, msg = w.field, w.text
		}
		out[f] = msg
	}
	return out
}

// parseMoneyField reads a dollar amount from a form field.
func parseMoneyField(c *gin.Context, name string, errs templates.FieldErrors) ledger.Money {
	raw := strings.TrimSpace(c.PostForm(name))
	if raw == "" {
		errs[name] = "Enter an amount in dollars."
		return 0
	}
	m, err := ledger.ParseMoney(raw)
	if err != nil {
		_, msg := fieldOf(err)
		errs[name] = msg
	}
	return m
}

// parseWhole reads a whole number from a form value.
func parseWhole(raw string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("too large: at most %s", groupDigits(hi))
	}
	if err != nil {
		return 0, fmt.Errorf("enter a whole number")
	}
	if n < lo {
		return 0, fmt.Errorf("must be at least %s", groupDigits(lo))
	}
	if n > hi {
		return 0, fmt.Errorf("must be at most %s", groupDigits(hi))
	}
	return n, nil
}

// groupDigits writes n with thousands separators (2,147,483,648), as people
// read large numbers.
func groupDigits(n int64) string { return moneyfmt.Count(n) }

// countOf is moneyfmt.Quantity: "1 core", "4,000 cores", "16 GiB", "2 GPUs".
func countOf(n int64, unit string) string { return moneyfmt.Quantity(n, unit) }

// userOf returns the signed-in user; routes behind requireRole always have one.
func userOf(c *gin.Context) identity.User {
	u, _ := userFrom(c)
	return u
}

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// parseFormTime reads a date and time (UTC) typed in a form, in the pages' format
// ("2026-11-27 14:00", with or without " UTC") or as a browser's datetime-local
// field sends it ("2026-11-27T14:00").
func parseFormTime(s string) (time.Time, error) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "UTC"))
	t, err := time.ParseInLocation("2006-01-02 15:04", s, time.UTC)
	if err != nil {
		t, err = time.ParseInLocation("2006-01-02T15:04", s, time.UTC)
	}
	return t, err
}

func fmtDuration(d time.Duration) string {
	if d <= 0 {
		return "0m"
	}
	h, m := int(d.Hours()), int(d.Minutes())%60
	if h >= 48 {
		return fmt.Sprintf("%dd %dh", h/24, h%24)
	}
	if h > 0 && m == 0 {
		return fmt.Sprintf("%dh", h)
	}
	if h > 0 {
		return fmt.Sprintf("%dh %dm", h, m)
	}
	return fmt.Sprintf("%dm", max(m, 1))
}

// withAvailable adds to an insufficient-funds error what the team has available
// now, so the message says how much could be spent; other errors pass unchanged.
func (s *Server) withAvailable(ctx context.Context, team string, err error) error {
	msg := clearhouse.ErrorMessage(err)
	if clearhouse.ErrorCode(err) != clearhouse.EUNPROCESSABLE || !strings.Contains(msg, "insufficient funds") || team == "" {
		return err
	}
	b, berr := s.svc.Market.Ledger().Balance(ctx, ledger.TeamAccount(team))
	if berr != nil {
		return err
	}
	return clearhouse.Errorf(clearhouse.EUNPROCESSABLE, "%s. Available now: %s (budget %s less %s held).",
		strings.TrimSuffix(msg, "."), moneyfmt.Cents(int64(b.Available)), moneyfmt.Cents(int64(b.Posted)), moneyfmt.Cents(int64(b.Held)))
}
