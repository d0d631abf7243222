package web_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/clearhouse/clearhouse/web"
)

// A market where the final round changes the clock's outcome (as in exchange's
// TestTheBindingRunSettlesTheFinalRound): search's cores-with-RAM bundle wins for
// its limit, ml, which the clock gave the RAM, loses. The auction page and the
// settlement report show the final round's welfare over the clock's, that it was
// proved optimal, both changed orders, and search's payment next to its bundle at
// the published prices, every amount through the one money formatter.
func TestPagesShowTheFinalRound(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixtureOn(t, db, web.Config{LoginRate: 5, PublicURL: "http://127.0.0.1"})
		ctx := context.Background()
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		_, err := f.market.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve)
		must(err)
		_, err = f.market.AddCluster(ctx, exchange.Cluster{ID: "us-east"})
		must(err)
		for _, p := range []exchange.PoolSpec{
			{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 100, UnitCost: ledger.Dollar, Utilization: 0.8, CurveID: "standard"},
			{ClusterID: "us-east", Resource: "ram", Unit: "GiB", Capacity: 400, UnitCost: 100_000, Utilization: 0.8, CurveID: "standard"},
		} {
			_, err = f.market.AddPool(ctx, p)
			must(err)
		}
		for _, id := range []string{"search", "ads", "ml"} {
			_, err = f.market.AddTeam(ctx, exchange.NewTeam{ID: id, Budget: 1000 * ledger.Dollar})
			must(err)
		}
		_, err = f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams)
		must(err)
		_, err = f.market.OpenDue(ctx)
		must(err)
		for _, o := range []struct {
			team   string
			limit  ledger.Money
			bundle exchange.Bundle
		}{
			{"search", 900 * ledger.Dollar, exchange.Bundle{"us-east/cpu": 100, "us-east/ram": 400}},
			{"ads", 400 * ledger.Dollar, exchange.Bundle{"us-east/cpu": 60}},
			{"ml", 290 * ledger.Dollar, exchange.Bundle{"us-east/ram": 300}},
		} {
			u := f.user("owner@"+o.team+".io", identity.RoleOwner, o.team)
			limit := o.limit
			_, err := f.market.PlaceOrder(ctx, u, exchange.OrderSpec{Team: o.team, Limit: &limit, Bundles: []exchange.Bundle{o.bundle}})
			must(err)
		}
		run, err := f.market.Close(ctx, 1)
		if err != nil || !run.FinalRound || run.Welfare <= run.ClockWelfare {
			t.Fatalf("close: %+v %v", run, err)
		}
		finUser := f.user("fin@x.io", identity.RoleFinance, "")
		// The API's settlement report carries the final round and each line's bundle at
		// the published prices.
		code, m := f.api(f.token(finUser), "GET", "/api/v1/auctions/1/settlement", "")
		fr, _ := m["final_round"].(map[string]any)
		if code != http.StatusOK || fr == nil || fr["optimal"] != true || fr["welfare"].(float64) <= fr["clock_welfare"].(float64) {
			t.Fatalf("API settlement: %d final_round %v", code, m["final_round"])
		}
		for _, l := range m["lines"].([]any) {
			line := l.(map[string]any)
			// search's core payment is its VCG payment (it wins alone): the $400 and $290
			// ads and ml offered less their bundles' reserve value ($60, $30), plus its
			// own bundle's ($140).
			if fr["payments"] != "core" {
				t.Fatalf("API settlement: final_round.payments %v, want core", fr["payments"])
			}
			if line["team"] == "search" && (line["payment"] != "740.00" || line["at_prices"].(string) <= "900") {
				t.Fatalf("API line %v: want payment 740 against an at_prices above the 900 limit", line)
			}
			if want := map[any]any{"search": "core"}[line["team"]]; line["payment_rule"] != want {
				t.Errorf("API line %v: payment_rule %v, want %v", line, line["payment_rule"], want)
			}
			// Its VCG payment is recorded with it: here the core payment is the VCG
			// payment itself. The losers have none.
			if want := map[any]any{"search": "740.00"}[line["team"]]; line["vcg_payment"] != want {
				t.Errorf("API line %v: vcg_payment %v, want %v", line, line["vcg_payment"], want)
			}
		}
		// The final round changed the clock's allocation, so the API gives supporting
		// prices beside the clock's (ram at ml's $290 over 300 GiB, to the
		// micro-dollar) and ads, a loser its 60 cores would cost under $400 at them.
		sp, _ := fr["supporting_prices"].([]any)
		var ramPrice string
		for _, p := range sp {
			p := p.(map[string]any)
			if p["pool"] == "us-east/ram" {
				ramPrice, _ = p["price"].(string)
			}
			if p["clock_price"] == nil || p["clock_price"] == "" {
				t.Errorf("API supporting price %v without the clock's", p)
			}
		}
		if len(sp) != 2 || !strings.HasPrefix(ramPrice, "0.96666") {
			t.Fatalf("API supporting_prices %v, want cpu and ram, ram near 0.966667", fr["supporting_prices"])
		}
		us, _ := fr["unsupported"].([]any)
		if len(us) != 1 || us[0].(map[string]any)["team"] != "ads" || us[0].(map[string]any)["won"] != false ||
			us[0].(map[string]any)["reason"] != "wants" || !strings.Contains(us[0].(map[string]any)["text"].(string), "its limit of $400.00") {
			t.Fatalf("API unsupported %v, want ads, a loser that would want its bundle", fr["unsupported"])
		}
		// The settlement CSV gives each line's pools at the supporting prices.
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/finance/auctions/1/settlement.csv", nil)
		req.Header.Set("Authorization", "Bearer "+f.token(finUser))
		res, err := http.DefaultClient.Do(req)
		must(err)
		recs, err := csv.NewReader(res.Body).ReadAll()
		res.Body.Close()
		must(err)
		col := slices.Index(recs[0], "supporting_unit_prices")
		team := slices.Index(recs[0], "team")
		// payment_rule and vcg_payment were added last, in that order, so that tools
		// reading the columns by position still find every earlier one.
		ruleCol, vcgCol := slices.Index(recs[0], "payment_rule"), slices.Index(recs[0], "vcg_payment")
		if ruleCol != len(recs[0])-2 || vcgCol != len(recs[0])-1 {
			t.Fatalf("settlement CSV header %q: want payment_rule then vcg_payment last", recs[0])
		}
		found := 0
		for _, r := range recs[1:] {
			if want := map[string]string{"search": "core"}[r[team]]; r[ruleCol] != want {
				t.Errorf("settlement CSV line %q: payment_rule %q, want %q", r, r[ruleCol], want)
			}
			if want := map[string]string{"search": "740.000000"}[r[team]]; r[vcgCol] != want {
				t.Errorf("settlement CSV line %q: vcg_payment %q, want %q", r, r[vcgCol], want)
			}
			want := map[string]string{"search": "us-east/cpu=5.133333;us-east/ram=0.966667", "ads": "", "ml": ""}[r[team]]
			if col < 0 || r[col] != want {
				t.Errorf("settlement CSV line %q: supporting_unit_prices %q, want %q", r, r[max(col, 0)], want)
			}
			found++
		}
		if found != 3 {
			t.Errorf("settlement CSV has %d order lines, want 3: %q", found, recs)
		}
		fin, owner := f.browser(), f.browser()
		fin.login("fin@x.io")
		owner.login("owner@ads.io")
		for _, p := range []struct {
			b    *browser
			path string
		}{{owner, "/auctions/1"}, {fin, "/finance/auctions/1"}} {
			res, doc := p.b.get(p.path)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d", p.path, res.StatusCode)
			}
			sec := doc.Find("[data-testid=final-round]")
			if sec.Length() != 1 || sec.Find("[data-testid=final-proved]").Length() != 1 || sec.Find("[data-testid=final-gap]").Length() != 0 {
				t.Fatalf("%s: final round section %q", p.path, sec.Text())
			}
			if rule := sec.Find("[data-testid=final-rule]").Text(); !strings.Contains(rule, "final round with core payments") || !strings.Contains(rule, "Bid your true value") {
				t.Errorf("%s: the final round does not say core payments settled it: %q", p.path, rule)
			}
			if got := sec.Find("[data-testid=final-added] .money").Text(); got != "$500.00" {
				t.Errorf("%s: added %q, want $500.00 (760 against 260)", p.path, got)
			}
			changed := sec.Find("[data-testid=final-changed-line]")
			if changed.Length() != 2 || !strings.Contains(changed.Eq(0).Text(), "nothing") || !strings.Contains(changed.Eq(1).Text(), "nothing") {
				t.Errorf("%s: changed orders %q", p.path, changed.Text())
			}
			lines := sec.Find("[data-testid=final-nonuniform-line]")
			if lines.Length() != 1 || lines.Find("[data-testid=final-payment] .money").Text() != "$740.00" {
				t.Fatalf("%s: non-uniform payments %q", p.path, lines.Text())
			}
			at := lines.Find("[data-testid=final-at-prices] .money").Text()
			if at <= "$900.00" || !strings.HasPrefix(at, "$9") {
				t.Errorf("%s: search's bundle at prices %q, want more than its $900 limit", p.path, at)
			}
			if n := sec.Find("[data-testid=final-supporting-line]").Length(); n != 2 {
				t.Errorf("%s: %d supporting price lines, want cpu and ram", p.path, n)
			}
			unsup := sec.Find("[data-testid=final-unsupported-line]")
			if txt := unsup.Text(); unsup.Length() != 1 || !strings.Contains(txt, "(ads) lost, but at the supporting prices us-east/cpu +60") ||
				!strings.Contains(txt, "better than its limit of $400.00: it would want that bundle.") {
				t.Errorf("%s: unsupported orders %q, want ads in words", p.path, txt)
			}
			checkMoney(t, p.path, doc)
			if got := lines.Find("[data-testid=final-payment-rule]").Text(); got != "a core payment, the one nearest the VCG payments" {
				t.Errorf("%s: search's payment rule %q, want a core payment nearest VCG", p.path, got)
			}
			if got := sec.Find("[data-testid=final-parts]").Text(); !strings.Contains(got, "settled the market as one part:") || !strings.Contains(got, "it paid core payments at the point nearest the VCG payments.") {
				t.Errorf("%s: payments by part %q, want one part at the point nearest VCG", p.path, got)
			}
		}
		if fr["parts"] != 1.0 || fr["core_parts"] != 1.0 || fr["least_revenue_parts"] != 0.0 {
			t.Errorf("API final_round parts %v, core_parts %v, least_revenue_parts %v; want 1, 1, 0", fr["parts"], fr["core_parts"], fr["least_revenue_parts"])
		}
		// A run whose core part paid the least-revenue core point (the engine's
		// fallback when the nearest-VCG step fails, which exchange's
		// TestTheBindingRunStoresLeastRevenueParts settles and stores) is shown as
		// such on both pages and in the API; here the stored count is set directly.
		must(db.Write.Exec("UPDATE auction_runs SET least_revenue_parts = 1 WHERE auction_id = 1 AND binding").Error)
		_, m = f.api(f.token(finUser), "GET", "/api/v1/auctions/1/settlement", "")
		if fr, _ := m["final_round"].(map[string]any); fr == nil || fr["least_revenue_parts"] != 1.0 || fr["payments"] != "core" {
			t.Errorf("API final_round after the fallback: %v, want core with least_revenue_parts 1", m["final_round"])
		}
		for _, p := range []struct {
			b    *browser
			path string
		}{{owner, "/auctions/1"}, {fin, "/finance/auctions/1"}} {
			_, doc := p.b.get(p.path)
			sec := doc.Find("[data-testid=final-round]")
			if rule := sec.Find("[data-testid=final-rule]").Text(); !strings.Contains(rule, "core payments of least total") || !strings.Contains(rule, "not necessarily the nearest to the VCG payments") {
				t.Errorf("%s: the rule does not say the least-revenue point was paid: %q", p.path, rule)
			}
			if got := sec.Find("[data-testid=final-parts]").Text(); !strings.Contains(got, "it paid the least-revenue core point, not proved nearest the VCG payments") {
				t.Errorf("%s: payments by part %q, want the least-revenue point", p.path, got)
			}
		}
		// The winner's own outcome says which point its part paid: search's order on
		// its team's orders page, its line on the settlement report, in the CSV and in
		// the API (run_outcomes.payment_rule set here as exchange's
		// TestTheBindingRunStoresLeastRevenueParts stores it).
		must(db.Write.Exec("UPDATE run_outcomes SET payment_rule = 'core_least_revenue' WHERE payment_rule = 'core'").Error)
		searchOwner := f.browser()
		searchOwner.login("owner@search.io")
		for _, p := range []struct {
			b          *browser
			path, find string
		}{{searchOwner, "/orders", "[data-testid=outcome-rule]"}, {fin, "/finance/auctions/1", "[data-testid=payment-rule]"}, {owner, "/auctions/1", "[data-testid=final-payment-rule]"}} {
			_, doc := p.b.get(p.path)
			got := strings.Join(strings.Fields(doc.Find(p.find).Text()), " ")
			if doc.Find(p.find).Length() != 1 || !strings.Contains(got, "a core payment of least total that the solver found, not necessarily the nearest to the VCG payments") {
				t.Errorf("%s: search's payment rule %q, want the least-revenue point", p.path, got)
			}
		}
		if _, doc := owner.get("/orders"); doc.Find("[data-testid=outcome-rule]").Length() != 0 || doc.Find("[data-testid=outcome-vcg]").Length() != 0 {
			t.Errorf("/orders of ads, a loser: payment rule %q, VCG %q", doc.Find("[data-testid=outcome-rule]").Text(), doc.Find("[data-testid=outcome-vcg]").Text())
		}
		// The winner's VCG payment, the least a core payment could be, is shown beside
		// its payment on its team's orders page (with what a lower bid could at most
		// have saved: nothing, since it paid its VCG payment) and on the report.
		for _, p := range []struct {
			b          *browser
			path, find string
			want       []string
		}{
			{searchOwner, "/orders", "[data-testid=outcome-vcg]", []string{"Its VCG payment was $740.00: a lower bid could have saved at most $0.00."}},
			{fin, "/finance/auctions/1", "[data-testid=vcg-payment]", []string{"VCG payment $740.00, the least a core payment could be."}},
		} {
			_, doc := p.b.get(p.path)
			got := strings.Join(strings.Fields(doc.Find(p.find).Text()), " ")
			for _, w := range p.want {
				if doc.Find(p.find).Length() != 1 || !strings.Contains(got, w) {
					t.Errorf("%s: %s is %q, want it to say %q", p.path, p.find, got, w)
				}
			}
		}
		_, m = f.api(f.token(finUser), "GET", "/api/v1/auctions/1/settlement", "")
		for _, l := range m["lines"].([]any) {
			if line := l.(map[string]any); line["payment_rule"] != map[any]any{"search": "core_least_revenue"}[line["team"]] {
				t.Errorf("API line %v after the fallback: payment_rule %v", line, line["payment_rule"])
			}
		}
		req, _ = http.NewRequest(http.MethodGet, f.srv.URL+"/finance/auctions/1/settlement.csv", nil)
		req.Header.Set("Authorization", "Bearer "+f.token(finUser))
		res, err = http.DefaultClient.Do(req)
		must(err)
		recs, err = csv.NewReader(res.Body).ReadAll()
		res.Body.Close()
		must(err)
		for _, r := range recs[1:] {
			if want := map[string]string{"search": "core_least_revenue"}[r[team]]; r[ruleCol] != want {
				t.Errorf("settlement CSV line %q after the fallback: payment_rule %q, want %q", r, r[ruleCol], want)
			}
		}
		// A run from before the parts were recorded says nothing of them.
		must(db.Write.Exec("UPDATE auction_runs SET final_parts = NULL, core_parts = NULL, least_revenue_parts = NULL WHERE auction_id = 1").Error)
		_, m = f.api(f.token(finUser), "GET", "/api/v1/auctions/1/settlement", "")
		if fr, _ := m["final_round"].(map[string]any); fr == nil || fr["parts"] != nil || fr["least_revenue_parts"] != nil {
			t.Errorf("API final_round of a run without parts recorded: %v, want no parts", m["final_round"])
		}
		if _, doc := owner.get("/auctions/1"); doc.Find("[data-testid=final-parts]").Length() != 0 || doc.Find("[data-testid=final-rule]").Length() != 1 {
			t.Errorf("/auctions/1 without parts recorded: %q", doc.Find("[data-testid=final-round]").Text())
		}
	})
}

