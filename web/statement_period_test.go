package web_test

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// A statement to the last date a date field accepts (9999-12-31) lists the same
// entries as one to 2099-12-31, on the page and in both CSVs, on SQLite and
// PostgreSQL; a period entered backwards is an error beside the field, on the page.
func TestStatementPeriods(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixtureOn(t, db, web.Config{LoginRate: 5, PublicURL: "http://127.0.0.1"})
		f.cpuPool()
		ctx := context.Background()
		if _, err := f.market.Grant(ctx, "g1", "search", 500*ledger.Dollar, "top-up"); err != nil {
			t.Fatal(err)
		}
		f.user("mem@x.io", identity.RoleMember, "search")
		fin := f.token(f.user("fin@x.io", identity.RoleFinance, ""))
		rows := func(path string) int {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+fin)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			raw, _ := io.ReadAll(res.Body)
			recs, err := csv.NewReader(strings.NewReader(string(raw))).ReadAll()
			if res.StatusCode != http.StatusOK || err != nil {
				t.Fatalf("%s: %d %v %s", path, res.StatusCode, err, raw)
			}
			for _, r := range recs {
				if strings.HasPrefix(r[1], "10000") {
					t.Errorf("%s: a row dated %s", path, r[1])
				}
			}
			return len(recs)
		}
		b := f.browser()
		b.login("mem@x.io")
		for _, csvPath := range []string{"/finance/teams/search/statement.csv", "/finance/journal.csv"} {
			near, far := rows(csvPath+"?from=2000-01-01&to=2099-12-31"), rows(csvPath+"?from=2000-01-01&to=9999-12-31")
			if near < 3 || far != near {
				t.Errorf("%s: %d rows to 2099-12-31, %d to 9999-12-31", csvPath, near, far)
			}
		}
		_, doc := b.get("/team?from=2000-01-01&to=9999-12-31")
		if n := doc.Find("[data-testid=statement] tbody tr").Length(); n < 4 { // opening, two entries, closing
			t.Errorf("statement to 9999-12-31 has %d rows", n)
		}

		res, doc := b.get("/team?from=2026-03-01&to=2026-01-01")
		if res.StatusCode != http.StatusOK || doc.Find("[data-testid=period-error]").Length() != 1 {
			t.Fatalf("a backwards period: status %d, no error on the page", res.StatusCode)
		}
		field := doc.Find("#f-to").Closest(".field")
		if !field.HasClass("has-error") || !strings.Contains(field.Text(), "before the start date") {
			t.Errorf("the end date is not marked: %q", field.Text())
		}
		if v, _ := doc.Find("#f-from").Attr("value"); v != "2026-03-01" {
			t.Errorf("the start date as entered was lost: %q", v)
		}
		if doc.Find("[data-testid=statement]").Length() != 1 {
			t.Error("no statement beside the error")
		}
	})
}
