package web_test

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

var (
	centsText = regexp.MustCompile(`^-?\$\d{1,3}(,\d{3})*\.\d{2}(\d{1,4})?$`) // cents, or exact to the micro-dollar
	priceText = regexp.MustCompile(`^-?\$\d{1,3}(,\d{3})*\.\d{2,}( per \S+)?$`)
	exactText = regexp.MustCompile(`^-?\$\d+(,\d{3})*\.\d{2,}$`)
	// rawMoney is a dollar amount written outside the formatter.
	rawMoney = regexp.MustCompile(`\$-?\d`)
)

// moneyMarket is a market whose amounts are awkward to show: a budget with
// micro-dollars, a bid with a six-decimal limit, an offer, one settled auction and
// one open with a preliminary run.
func moneyMarket(t *testing.T) *fixture {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.market.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddCluster(ctx, exchange.Cluster{ID: "us-east"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 100, UnitCost: ledger.Dollar, Utilization: 0.8, CurveID: "standard"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "search", Budget: 1000 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "ram", Unit: "GiB", Capacity: 1000, UnitCost: 13_900, Utilization: 0.5, CurveID: "standard"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.Grant(ctx, "g1", "search", 245_488_540_722, "top-up"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Name: "Ads", Budget: 100 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	if err := f.market.GrantQuota(ctx, "ads", "us-east/cpu", 50); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	owner := f.user("owner@x.io", identity.RoleOwner, "search")
	seller := f.user("seller@x.io", identity.RoleOwner, "ads")
	place := func(u identity.User, spec exchange.OrderSpec) {
		t.Helper()
		if _, err := f.market.PlaceOrder(ctx, u, spec); err != nil {
			t.Fatal(err)
		}
	}
	bid := ledger.Money(1_314_921_216)
	offer, cheap := -250*ledger.Dollar, -10*ledger.Dollar
	place(owner, exchange.OrderSpec{Team: "search", Limit: &bid, Bundles: []exchange.Bundle{{"us-east/cpu": 30}}})
	place(seller, exchange.OrderSpec{Team: "ads", Limit: &cheap, Bundles: []exchange.Bundle{{"us-east/cpu": -20}}})
	if _, err := f.market.Close(ctx, 1); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Hour)
	a, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	place(owner, exchange.OrderSpec{Team: "search", Limit: &bid, Bundles: []exchange.Bundle{{"us-east/cpu": 5, "us-east/ram": 10}}})
	place(seller, exchange.OrderSpec{Team: "ads", Limit: &offer, Bundles: []exchange.Bundle{{"us-east/cpu": -10}}})
	if _, err := f.market.Preview(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	f.user("fin@x.io", identity.RoleFinance, "")
	f.user("op@x.io", identity.RoleOperator, "")
	return f
}

// checkMoney fails when a page shows money outside the one formatter: every
// amount is a .money element with cents or every digit to the micro-dollar (or a
// price to the micro-dollar with its unit) and the exact value in its title; no
// "$-" and no long decimals anywhere.
func checkMoney(t *testing.T, page string, doc *goquery.Document) int {
	t.Helper()
	n := 0
	doc.Find("main .money").Each(func(_ int, s *goquery.Selection) {
		n++
		text := strings.Join(strings.Fields(s.Text()), " ")
		title, _ := s.Attr("title")
		if !centsText.MatchString(text) && !priceText.MatchString(text) {
			t.Errorf("%s: amount %q is not dollars with cents or a price with its unit", page, text)
		}
		if !exactText.MatchString(title) {
			t.Errorf("%s: amount %q has no exact value on hover (title %q)", page, text, title)
		}
	})
	rest := doc.Find("main").Clone()
	rest.Find(".money, label, input, .help, option").Remove()
	body := strings.Join(strings.Fields(rest.Text()), " ")
	if m := rawMoney.FindStringIndex(body); m != nil {
		t.Errorf("%s: money written outside the formatter: %q", page, body[max(0, m[0]-60):min(len(body), m[1]+20)])
	}
	return n
}

func TestEveryPageShowsMoneyOneWay(t *testing.T) {
	t.Parallel()
	f := moneyMarket(t)
	owner, fin, op := f.browser(), f.browser(), f.browser()
	owner.login("owner@x.io")
	fin.login("fin@x.io")
	op.login("op@x.io")
	pages := []struct {
		b    *browser
		path string
	}{
		{owner, "/"}, {owner, "/auctions/1"}, {owner, "/auctions/2"}, {owner, "/orders"}, {owner, "/team"}, {owner, "/approvals"},
		{owner, "/reservations"}, {owner, "/orders/new?step=2&q.cpu=5&cluster=us-east"},
		{fin, "/finance"}, {fin, "/finance/teams/search"}, {fin, "/finance/auctions/1"},
		{op, "/operate"}, {op, "/operate/trades"}, {op, "/operate/curves/standard"}, {op, "/operate/schedule"},
	}
	for _, p := range pages {
		res, doc := p.b.get(p.path)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", p.path, res.StatusCode)
		}
		if n := checkMoney(t, p.path, doc); n == 0 && p.path != "/approvals" && p.path != "/reservations" {
			t.Errorf("%s shows no amounts", p.path)
		}
	}
	// The budget with micro-dollars: every digit shown, so balance - held =
	// available adds up as shown (issue 31).
	_, doc := owner.get("/team")
	posted := doc.Find("[data-testid=posted] .money")
	if title, _ := posted.Attr("title"); !strings.HasSuffix(posted.Text(), ".540722") || !strings.HasSuffix(title, ".540722") {
		t.Errorf("balance %q (title %q): want every digit shown", posted.Text(), title)
	}
	var card [3]int64
	for i, id := range []string{"posted", "held", "available"} {
		card[i] = micros(t, doc.Find("[data-testid="+id+"] .money").Text())
	}
	if card[0]-card[1] != card[2] {
		t.Errorf("team page: balance %d - held %d != available %d micro-dollars, as shown", card[0], card[1], card[2])
	}
	// Offers say what the seller accepts; outcomes say what is received.
	_, doc = op.get("/operate/trades")
	text := strings.Join(strings.Fields(doc.Find("main").Text()), " ")
	for _, want := range []string{"sell for at least $250.00", "pay at most $1,314.921216"} {
		if !strings.Contains(text, want) {
			t.Errorf("trades page does not say %q:\n%s", want, text)
		}
	}
	// The settlement shows the seller's receipt in the Received column.
	_, doc = fin.get("/finance/auctions/1")
	if doc.Find("[data-testid=received] .money").Length() == 0 || doc.Find("[data-testid=paid] .money").Length() == 0 {
		t.Errorf("settlement report has no receipts or no payments: %s", doc.Find("[data-testid=settlement]").Text())
	}
	// Teams by name.
	_, doc = fin.get("/finance")
	if s := doc.Find("[data-testid=budget-ads] td").First().Text(); !strings.Contains(s, "Ads (ads)") {
		t.Errorf("finance shows team %q, want its name", s)
	}
	// Units on prices.
	_, doc = owner.get("/")
	if !strings.Contains(doc.Find("[data-testid='pool-us-east/ram']").Text(), "$0.0139 per GiB") {
		t.Errorf("ram's unit cost is not $0.0139 per GiB: %q", doc.Find("[data-testid='pool-us-east/ram']").Text())
	}
}

// Every money column of the exports has six decimals on every row, and bundles are
// numbered from 1.
func TestCSVMoneyColumnsHaveFixedDecimals(t *testing.T) {
	t.Parallel()
	f := moneyMarket(t)
	fin := f.token(f.user("fin2@x.io", identity.RoleFinance, ""))
	six := regexp.MustCompile(`^-?\d+\.\d{6}$`)
	for path, cols := range map[string][]string{
		"/finance/teams/search/statement.csv": {"amount", "balance"},
		"/finance/journal.csv":                {"amount"},
		"/finance/auctions/1/settlement.csv":  {"clock_payment", "settled_payment"},
	} {
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+fin)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		recs, err := csv.NewReader(strings.NewReader(string(raw))).ReadAll()
		if err != nil || len(recs) < 2 {
			t.Fatalf("%s: %v %q", path, err, raw)
		}
		idx := map[string]int{}
		for i, h := range recs[0] {
			idx[h] = i
		}
		for _, col := range cols {
			i, ok := idx[col]
			if !ok {
				t.Fatalf("%s: no column %s", path, col)
			}
			for _, r := range recs[1:] {
				if r[i] != "" && !six.MatchString(r[i]) {
					t.Errorf("%s: %s %q does not have six decimals", path, col, r[i])
				}
			}
		}
		if i, ok := idx["bundle_number"]; ok {
			for _, r := range recs[1:] {
				if r[i] == "0" {
					t.Errorf("%s: bundle numbered from 0: %q", path, r)
				}
			}
		}
	}
}
