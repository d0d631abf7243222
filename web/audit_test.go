package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// TestAuditPageShowsAGrantWithWhoAndFromWhere: a grant through the finance form is
// one row of the trail with the finance person, their address and the balance before
// and after; a refused grant adds none; a memo with markup is shown as text; the
// exports carry the same row.
func TestAuditPageShowsAGrantWithWhoAndFromWhere(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixtureOn(t, db, web.Config{LoginRate: 5, PublicURL: "http://127.0.0.1"})
		f.cpuPool()
		fin := f.user("fin@x.io", identity.RoleFinance, "")
		b := f.browser()
		b.login("fin@x.io")
		tok := b.csrf("/finance")
		formToken := func() string {
			_, doc := b.get("/finance")
			v, _ := doc.Find(`[data-testid=grant-form] input[name=form_token]`).Attr("value")
			return v
		}
		res, _ := b.post("/finance/grants", url.Values{"csrf_token": {tok}, "form_token": {formToken()}, "team": {"search"}, "amount": {"-100"}})
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("a negative grant: %d", res.StatusCode)
		}
		res, _ = b.post("/finance/grants", url.Values{"csrf_token": {tok}, "form_token": {formToken()}, "team": {"search"}, "amount": {"2,500"}, "memo": {"<b>Q3</b>"}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("grant: %d", res.StatusCode)
		}
		res, doc := b.get("/audit?action=budget.grant")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("/audit: %d", res.StatusCode)
		}
		rows := doc.Find("[data-testid=audit-rows] tbody tr")
		if rows.Length() != 1 {
			t.Fatalf("%d budget.grant rows; want the one grant (the refused one records nothing)", rows.Length())
		}
		actor := rows.Find("[data-testid=actor]").Text()
		if !strings.Contains(actor, "fin@x.io") || !strings.Contains(rows.Text(), "127.0.0.1") {
			t.Errorf("grant row: actor %q, row %q; want fin@x.io from 127.0.0.1", actor, rows.Text())
		}
		if got := rows.Find("[data-testid=object]").Text(); got != "team:search" {
			t.Errorf("object = %q", got)
		}
		if got := rows.Find("[data-testid=before]").Text(); got != `{"balance":1000000000}` {
			t.Errorf("before = %q", got)
		}
		after := rows.Find("[data-testid=after]").Text()
		if !strings.Contains(after, `"balance":3500000000`) || !strings.Contains(after, `<b>Q3</b>`) {
			t.Errorf("after = %q", after)
		}
		if rows.Find("b").Length() != 0 {
			t.Error("the memo's markup reached the page as markup")
		}
		// The other filters and a bad date.
		if _, doc := b.get("/audit?actor=nobody@"); doc.Find("[data-testid=audit-none]").Length() != 1 {
			t.Error("an actor filter that matches nobody still lists rows")
		}
		if res, doc := b.get("/audit?from=yesterday"); res.StatusCode != http.StatusUnprocessableEntity || doc.Find("[data-testid=audit-error]").Length() != 1 {
			t.Errorf("a bad date: %d", res.StatusCode)
		}
		res, body := rawGet(t, b, "/audit.csv?action=budget.")
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(body, strings.Join(audit.CSVHeader, ",")+"\n") || strings.Count(body, "\n") != 2 {
			t.Errorf("audit.csv: %d\n%s", res.StatusCode, body)
		}
		res, body = rawGet(t, b, "/audit.jsonl?action=budget.grant")
		var row audit.JSONRow
		if err := json.Unmarshal([]byte(strings.TrimSpace(body)), &row); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("audit.jsonl: %d %v\n%s", res.StatusCode, err, body)
		}
		if row.ActorUserID == nil || *row.ActorUserID != fin.ID || row.Address != "127.0.0.1" || row.Action != "budget.grant" {
			t.Errorf("JSON line = %+v", row)
		}
	})
}

// rawGet fetches path as b and returns the body as text (an export, not a page).
func rawGet(t *testing.T, b *browser, path string) (*http.Response, string) {
	t.Helper()
	res, err := b.c.Get(b.f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(raw)
}
