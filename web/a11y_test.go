package web_test

import (
	"net/url"
	"testing"

	"github.com/clearhouse/clearhouse/identity"
)

// Every page starts with a link past the navigation, and a form refused for its
// input puts the focus on the first field in error.
func TestSkipLinkAndFocusOnTheFirstError(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("fin@x.io", identity.RoleFinance, "")
	b := f.browser()
	b.login("fin@x.io")
	_, doc := b.get("/finance")
	if href, _ := doc.Find("body > a[data-testid=skip-link]").Attr("href"); href != "#main" || doc.Find("main#main").Length() != 1 {
		t.Fatalf("no skip link to the main content (href %q)", href)
	}
	_, doc = b.post("/finance/grants", url.Values{"csrf_token": {b.csrf("/finance")}, "team": {"search"}, "action": {"grant"}, "amount": {"lots"}})
	focused := doc.Find("[autofocus]")
	if focused.Length() == 0 {
		t.Fatal("a refused form focuses nothing")
	}
	if id, _ := focused.First().Attr("data-testid"); id != "field-amount" {
		t.Errorf("focus on %q, want the field in error (field-amount)", id)
	}
}