// A final round cut short by its time limit shows its gap and bound.
func TestFinalRoundShowsTheGapWhenNotProved(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	v := templates.FinalRoundView{Welfare: 95 * templates.Money(ledger.Dollar), ClockWelfare: 60 * templates.Money(ledger.Dollar),
		Added: 35 * templates.Money(ledger.Dollar), Bound: 100 * templates.Money(ledger.Dollar), Gap: "5.00%", Seconds: "10.00 s"}
	if err := templates.FinalRound(v).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	gap := doc.Find("[data-testid=final-gap]").Text()
	if !strings.Contains(gap, "5.00%") || !strings.Contains(gap, "$100.00") || doc.Find("[data-testid=final-proved]").Length() != 0 {
		t.Fatalf("gap %q", gap)
	}
}

// Operators set the final round's time limit when they schedule an auction; 0
// turns it off, and a bad value is refused, naming the field, scheduling nothing.
func TestScheduleFormSetsTheFinalRound(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.user("op@x.io", identity.RoleOperator, "")
	op := f.browser()
	op.login("op@x.io")
	_, doc := op.get("/operate")
	if v, _ := doc.Find("input[name=final]").Attr("value"); v != "10" {
		t.Fatalf("the form offers %q seconds, want the default 10", v)
	}
	// The form states the trade-off between the two market policies.
	policy := strings.Join(strings.Fields(doc.Find("[data-testid=auction-policy]").Text()), " ")
	for _, want := range []string{"clock only", "same price per unit", "final round", "core payments", "at least their VCG payment", "up to twice these seconds"} {
		if !strings.Contains(policy, want) {
			t.Errorf("the schedule form's trade-off does not say %q: %q", want, policy)
		}
	}
	for i, c := range []struct {
		final, want string
	}{{"3", `"final_round":{"seconds":3}`}, {"0", `"final_round":{"off":true}`}} {
		tok := op.csrf("/operate")
		opens := f.clock.Now().Add(time.Duration(i+1) * 24 * time.Hour)
		res, _ := op.post("/operate/auctions", url.Values{"csrf_token": {tok}, "opens": {opens.Format("2006-01-02T15:04")},
			"closes": {opens.Add(time.Hour).Format("2006-01-02T15:04")}, "final": {c.final}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("final %s: %d", c.final, res.StatusCode)
		}
		a, err := f.market.Auction(ctx, int64(i+1))
		if err != nil || !strings.Contains(a.Params, c.want) {
			t.Fatalf("final %s: auction params %q, want %s (%v)", c.final, a.Params, c.want, err)
		}
	}
	tok := op.csrf("/operate")
	res, doc := op.post("/operate/auctions", url.Values{"csrf_token": {tok}, "opens": {"2030-01-01T09:00"}, "closes": {"2030-01-01T10:00"}, "final": {"-1"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(doc.Text(), "final round's time limit") {
		t.Fatalf("a negative limit: %d", res.StatusCode)
	}
	if _, err := f.market.Auction(ctx, 3); err == nil {
		t.Fatal("a refused form scheduled an auction")
	}
}
