package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/identity"
)

// A refused reservation form says "Nothing was saved" when it would have reserved,
// not when it only asked for a quote; the summary counts the problems it lists; a
// task's units too large name the pool's capacity, never an internal bound.
func TestReservationFormMessagesSayWhatHappened(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("ana@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("ana@x.io")
	now := f.clock.Now()
	form := url.Values{"csrf_token": {b.csrf("/reservations")}, "cluster": {"us-east"}, "u.cpu": {"3000000000"}, "count": {"0"}, "duration": {"1h"},
		"arrival": {now.Format("2006-01-02 15:04")}, "deadline": {now.Add(3 * time.Hour).Format("2006-01-02 15:04")}, "value": {"20"}, "action": {"quote"}}
	res, doc := b.post("/reservations", form)
	summary := strings.Join(strings.Fields(doc.Find("[data-testid=form-errors]").Text()), " ")
	if res.StatusCode != http.StatusUnprocessableEntity || strings.Contains(summary, "saved") || !strings.Contains(summary, "these 2 problems") ||
		doc.Find("[data-testid=form-errors] li").Length() != 2 {
		t.Fatalf("a refused quote: %d %q", res.StatusCode, summary)
	}
	if msg := doc.Find(`[data-testid="error-u.cpu"]`).Text(); msg != "pool us-east/cpu has 100 cores in all: one task can use at most that" {
		t.Errorf("too many units: %q", msg)
	}
	if msg := doc.Find(`[data-testid=error-count]`).Text(); msg != "must be at least 1" {
		t.Errorf("no tasks: %q", msg)
	}
	if strings.Contains(doc.Text(), "2,147,483,648") {
		t.Error("the page names the scheduler's internal bound")
	}
	form.Set("action", "reserve")
	_, doc = b.post("/reservations", form)
	if summary := doc.Find("[data-testid=form-errors]").Text(); !strings.Contains(summary, "Nothing was saved") {
		t.Errorf("a refused reservation: %q", summary)
	}
}

// A value that is not positive is the market's to refuse (fleet.Definition.Validate),
// not the form's or the API's own check: a quote names a negative one beside the
// value field in the form's words, and the API names the field; a quote needs no value.
func TestANegativeValueIsRefusedByTheDomainInTheFormsWords(t *testing.T) {
	f := newFixture(t)
	f.openMarket()
	member := f.user("ana@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("ana@x.io")
	now := f.clock.Now()
	form := url.Values{"csrf_token": {b.csrf("/reservations")}, "cluster": {"us-east"}, "u.cpu": {"2"}, "count": {"1"}, "duration": {"1h"},
		"arrival": {now.Format("2006-01-02 15:04")}, "deadline": {now.Add(3 * time.Hour).Format("2006-01-02 15:04")}, "value": {"-3"}, "action": {"quote"}}
	res, doc := b.post("/reservations", form)
	if msg := doc.Find("[data-testid=error-value]").Text(); res.StatusCode != http.StatusUnprocessableEntity || msg != "Give the most it is worth to you, in dollars." {
		t.Errorf("a negative value quoted: %d %q", res.StatusCode, msg)
	}
	form.Set("value", "")
	if res, doc := b.post("/reservations", form); res.StatusCode != http.StatusOK || doc.Find("[data-testid=error-value]").Length() != 0 {
		t.Errorf("a quote without a value: %d %q", res.StatusCode, doc.Find(".field-error").Text())
	}
	tok := f.token(member)
	def := fmt.Sprintf(`{"value": "-1", "requests": [{"configuration": {"us-east/cpu": 1}, "count": 1, "duration": "1h", "arrival": %q, "deadline": %q}]}`,
		now.Format(time.RFC3339), now.Add(2*time.Hour).Format(time.RFC3339))
	if code, body := f.api(tok, "POST", "/api/v1/reservations/quote", def); code != http.StatusBadRequest || errorMessage(body) != "value: must be a positive amount" {
		t.Errorf("the API quoting a negative value: %d %q", code, errorMessage(body))
	}
}
