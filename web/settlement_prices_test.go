package web_test

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
)

// term is one "pool quantity unit × $price" of a derivation.
var term = regexp.MustCompile(`(-?[\d,]+) \S+ × \$([\d,]+\.\d+)`)

// charged is the exact amount a derivation ends with.
var charged = regexp.MustCompile(`= (-?\$[\d,]+\.\d+)$`)

// dollars parses "$1,234.56" or "1,234.560000".
func dollars(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.NewReplacer("$", "", ",", "", "−", "-").Replace(strings.TrimSpace(s)), 64)
	if err != nil {
		t.Fatalf("amount %q: %v", s, err)
	}
	return v
}

// micros reads an amount as a page or CSV shows it, in micro-dollars.
func micros(t testing.TB, s string) int64 {
	t.Helper()
	m, err := moneyfmt.Parse(strings.ReplaceAll(s, "−", "-"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// settlementAddsUp reads a settlement page as a person adding it up would, and
// fails on any equation that is false at the digits shown: each derivation's
// quantities times its shown unit prices give its shown amount exactly, which is
// the At unit prices column and (for a payment at unit prices) the Paid or
// Received column; the Paid and Received columns add up to their totals; paid =
// received + treasury net on the cards. It returns the number of derivations.
func settlementAddsUp(t testing.TB, doc *goquery.Document) int {
	t.Helper()
	lines := 0
	var paid, received int64
	doc.Find("[data-testid=settlement-line]").Each(func(_ int, tr *goquery.Selection) {
		if s := strings.TrimSpace(tr.Find("[data-testid=paid]").Text()); s != "" {
			paid += micros(t, s)
		}
		if s := strings.TrimSpace(tr.Find("[data-testid=received]").Text()); s != "" {
			received += micros(t, s)
		}
		d := strings.TrimSpace(tr.Find("[data-testid=derivation]").Text())
		if d == "" {
			return
		}
		lines++
		recomputed := int64(0)
		for _, m := range term.FindAllStringSubmatch(d, -1) {
			q, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			recomputed += q * micros(t, m[2])
		}
		m := charged.FindStringSubmatch(d)
		if m == nil {
			t.Fatalf("derivation %q names no amount", d)
		}
		if shown := micros(t, m[1]); recomputed != shown {
			t.Errorf("%q: the terms give %s", d, moneyfmt.Exact(recomputed))
		}
		if at := micros(t, tr.Find("[data-testid=at-prices]").Text()); at != recomputed {
			t.Errorf("%q: at unit prices %s, recomputed %s", d, moneyfmt.Exact(at), moneyfmt.Exact(recomputed))
		}
		if tr.Find("[data-testid=final-round-note]").Length() > 0 {
			return // the final round set the payment: both are listed
		}
		shown := strings.TrimSpace(tr.Find("[data-testid=paid]").Text())
		sign := int64(1)
		if shown == "" {
			shown, sign = strings.TrimSpace(tr.Find("[data-testid=received]").Text()), -1
		}
		if got := sign * micros(t, shown); got != recomputed {
			t.Errorf("%q: the line shows %s", d, shown)
		}
	})
	if doc.Find("[data-testid=pager]").Length() == 0 { // one page: the rows are every order
		if total := micros(t, doc.Find("[data-testid=settlement-totals] [data-label=Paid]").Text()); total != paid {
			t.Errorf("Paid column adds to %s, its total shows %s", moneyfmt.Exact(paid), moneyfmt.Exact(total))
		}
		if total := micros(t, doc.Find("[data-testid=settlement-totals] [data-label=Received]").Text()); total != received {
			t.Errorf("Received column adds to %s, its total shows %s", moneyfmt.Exact(received), moneyfmt.Exact(total))
		}
	}
	cardPaid, cardReceived, net := micros(t, doc.Find("[data-testid=buyers-paid]").Text()), micros(t, doc.Find("[data-testid=sellers-received]").Text()), micros(t, doc.Find("[data-testid=treasury-net]").Text())
	if cardPaid != cardReceived+net {
		t.Errorf("buyers paid %s != sellers received %s + treasury net %s", moneyfmt.Exact(cardPaid), moneyfmt.Exact(cardReceived), moneyfmt.Exact(net))
	}
	return lines
}

// Finance can recompute every payment of a settlement by hand: the report shows
// each winner's bundle times the unit prices (exact, in whole micro-dollars), which
// give the amount paid exactly, the CSV carries the same unit prices, and a totals
// row sums the lines as shown (issue 31).
func TestSettlementUnitPricesReproduceThePayments(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.cpuPool()
	ctx := context.Background()
	if _, err := f.market.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "ram", Unit: "GiB", Capacity: 4000, UnitCost: 37_000, Utilization: 0.9, CurveID: "standard"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Budget: 5000 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	mia := f.user("mia@x.io", identity.RoleMember, "search")
	ann := f.user("ann@x.io", identity.RoleMember, "ads")
	for _, o := range []struct {
		by     identity.User
		team   string
		bundle exchange.Bundle
		limit  ledger.Money
	}{
		{mia, "search", exchange.Bundle{"us-east/cpu": 30, "us-east/ram": 800}, 990 * ledger.Dollar},
		{ann, "ads", exchange.Bundle{"us-east/cpu": 45, "us-east/ram": 333}, 2000 * ledger.Dollar},
	} {
		limit := o.limit
		if _, err := f.market.PlaceOrder(ctx, o.by, exchange.OrderSpec{Team: o.team, Limit: &limit, Bundles: []exchange.Bundle{o.bundle}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.market.Close(ctx, 1); err != nil {
		t.Fatal(err)
	}
	f.user("fin@x.io", identity.RoleFinance, "")
	b := f.browser()
	b.login("fin@x.io")
	_, doc := b.get("/finance/auctions/1")
	if lines := settlementAddsUp(t, doc); lines != 2 {
		t.Fatalf("%d lines with a derivation, want 2", lines)
	}
	if doc.Find("[data-testid=settlement-prices] tbody tr").Length() != 2 {
		t.Error("no table of unit prices")
	}

	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/finance/auctions/1/settlement.csv", nil)
	req.Header.Set("Authorization", "Bearer "+f.token(f.user("fin2@x.io", identity.RoleFinance, "")))
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
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	if _, ok := col["at_prices"]; !ok {
		t.Fatalf("the settlement CSV has no at_prices column: %q", recs[0])
	}
	checked := 0
	defer func() {
		if checked != 2 {
			t.Errorf("%d CSV lines with a bundle, want 2", checked)
		}
	}()
	for _, r := range recs[1:] {
		if r[col["bundle"]] == "" {
			continue
		}
		qty := map[string]float64{}
		for _, item := range strings.Split(r[col["bundle"]], ";") {
			f := strings.Fields(strings.TrimSpace(item)) // "us-east/cpu +70"
			qty[f[0]] = dollars(t, strings.TrimPrefix(f[1], "+"))
		}
		recomputed := int64(0) // micro-dollars: quantity x price, exactly
		for _, p := range strings.Split(r[col["unit_prices"]], ";") {
			pool, price, _ := strings.Cut(p, "=")
			recomputed += int64(qty[pool]) * micros(t, price)
		}
		if settled := micros(t, r[col["settled_payment"]]); recomputed != settled {
			t.Errorf("CSV order %s: unit prices give %d micro-dollars, settled %d", r[col["order_id"]], recomputed, settled)
		}
		if at := micros(t, r[col["at_prices"]]); recomputed != at {
			t.Errorf("CSV order %s: unit prices give %d micro-dollars, at_prices %d", r[col["order_id"]], recomputed, at)
		}
		checked++
	}
}

// The finance page's budget table ends with a totals row summing its columns.
func TestBudgetTableHasTotals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Budget: 250 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	f.user("fin@x.io", identity.RoleFinance, "")
	b := f.browser()
	b.login("fin@x.io")
	_, doc := b.get("/finance")
	row := doc.Find("[data-testid=budget-totals]")
	if got := strings.TrimSpace(row.Find("td[data-label=Balance]").Text()); got != "$1,250.00" {
		t.Errorf("total balance %q, want $1,250.00", got)
	}
	if got := strings.TrimSpace(row.Find("th").Text()); got != "Every team (2)" {
		t.Errorf("totals label %q", got)
	}
}
