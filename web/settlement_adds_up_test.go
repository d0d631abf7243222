package web_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// For random auctions, on both databases, every figure finance adds up on the
// settlement report and on /finance adds up at the digits shown: each line's
// quantities times its shown prices give its shown amount, the columns give their
// totals, and each budget's balance - held = available (issue 31).
func TestRandomSettlementsAddUpAsShown(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				f := newFixtureOn(t, db, web.Config{LoginRate: 5, PublicURL: "http://127.0.0.1"})
				randomSettlement(t, f, rand.New(rand.NewPCG(seed, 31)))
				f.user("fin@x.io", identity.RoleFinance, "")
				b := f.browser()
				b.login("fin@x.io")
				_, doc := b.get("/finance/auctions/1")
				if settlementAddsUp(t, doc) == 0 {
					t.Fatal("no order won: the auction proves nothing")
				}
				_, fin := b.get("/finance")
				budgetsAddUp(t, fin)
				for _, team := range []string{"search", "ads", "ml", "maps"} {
					_, st := b.get("/finance/teams/" + team)
					statementChains(t, team, st)
				}
			})
		})
	}
}

// randomSettlement sets up three pools with unit costs that give prices with
// sub-cent digits, four teams, and a dozen orders of one to three bundles with
// limits to the micro-dollar, and closes the auction.
func randomSettlement(t *testing.T, f *fixture, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.market.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.AddCluster(ctx, exchange.Cluster{ID: "us-east"}); err != nil {
		t.Fatal(err)
	}
	pools := []string{"us-east/cpu", "us-east/ram", "us-east/gpu"}
	for i, r := range []struct{ res, unit string }{{"cpu", "core"}, {"ram", "GiB"}, {"gpu", "GPU"}} {
		cost := ledger.Money(rng.Int64N(5_000_000) + 1_234 + int64(i))
		if _, err := f.market.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: r.res, Unit: r.unit, Capacity: 100 + rng.Int64N(400),
			UnitCost: cost, Utilization: 0.5 + rng.Float64()/2, CurveID: "standard"}); err != nil {
			t.Fatal(err)
		}
	}
	teams := []string{"search", "ads", "ml", "maps"}
	users := map[string]identity.User{}
	for i, team := range teams {
		if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: team, Budget: 50_000 * ledger.Dollar}); err != nil {
			t.Fatal(err)
		}
		users[team] = f.user(fmt.Sprintf("m%d@x.io", i), identity.RoleOwner, team)
	}
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	for range 12 {
		team := teams[rng.IntN(len(teams))]
		spec := exchange.OrderSpec{Team: team}
		for range 1 + rng.IntN(3) {
			b := exchange.Bundle{}
			for _, p := range pools {
				if rng.IntN(2) == 0 {
					b[p] = 1 + rng.Int64N(60)
				}
			}
			if len(b) == 0 {
				b[pools[rng.IntN(len(pools))]] = 1 + rng.Int64N(60)
			}
			spec.Bundles = append(spec.Bundles, b)
		}
		limit := ledger.Money(rng.Int64N(2_000_000_000) + 1)
		spec.Limit = &limit
		if _, err := f.market.PlaceOrder(ctx, users[team], spec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.market.Close(ctx, 1); err != nil {
		t.Fatal(err)
	}
}

// budgetsAddUp checks /finance's budget table as shown: each row's balance - held
// = available, and each column adds up to its totals row.
func budgetsAddUp(t *testing.T, doc *goquery.Document) {
	t.Helper()
	var sums [3]int64
	rows := 0
	doc.Find("[data-testid=budgets] tbody tr").Each(func(_ int, tr *goquery.Selection) {
		rows++
		var v [3]int64
		for i, col := range []string{"Balance", "Held", "Available"} {
			v[i] = micros(t, tr.Find("[data-label="+col+"]").Text())
			sums[i] += v[i]
		}
		if v[0]-v[1] != v[2] {
			t.Errorf("%s: balance %s - held %s != available %s", strings.TrimSpace(tr.Find("td").First().Text()),
				moneyfmt.Exact(v[0]), moneyfmt.Exact(v[1]), moneyfmt.Exact(v[2]))
		}
	})
	if rows == 0 {
		t.Fatal("no budgets")
	}
	for i, col := range []string{"Balance", "Held", "Available"} {
		if total := micros(t, doc.Find("[data-testid=budget-totals] [data-label="+col+"]").Text()); total != sums[i] {
			t.Errorf("%s column adds to %s, its total shows %s", col, moneyfmt.Exact(sums[i]), moneyfmt.Exact(total))
		}
	}
}

// statementChains checks a statement as shown: from the opening balance, each
// row's amount gives its running balance, and the last gives the closing balance.
func statementChains(t *testing.T, team string, doc *goquery.Document) {
	t.Helper()
	rows := doc.Find("[data-testid=statement] tbody tr")
	if rows.Length() < 3 { // opening, the grant, closing
		t.Fatalf("%s: statement has %d rows", team, rows.Length())
	}
	balance := micros(t, rows.First().Find("[data-label=Balance]").Text())
	rows.Each(func(i int, tr *goquery.Selection) {
		amount := tr.Find("[data-label=Amount]")
		if amount.Length() == 0 {
			return
		}
		balance += micros(t, amount.Text())
		if shown := micros(t, tr.Find("[data-label=Balance]").Text()); shown != balance {
			t.Errorf("%s: row %d: the amounts above give %s, the row shows %s", team, i, moneyfmt.Exact(balance), moneyfmt.Exact(shown))
			balance = shown
		}
	})
	if closing := micros(t, doc.Find("[data-testid=closing]").Text()); closing != balance {
		t.Errorf("%s: the rows give %s, the closing balance shows %s", team, moneyfmt.Exact(balance), moneyfmt.Exact(closing))
	}
}
