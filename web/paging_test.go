package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
)

// Every paged list reads ?limit= and ?before= with one parser: the same bad input
// gets the same 400 and the same message on each, and a good page is served.
func TestPagingRefusesBadInputAlike(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	u := f.user("ana@x.io", identity.RoleMember, "search")
	tok := f.token(u)
	const badBefore = "before: must be an id of 1 or more, as a list's next link gives"
	for _, list := range []struct {
		path string
		most int
	}{{"/api/v1/orders", exchange.MaxPage}, {"/api/v1/reservations", 1000}, {"/api/v1/best-effort", 1000}} {
		badLimit := fmt.Sprintf("limit: must be a whole number from 1 to %d", list.most)
		for _, q := range []string{"limit=0", "limit=-1", "limit=x", "limit=1.5", "limit=" + fmt.Sprint(list.most+1),
			"limit=99999999999999999999", "limit=%201"} {
			code, body := f.api(tok, http.MethodGet, list.path+"?"+q, "")
			if code != http.StatusBadRequest || errorMessage(body) != badLimit {
				t.Errorf("%s?%s: %d %q, want 400 %q", list.path, q, code, errorMessage(body), badLimit)
			}
		}
		for _, q := range []string{"before=0", "before=-3", "before=abc", "before=1e3", "before=99999999999999999999", "limit=5&before=+"} {
			code, body := f.api(tok, http.MethodGet, list.path+"?"+q, "")
			if code != http.StatusBadRequest || errorMessage(body) != badBefore {
				t.Errorf("%s?%s: %d %q, want 400 %q", list.path, q, code, errorMessage(body), badBefore)
			}
		}
		for _, q := range []string{"", "limit=1", "limit=" + fmt.Sprint(list.most), "limit=1&before=5", "before=9223372036854775807"} {
			if code, body := f.api(tok, http.MethodGet, list.path+"?"+q, ""); code != http.StatusOK {
				t.Errorf("%s?%s: %d %v", list.path, q, code, body)
			}
		}
	}
	b := f.browser()
	b.login("ana@x.io")
	res, doc := b.get("/orders?before=abc")
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(doc.Text(), "before") {
		t.Errorf("the orders page with a bad before: %d %q", res.StatusCode, strings.Join(strings.Fields(doc.Find("main").Text()), " "))
	}
	if res, _ := b.get("/orders?before=5"); res.StatusCode != http.StatusOK {
		t.Errorf("the orders page before 5: %d", res.StatusCode)
	}
}
