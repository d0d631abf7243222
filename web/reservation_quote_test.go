package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
)

// quoteOf is the quote token a quoted reservation form carries ("" when none).
func quoteOf(doc *goquery.Document) string {
	v, _ := doc.Find("[data-testid=reservation-form] input[name=quote]").Attr("value")
	return v
}

// quote asks for a quote of form (whatever its action) and returns its token.
func quote(t *testing.T, b *browser, form url.Values) string {
	t.Helper()
	q := url.Values{}
	for k, v := range form {
		q[k] = v
	}
	q.Set("action", "quote")
	q.Del("quote")
	res, doc := b.post("/reservations", q)
	tok := quoteOf(doc)
	if res.StatusCode != http.StatusOK || tok == "" {
		t.Fatalf("quote: %d %q", res.StatusCode, doc.Find("[data-testid=quote]").Text())
	}
	return tok
}

// Reserve goes ahead only for the request quoted, in a fresh quote; anything
// else saves nothing, says why in plain words, keeps the form as typed and
// quotes it afresh. The value may change after the quote (it does not change
// the price). After reserving, the form keeps its values.
func TestReserveNeedsAFreshQuoteOfTheSameRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("ana@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("ana@x.io")
	_, doc := b.get("/reservations")
	if _, disabled := doc.Find("[data-testid=reservation-submit]").Attr("disabled"); !disabled {
		t.Error("Reserve is enabled before any quote")
	}
	now := f.clock.Now()
	form := url.Values{"csrf_token": {b.csrf("/reservations")}, "cluster": {"us-east"}, "u.cpu": {"2"}, "count": {"5"}, "duration": {"1h"},
		"arrival": {now.Format("2006-01-02T15:04")}, "deadline": {now.Add(3 * time.Hour).Format("2006-01-02T15:04")}, "value": {"20"}, "action": {"reserve"}}
	saved := func() int {
		vs, err := f.plan.Reservations(context.Background(), fleet.ReservationFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return len(vs)
	}
	refused := func(what string, form url.Values, want string) {
		t.Helper()
		res, doc := b.post("/reservations", form)
		flash := doc.Find("[data-testid=flash]").Text()
		if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(flash, "Nothing was saved") || !strings.Contains(flash, want) {
			t.Fatalf("%s: %d %q", what, res.StatusCode, flash)
		}
		if n := saved(); n != 0 {
			t.Fatalf("%s saved %d reservations", what, n)
		}
		if v, _ := doc.Find("[data-testid=field-count]").Attr("value"); v != form.Get("count") {
			t.Errorf("%s: the form lost the count typed: %q", what, v)
		}
		if quoteOf(doc) == "" || doc.Find("[data-testid=quote]").Length() != 1 {
			t.Errorf("%s: no fresh quote of the values in the form", what)
		}
		if _, disabled := doc.Find("[data-testid=reservation-submit]").Attr("disabled"); disabled {
			t.Errorf("%s: Reserve is disabled beside a quote", what)
		}
	}
	refused("no quote", form, "get a quote first")

	tok := quote(t, b, form)
	changed := url.Values{}
	for k, v := range form {
		changed[k] = v
	}
	changed.Set("quote", tok)
	changed.Set("count", "6")
	refused("a changed count", changed, "changed after the quote")
	changed.Set("count", "5")
	changed.Set("u.cpu", "3")
	refused("a changed configuration", changed, "changed after the quote")
	changed.Set("u.cpu", "2")
	changed.Set("quote", "1."+strings.Repeat("A", 43))
	refused("a made-up quote", changed, "changed after the quote")

	f.clock.Advance(16 * time.Minute)
	form.Set("quote", tok)
	refused("an old quote", form, "more than 15 minutes old")

	form.Set("quote", quote(t, b, form))
	form.Set("value", "25") // not part of the quote
	res, _ := b.post("/reservations", form)
	if res.StatusCode != http.StatusSeeOther || saved() != 1 {
		t.Fatalf("reserve after a quote: %d, %d saved", res.StatusCode, saved())
	}
	res, doc = b.get(res.Header.Get("Location"))
	if res.StatusCode != http.StatusOK || !strings.Contains(doc.Find("[data-testid=flash]").Text(), "accepted") {
		t.Fatalf("after reserving: %d %q", res.StatusCode, doc.Find("[data-testid=flash]").Text())
	}
	for field, want := range map[string]string{"u.cpu": "2", "count": "5", "duration": "1h", "value": "25", "arrival": form.Get("arrival")} {
		if v, _ := doc.Find("[data-testid=\"field-" + field + "\"]").Attr("value"); v != want {
			t.Errorf("after reserving, %s is %q, want %q", field, v, want)
		}
	}
	if doc.Find("[data-testid=form-errors]").Length() != 0 || quoteOf(doc) != "" {
		t.Error("the form after reserving shows errors or an old quote")
	}
}

// A quote made in one session does not let another session reserve.
func TestAQuoteIsGoodOnlyInItsSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("ana@x.io", identity.RoleMember, "search")
	a, b := f.browser(), f.browser()
	a.login("ana@x.io")
	b.login("ana@x.io")
	now := f.clock.Now()
	form := url.Values{"csrf_token": {a.csrf("/reservations")}, "cluster": {"us-east"}, "u.cpu": {"2"}, "count": {"5"}, "duration": {"1h"},
		"arrival": {now.Format("2006-01-02T15:04")}, "deadline": {now.Add(3 * time.Hour).Format("2006-01-02T15:04")}, "value": {"20"}, "action": {"reserve"}}
	form.Set("quote", quote(t, a, form))
	form.Set("csrf_token", b.csrf("/reservations"))
	if res, _ := b.post("/reservations", form); res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("another session's quote: %d", res.StatusCode)
	}
}
