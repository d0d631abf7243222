package web_test

import (
	"context"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// A limit may be a decimal string or a JSON number; either is read exactly from
// its text (0.1 + 0.2 is 300,000 micro-dollars, not 300,000.00000000004), and the
// answer gives it back as a string.
func TestAPIAcceptsMoneyAsStringOrNumberExactly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	tok := f.token(f.user("owner@x.io", identity.RoleOwner, "search"))
	for body, want := range map[string]ledger.Money{
		`{"bundles":[{"us-east/cpu":1}],"limit":"0.3"}`:                          300_000,
		`{"bundles":[{"us-east/cpu":1}],"limit":0.3}`:                            300_000,
		`{"bundles":[{"us-east/cpu":1}],"limit":123.456789}`:                     123_456_789,
		`{"bundles":[{"us-east/cpu":1}],"limit":12}`:                             12 * ledger.Dollar,
		`{"bundles":[{"us-east/cpu":1},{"us-east/cpu":2}],"limits":[0.1,"0.2"]}`: 200_000,
	} {
		code, m := f.api(tok, "POST", "/api/v1/orders", body)
		if code != 201 {
			t.Fatalf("%s: %d %v", body, code, m)
		}
		var got string
		if l, ok := m["limit"].(string); ok {
			got = l
		} else if ls, ok := m["limits"].([]any); ok {
			got, _ = ls[len(ls)-1].(string)
		} else {
			t.Fatalf("%s: limit answered as %T %v", body, m["limit"], m)
		}
		if p, err := ledger.ParseMoney(got); err != nil || p != want {
			t.Errorf("%s: limit answered %q, want %s", body, got, want)
		}
	}
	for body, want := range map[string]string{
		`{"bundles":[{"us-east/cpu":1}],"limit":0.0000001}`: "limit: ",
		`{"bundles":[{"us-east/cpu":1}],"limit":1e3}`:       "limit: ",
		`{"bundles":[{"us-east/cpu":1}],"limit":true}`:      "body.limit: must be an amount of dollars",
		`{"bundles":[{"us-east/cpu":1}],"limit":[1]}`:       "body.limit: must be an amount of dollars",
		`{"bundles":[{"us-east/cpu":1}],"limits":[1,null]}`: "an amount of dollars",
	} {
		code, m := f.api(tok, "POST", "/api/v1/orders", body)
		if code != 400 || !strings.Contains(strings.ToLower(flatten(m)), strings.ToLower(want)) {
			t.Errorf("%s: %d %v, want 400 naming %q", body, code, m, want)
		}
	}
	ctx := context.Background()
	if _, err := f.market.Preview(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Every price in the market and an auction's answer is a decimal string.
	decimal := regexp.MustCompile(`^-?\d+(\.\d{1,6})?$`)
	_, mkt := f.api(tok, "GET", "/api/v1/market", "")
	pools, _ := mkt["pools"].([]any)
	if len(pools) == 0 {
		t.Fatalf("market: %v", mkt)
	}
	for _, p := range pools {
		pm := p.(map[string]any)
		for _, k := range []string{"reserve_price", "price", "unit_cost"} {
			if s, ok := pm[k].(string); !ok || !decimal.MatchString(s) {
				t.Errorf("market %s %s = %#v, want a decimal string", pm["id"], k, pm[k])
			}
		}
	}
	_, au := f.api(tok, "GET", "/api/v1/auctions/1", "")
	for _, p := range au["pools"].([]any) {
		pm := p.(map[string]any)
		for _, k := range []string{"reserve_price", "price"} {
			if s, ok := pm[k].(string); !ok || !decimal.MatchString(s) {
				t.Errorf("auction pool %s %s = %#v, want a decimal string", pm["pool"], k, pm[k])
			}
		}
	}
	_, orders := f.api(tok, "GET", "/api/v1/orders", "")
	for _, o := range orders["orders"].([]any) {
		if pr, ok := o.(map[string]any)["provisional"].(map[string]any); ok {
			if s, ok := pr["payment"].(string); !ok || !decimal.MatchString(s) {
				t.Errorf("provisional payment %#v, want a decimal string", pr["payment"])
			}
		}
	}
}

// flatten is a decoded JSON answer as text, for looking for words in it.
func flatten(m map[string]any) string {
	var b strings.Builder
	for k, v := range m {
		b.WriteString(k + "=")
		switch x := v.(type) {
		case string:
			b.WriteString(x)
		case map[string]any:
			b.WriteString(flatten(x))
		}
		b.WriteString(" ")
	}
	return b.String()
}

// moneyForms are the amounts the surfaces must treat alike (docs/trading.md,
// "Amounts"), and whether they are amounts.
var moneyForms = map[string]bool{
	"1000": true, "1,000.00": true, "$1": true, "$1,000.5": true, "-$0.25": true, "0.5": true, "+3": true, "12.000001": true,
	".5": false, "1.": false, "$.5": false, "1,00": false, "1e3": false, "1.0000001": false, "$-5": false, "1 000": false, "": false,
}

// Every surface takes the same amounts, through the one parser: the JSON API (a
// string) and a web form refuse as "not an amount of dollars" exactly what
// ledger.ParseMoney refuses ("$1", "1,000.00" are amounts; ".5", "1." are not).
// What the market then makes of an amount (funds, sign) is another matter.
func TestEverySurfaceTakesTheSameAmounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	tok := f.token(f.user("owner@x.io", identity.RoleOwner, "search"))
	b := f.browser()
	b.login("owner@x.io")
	csrf := b.csrf("/team")
	const notAmount = "is not an amount of dollars"
	for in, ok := range moneyForms {
		if _, err := ledger.ParseMoney(in); (err == nil) != ok {
			t.Errorf("ParseMoney(%q): %v, want accepted %v", in, err, ok)
		}
		body, _ := json.Marshal(map[string]any{"bundles": []map[string]int{{"us-east/cpu": 1}}, "limit": in})
		code, m := f.api(tok, "POST", "/api/v1/orders", string(body))
		if refused := code == 400 && strings.Contains(flatten(m), notAmount); refused == ok {
			t.Errorf("JSON limit %q: %d %v, want accepted %v", in, code, m, ok)
		}
		res, _ := b.post("/team/threshold", url.Values{"csrf_token": {csrf}, "threshold": {in}})
		_, doc := b.get(res.Header.Get("Location"))
		flash := doc.Find("[data-testid=flash]").Text()
		if refused := strings.Contains(flash, notAmount); refused == ok || flash == "" {
			t.Errorf("form threshold %q: %q, want accepted %v", in, flash, ok)
		}
	}
}
