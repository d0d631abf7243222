package web_test

import (
	"context"
	"encoding/csv"
	"io"
	"math"
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

// Finance can recompute every payment of a settlement by hand: the report shows
// each winner's bundle times the unit prices (to the micro-dollar), which give the
// amount paid to the cent, the CSV carries the same unit prices, and a totals row
// sums the lines.
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
	lines, sum := 0, 0.0
	doc.Find("[data-testid=settlement-line]").Each(func(_ int, tr *goquery.Selection) {
		d := tr.Find("[data-testid=derivation]").Text()
		if d == "" {
			return
		}
		lines++
		recomputed, units := 0.0, 0.0
		for _, m := range term.FindAllStringSubmatch(d, -1) {
			recomputed += dollars(t, m[1]) * dollars(t, m[2])
			units += math.Abs(dollars(t, m[1]))
		}
		m := charged.FindStringSubmatch(d)
		if m == nil {
			t.Fatalf("derivation %q names no amount", d)
		}
		exact := dollars(t, m[1])
		sum += exact
		// Each price is shown to the micro-dollar: the product is off by at most half
		// a micro-dollar per unit.
		if math.Abs(recomputed-exact) > units*0.5e-6+1e-9 {
			t.Errorf("%q recomputes to %.6f", d, recomputed)
		}
		// The bundle's cost at the unit prices is shown beside it, to the micro-dollar.
		if at := dollars(t, tr.Find("[data-testid=at-prices]").Text()); math.Abs(recomputed-at) > units*0.5e-6+1e-9 {
			t.Errorf("%q: at unit prices %.6f, recomputed %.6f", d, at, recomputed)
		}
		if paid := dollars(t, tr.Find("[data-testid=paid]").Text()); math.Abs(math.Round(exact*100)/100-paid) > 1e-9 {
			t.Errorf("%q: the Paid column shows %.2f", d, paid)
		}
	})
	if lines != 2 {
		t.Fatalf("%d lines with a derivation, want 2", lines)
	}
	if total := dollars(t, doc.Find("[data-testid=settlement-totals] [data-label=Paid]").Text()); math.Abs(total-math.Round(sum*100)/100) > 1e-9 {
		t.Errorf("totals row %.2f, lines sum to %.2f", total, sum)
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
		recomputed, units := 0.0, 0.0
		for _, p := range strings.Split(r[col["unit_prices"]], ";") {
			pool, price, _ := strings.Cut(p, "=")
			recomputed += qty[pool] * dollars(t, price)
			units += math.Abs(qty[pool])
		}
		if settled := dollars(t, r[col["settled_payment"]]); math.Abs(recomputed-settled) > units*0.5e-6+1e-9 {
			t.Errorf("CSV order %s: unit prices give %.6f, settled %.6f", r[col["order_id"]], recomputed, settled)
		}
		if at := dollars(t, r[col["at_prices"]]); math.Abs(recomputed-at) > units*0.5e-6+1e-9 {
			t.Errorf("CSV order %s: unit prices give %.6f, at_prices %.6f", r[col["order_id"]], recomputed, at)
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
