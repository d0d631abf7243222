package web_test

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// The statement CSV and the journal CSV carry the memos the statement page shows
// ("Payment for order #1"), not the ledger's internal ones.
func TestCSVMemosMatchThePage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	mia := f.user("mia@x.io", identity.RoleMember, "search")
	limit := 50 * ledger.Dollar
	if _, err := f.market.PlaceOrder(ctx, mia, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": 10}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.Close(ctx, 1); err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	b.login("mia@x.io")
	_, doc := b.get("/team")
	var page []string
	doc.Find("[data-testid=statement] td[data-label=Memo]").Each(func(_ int, s *goquery.Selection) { page = append(page, strings.TrimSpace(s.Text())) })
	read := func(path string, tok string) []string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		recs, err := csv.NewReader(strings.NewReader(string(raw))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		col := -1
		for i, h := range recs[0] {
			if h == "memo" {
				col = i
			}
		}
		var memos []string
		for _, r := range recs[1:] {
			if r[col] != "" {
				memos = append(memos, r[col])
			}
		}
		return memos
	}
	got := read("/team/statement.csv", f.token(mia))
	if strings.Join(got, "|") != strings.Join(page, "|") || !strings.Contains(strings.Join(page, "|"), "Payment for order #1") {
		t.Errorf("statement CSV memos %q, page %q", got, page)
	}
	journal := strings.Join(read("/finance/journal.csv", f.token(f.user("fin@x.io", identity.RoleFinance, ""))), "|")
	if !strings.Contains(journal, "Payment for order #1") {
		t.Errorf("journal CSV memos %q do not say what the page says", journal)
	}
}
