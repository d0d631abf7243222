package exchange_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// A market where the clock strands value: search wants 100 eu-west cores together
// with 400 us-east GiB for $900, ads 60 eu-west cores for $400, ml 300 us-east GiB
// for $290. The clock raises both prices until ads and then search drop out, and
// ends with ml alone (welfare $260), the eu-west cores unsold. The final round
// gives search its bundle (welfare $760). Settlement charges the final round's
// core payment, here search's VCG payment (it is the only winner): the $400 and
// $290 that ads and ml offered, less the reserve value of their bundles ($60 and
// $30), plus the reserve value of search's ($140), so $740, below its limit and
// below its bundle at the clock's prices (which cost more than its limit); the report
// lists search and ml as changed and search's payment as not uniform with both
// amounts, the ledger sums to zero, closing again changes nothing, and Verify finds
// nothing.
func TestTheBindingRunSettlesTheFinalRound(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		ids := map[string]int64{}
		for _, o := range []struct {
			who  string
			spec exchange.OrderSpec
		}{
			{"member@search", exchange.OrderSpec{Team: "search", Limit: money(900), Bundles: []exchange.Bundle{{"eu-west/cpu": 100, "us-east/ram": 400}}}},
			{"member@ads", exchange.OrderSpec{Team: "ads", Limit: money(400), Bundles: []exchange.Bundle{{"eu-west/cpu": 60}}}},
			{"member@ml", exchange.OrderSpec{Team: "ml", Limit: money(290), Bundles: []exchange.Bundle{{"us-east/ram": 300}}}},
		} {
			got, err := mk.Order(o.who, o.spec)
			if err != nil {
				t.Fatal(err)
			}
			ids[o.spec.Team] = got.ID
		}
		run, err := mk.M.Close(ctx, mk.AuctionID)
		if err != nil || !run.Converged {
			t.Fatalf("close: %+v %v", run, err)
		}
		if !run.FinalRound || !run.Optimal || run.Welfare <= run.ClockWelfare || run.WelfareBound != run.Welfare || run.Gap() != 0 {
			t.Fatalf("binding run %+v: want a final round proved optimal above the clock", run)
		}
		if run.Payments != auction.PaymentsCore {
			t.Fatalf("binding run's payments %q, want core", run.Payments)
		}
		rep, err := mk.M.SettlementReport(ctx, mk.AuctionID)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Run.ID != run.ID || !rep.Run.FinalRound {
			t.Fatalf("report run %+v", rep.Run)
		}
		// The run records, and the report reads back, which rule paid which part:
		// one part (search's bundle joins both pools that ads and ml bid in), paid
		// core payments at the point nearest VCG.
		if got := partsOf(rep.Run); got != "1 1 0" {
			t.Fatalf("stored parts, core parts, least-revenue parts %q, want 1 1 0", got)
		}
		byTeam := map[string]exchange.ReportLine{}
		for _, l := range rep.Lines {
			byTeam[l.TeamID] = l
		}
		search := byTeam["search"]
		if search.BundleIndex != 0 || search.Payment != int64(740*ledger.Dollar) || search.ClockBundle != -1 {
			t.Fatalf("search: %+v, want bundle 0 for its VCG payment $740, lost under the clock", search)
		}
		if search.PaymentRule != exchange.PaidCore || byTeam["ml"].PaymentRule != "" {
			t.Fatalf("payment rules: search %q, ml %q; want core (nearest VCG) and none for a loser", search.PaymentRule, byTeam["ml"].PaymentRule)
		}
		// Its VCG payment is stored with its outcome (here the core payment is the
		// VCG payment: search wins alone); the losers have none.
		if v := search.VCGPayment; v == nil || math.Abs(*v-740) > 1e-6 || byTeam["ml"].VCGPayment != nil || byTeam["ads"].VCGPayment != nil {
			t.Fatalf("VCG payments: search %v, ml %v, ads %v; want 740 and none for the losers", search.VCGPayment, byTeam["ml"].VCGPayment, byTeam["ads"].VCGPayment)
		}
		if search.AtPrices <= 900 || search.Uniform() {
			t.Fatalf("search's bundle at prices is %v: the clock's prices should price it above its limit", search.AtPrices)
		}
		if ml := byTeam["ml"]; ml.BundleIndex != -1 || ml.ClockBundle != 0 || ml.Payment != 0 {
			t.Fatalf("ml: %+v, want lost (won under the clock)", ml)
		}
		if ads := byTeam["ads"]; ads.BundleIndex != -1 || ads.ClockBundle != -1 {
			t.Fatalf("ads: %+v, want lost under both", ads)
		}
		changes, err := mk.M.FinalRoundChanges(ctx, rep.Run)
		if err != nil {
			t.Fatal(err)
		}
		var changed, nonUniform []int64
		for _, c := range changes {
			if c.Changed {
				changed = append(changed, c.OrderID)
			}
			if !c.Uniform {
				nonUniform = append(nonUniform, c.OrderID)
				if c.Payment != 740 || c.AtPrices != search.AtPrices || c.Bundle == nil {
					t.Fatalf("non-uniform %+v, want search paying 740 against %v", c, search.AtPrices)
				}
			}
		}
		if fmt.Sprint(changed) != fmt.Sprint([]int64{ids["search"], ids["ml"]}) || fmt.Sprint(nonUniform) != fmt.Sprint([]int64{ids["search"]}) {
			t.Fatalf("changed %v (want search and ml), non-uniform %v (want search)", changed, nonUniform)
		}
		if rep.BuyersPaid != 740*ledger.Dollar || rep.TreasuryNet != rep.BuyersPaid-rep.SellersReceived {
			t.Fatalf("report totals %+v", rep)
		}
		if b := mk.Balance("search"); b.Posted != 260*ledger.Dollar || b.Held != 0 {
			t.Fatalf("search's balance %+v, want 1000 - 740 posted and nothing held", b)
		}
		tb, _ := mk.L.TrialBalance(ctx)
		var sum ledger.Money
		for _, a := range tb {
			sum += a.Posted
		}
		if sum != 0 {
			t.Fatalf("trial balance %s", sum)
		}
		before := mk.snapshot()
		if again, err := mk.M.Close(ctx, mk.AuctionID); err != nil || again.ID != run.ID {
			t.Fatalf("close again: %+v %v", again, err)
		}
		if after := mk.snapshot(); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatal("closing a settled auction again changed state")
		}
		// Search's team is told which rule settled and what it means for bidding.
		ns := notices(t, mk.Market, "member@search")
		if len(ns) != 1 || !strings.Contains(ns[0].Body, exchange.SettlementRule(&auction.FinalRound{Payments: auction.PaymentsCore})) {
			t.Errorf("search's settlement notice does not say core payments settled it: %+v", ns)
		}
		if want := fmt.Sprintf("Order #%d won eu-west/cpu +100, us-east/ram +400 and paid $740.00 (its VCG payment $740.00).", ids["search"]); len(ns) != 1 || !strings.Contains(ns[0].Body, want) {
			t.Errorf("search's settlement notice does not give its VCG payment (%q): %+v", want, ns)
		}
		mk.Verify()
	})
}

// The binding run stores the final round's supporting prices (whole micro-dollars
// per unit) and the orders they fail to support, in the settlement transaction: on
// the market above no prices support search winning, and the least violation
// prices ram at ml's limit per unit (290/300) and cpu at what search's limit
// leaves (900 - 400 x 290/300)/100, which leaves ads $92 under its limit for its
// 60 cores: ads is the one order listed, a loser that would want its bundle.
func TestTheBindingRunStoresSupportingPrices(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		ids := map[string]int64{}
		for _, o := range []struct {
			who  string
			spec exchange.OrderSpec
		}{
			{"member@search", exchange.OrderSpec{Team: "search", Limit: money(900), Bundles: []exchange.Bundle{{"eu-west/cpu": 100, "us-east/ram": 400}}}},
			{"member@ads", exchange.OrderSpec{Team: "ads", Limit: money(400), Bundles: []exchange.Bundle{{"eu-west/cpu": 60}}}},
			{"member@ml", exchange.OrderSpec{Team: "ml", Limit: money(290), Bundles: []exchange.Bundle{{"us-east/ram": 300}}}},
		} {
			got, err := mk.Order(o.who, o.spec)
			if err != nil {
				t.Fatal(err)
			}
			ids[o.spec.Team] = got.ID
		}
		run, err := mk.M.Close(ctx, mk.AuctionID)
		if err != nil || !run.FinalRound {
			t.Fatalf("close: %+v %v", run, err)
		}
		rows, unsupported, err := mk.M.SupportingPrices(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		prices := map[string]int64{}
		for _, p := range rows {
			prices[p.PoolID] = *p.SupportingPrice
		}
		// Exactly: the LP's vertex without the perturbation that breaks its ties,
		// rounded to the micro-dollar; the unused us-east cpu stays at its reserve ($1).
		if prices["us-east/ram"] != 966_667 || prices["eu-west/cpu"] != 5_133_333 || prices["us-east/cpu"] != 1_000_000 || len(prices) != 3 {
			t.Fatalf("supporting prices %v, want ram 966,667, eu-west cpu 5,133,333 and us-east cpu 1,000,000 micro-dollars per unit", prices)
		}
		if len(unsupported) != 1 {
			t.Fatalf("unsupported %+v, want ads alone", unsupported)
		}
		// Each team's settlement notice gives the supporting prices of the pools
		// its orders bid in, beside the clock's, and no others.
		for who, want := range map[string]struct{ has, hasNot string }{
			"member@ads": {"eu-west/cpu: $5.133333 per unit (the clock's price $", "us-east/ram"},
			"member@ml":  {"us-east/ram: $0.966667 per unit (the clock's price $", "eu-west/cpu"},
		} {
			ns := notices(t, mk.Market, who)
			if len(ns) != 1 || !strings.Contains(ns[0].Body, "Supporting prices") || !strings.Contains(ns[0].Body, want.has) || strings.Contains(ns[0].Body, want.hasNot) {
				t.Errorf("%s's settlement notice does not give its pools' supporting prices (want %q, not %q): %+v", who, want.has, want.hasNot, ns)
			}
		}
		u := unsupported[0]
		if u.OrderID != ids["ads"] || u.TeamID != "ads" || u.Won || u.Why != "wants" || u.Bundle != nil ||
			u.OtherCost != ledger.Money(60*prices["eu-west/cpu"]) || u.OtherLimit != 400*ledger.Dollar || u.Other["eu-west/cpu"] != 60 {
			t.Fatalf("unsupported %+v, want ads, a loser wanting its 60 cores at $307.99998 against $400", u)
		}
		// Every pool of the run has its supporting price, and only ads is marked.
		var n int64
		if err := db.Read.Raw("SELECT COUNT(*) FROM run_prices WHERE run_id = ? AND supporting_price IS NULL", run.ID).Scan(&n).Error; err != nil || n != 0 {
			t.Fatalf("%d pools without a supporting price (%v)", n, err)
		}
		if err := db.Read.Raw("SELECT COUNT(*) FROM run_outcomes WHERE run_id = ? AND unsupported", run.ID).Scan(&n).Error; err != nil || n != 1 {
			t.Fatalf("%d outcomes marked unsupported (%v), want 1", n, err)
		}
	})
}

// partsOf is a run's recorded parts, core parts and least-revenue parts, "nil"
// when not recorded.
func partsOf(r exchange.AuctionRun) string {
	if r.FinalParts == nil || r.CoreParts == nil || r.LeastRevenueParts == nil {
		return "nil"
	}
	return fmt.Sprint(*r.FinalParts, *r.CoreParts, *r.LeastRevenueParts)
}

// A core part whose nearest-VCG step failed pays the LP's least-revenue core
// point, and the engine counts it in final_round.least_revenue_parts. The engine
// takes that path only on degenerate systems or under an unexported option
// (auction's TestCorePaymentsLeastRevenueFallbackIsCounted), so this test settles
// the engine's own result for the market above with the count set as the engine
// sets it (CloseEditing, a test-only close): on this market the least-revenue
// core point is search's VCG payment anyway, the one core point of least revenue.
// The binding run stores the count in the settlement transaction (both
// databases), the report reads it back, and search's settlement notice says which
// parts paid that point and what still holds.
func TestTheBindingRunStoresLeastRevenueParts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		for _, o := range []struct {
			who  string
			spec exchange.OrderSpec
		}{
			{"member@search", exchange.OrderSpec{Team: "search", Limit: money(900), Bundles: []exchange.Bundle{{"eu-west/cpu": 100, "us-east/ram": 400}}}},
			{"member@ads", exchange.OrderSpec{Team: "ads", Limit: money(400), Bundles: []exchange.Bundle{{"eu-west/cpu": 60}}}},
			{"member@ml", exchange.OrderSpec{Team: "ml", Limit: money(290), Bundles: []exchange.Bundle{{"us-east/ram": 300}}}},
		} {
			if _, err := mk.Order(o.who, o.spec); err != nil {
				t.Fatal(err)
			}
		}
		run, err := mk.M.CloseEditing(ctx, mk.AuctionID, func(res *auction.Result) {
			if f := res.FinalRound; f != nil && f.Payments == auction.PaymentsCore && f.CoreParts == 1 {
				f.LeastRevenueParts = 1
				for i := range res.Winners {
					res.Winners[i].LeastRevenue = res.Winners[i].Core
				}
			}
		})
		if err != nil || run.Payments != auction.PaymentsCore {
			t.Fatalf("close: %+v %v", run, err)
		}
		rep, err := mk.M.SettlementReport(ctx, mk.AuctionID)
		if err != nil {
			t.Fatal(err)
		}
		if got := partsOf(rep.Run); got != "1 1 1" {
			t.Fatalf("stored parts, core parts, least-revenue parts %q, want 1 1 1", got)
		}
		var n int64
		if err := db.Read.Raw("SELECT least_revenue_parts FROM auction_runs WHERE id = ?", run.ID).Scan(&n).Error; err != nil || n != 1 {
			t.Fatalf("auction_runs.least_revenue_parts %d (%v), want 1", n, err)
		}
		// The winner of that part is marked with its outcome (run_outcomes.payment_rule)
		// and its report line; the losers have no rule.
		rules := map[string]string{}
		for _, l := range rep.Lines {
			rules[l.TeamID] = l.PaymentRule
		}
		if rules["search"] != exchange.PaidCoreLeastRevenue || rules["ads"] != "" || rules["ml"] != "" || len(rules) != 3 {
			t.Fatalf("report lines' payment rules %v, want search core_least_revenue and no rule for the losers", rules)
		}
		var stored []string
		if err := db.Read.Raw("SELECT payment_rule FROM run_outcomes WHERE run_id = ? AND bundle_index >= 0", run.ID).Scan(&stored).Error; err != nil ||
			!slices.Equal(stored, []string{exchange.PaidCoreLeastRevenue}) {
			t.Fatalf("run_outcomes.payment_rule of the winners %v (%v), want core_least_revenue", stored, err)
		}
		rule := exchange.SettlementRule(rep.Run.PaymentParts())
		if !strings.Contains(rule, "core payments of least total") || !strings.Contains(rule, "not necessarily the nearest to the VCG payments") ||
			!strings.Contains(rule, "Bid your true value") {
			t.Fatalf("the rule read back does not name the least-revenue point: %q", rule)
		}
		ns := notices(t, mk.Market, "member@search")
		if len(ns) != 1 || !strings.Contains(ns[0].Body, rule) {
			t.Errorf("search's settlement notice does not say core parts paid the least-revenue point: %+v", ns)
		}
		if b := mk.Balance("search"); b.Posted != 260*ledger.Dollar || b.Held != 0 {
			t.Fatalf("search's balance %+v, want 1000 - 740 posted", b)
		}
		mk.Verify()
	})
}

// SettlementRule says which parts paid which rule, where the run recorded it,
// and nothing of parts where it did not.
func TestSettlementRuleNamesTheParts(t *testing.T) {
	for _, c := range []struct {
		f           auction.FinalRound
		has, hasNot []string
	}{
		{auction.FinalRound{Payments: auction.PaymentsCore}, []string{"core payments", "Bid your true value"}, []string{"least total", "parts"}},
		{auction.FinalRound{Payments: auction.PaymentsCore, Parts: 2, CoreParts: 2}, []string{"core payments"}, []string{"least total", "parts"}},
		{auction.FinalRound{Payments: auction.PaymentsCore, Parts: 3, CoreParts: 3, LeastRevenueParts: 1},
			[]string{"In 1 of the 3 independent parts of the market that paid core payments", "least total", "Bid your true value"}, nil},
		{auction.FinalRound{Payments: auction.PaymentsMixed, Parts: 3, CoreParts: 2, LeastRevenueParts: 2},
			[]string{"(in 2 of the market's 3 independent parts)", "Wherever winners paid core payments", "least total"}, nil},
		{auction.FinalRound{Payments: auction.PaymentsMixed}, []string{"elsewhere their bundle at the clock's prices"}, []string{"parts", "least total"}},
	} {
		got := exchange.SettlementRule(&c.f)
		for _, w := range c.has {
			if !strings.Contains(got, w) {
				t.Errorf("%+v: %q does not say %q", c.f, got, w)
			}
		}
		for _, w := range c.hasNot {
			if strings.Contains(got, w) {
				t.Errorf("%+v: %q says %q", c.f, got, w)
			}
		}
	}
}

// Each winner's payment rule follows the engine's marks: the clock's prices
// without a final round, else the least-revenue point, a core payment, or capped
// prices, each with words for pages.
func TestPaymentRuleOf(t *testing.T) {
	for _, c := range []struct {
		w     auction.Winner
		final bool
		want  string
	}{
		{auction.Winner{}, false, exchange.PaidClockPrices},
		{auction.Winner{}, true, exchange.PaidCappedPrices},
		{auction.Winner{Core: true}, true, exchange.PaidCore},
		{auction.Winner{Core: true, LeastRevenue: true}, true, exchange.PaidCoreLeastRevenue},
	} {
		got := exchange.PaymentRuleOf(c.w, c.final)
		if got != c.want || exchange.PaymentRuleWords(got) == "" {
			t.Errorf("%+v (final round %v): %q (%q), want %q", c.w, c.final, got, exchange.PaymentRuleWords(got), c.want)
		}
	}
	if w := exchange.PaymentRuleWords(exchange.PaidCoreLeastRevenue); !strings.Contains(w, "not necessarily the nearest to the VCG payments") {
		t.Errorf("the least-revenue rule in words: %q", w)
	}
	if w := exchange.PaymentRuleWords(""); w != "" {
		t.Errorf("no rule in words: %q", w)
	}
}

// Where the winners of one auction paid under different rules (one part core
// payments, another capped prices), each won order's line in the settlement
// notice says which rule its own payment followed; where they all paid under
// one rule, the paragraph says it and the lines do not repeat it. The engine
// proves both parts of this market optimal (ads' order is alone in us-east/cpu),
// so the test settles its result with ads' part marked as the engine marks a part
// it did not prove (CloseEditing, a test-only close).
func TestSettlementNoticeNamesEachOrdersRuleWhereTheyDiffer(t *testing.T) {
	for _, mixed := range []bool{true, false} {
		t.Run(fmt.Sprint("mixed=", mixed), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				mk := newAuctionMarket(t, db)
				ids := map[string]int64{}
				for _, o := range []struct {
					who  string
					spec exchange.OrderSpec
				}{
					{"member@search", exchange.OrderSpec{Team: "search", Limit: money(900), Bundles: []exchange.Bundle{{"eu-west/cpu": 100, "us-east/ram": 400}}}},
					{"member@ml", exchange.OrderSpec{Team: "ml", Limit: money(290), Bundles: []exchange.Bundle{{"us-east/ram": 300}}}},
					{"member@ads", exchange.OrderSpec{Team: "ads", Limit: money(200), Bundles: []exchange.Bundle{{"us-east/cpu": 40}}}},
				} {
					got, err := mk.Order(o.who, o.spec)
					if err != nil {
						t.Fatal(err)
					}
					ids[o.spec.Team] = got.ID
				}
				run, err := mk.M.CloseEditing(ctx, mk.AuctionID, func(res *auction.Result) {
					f := res.FinalRound
					if f == nil || f.Payments != auction.PaymentsCore || f.Parts != 2 || f.CoreParts != 2 {
						t.Fatalf("the engine's final round %+v: want core payments in both of two parts", f)
					}
					if !mixed {
						return
					}
					f.Payments, f.CoreParts = auction.PaymentsMixed, 1
					for i := range res.Winners {
						if res.Winners[i].ID == fmt.Sprint(ids["ads"]) {
							res.Winners[i].Core = false
						}
					}
				})
				if err != nil || !run.Converged {
					t.Fatalf("close: %+v %v", run, err)
				}
				search, ads := notices(t, mk.Market, "member@search"), notices(t, mk.Market, "member@ads")
				if len(search) != 1 || len(ads) != 1 {
					t.Fatalf("notices: search %d, ads %d; want one each", len(search), len(ads))
				}
				core := fmt.Sprintf("Order #%d won ", ids["search"])
				line := func(body, prefix string) string {
					for _, l := range strings.Split(body, "\n") {
						if strings.Contains(l, prefix) {
							return l
						}
					}
					t.Fatalf("no line with %q in %q", prefix, body)
					return ""
				}
				sl, al := line(search[0].Body, core), line(ads[0].Body, fmt.Sprintf("Order #%d won ", ids["ads"]))
				if mixed {
					if !strings.HasSuffix(sl, ": "+exchange.PaymentRuleWords(exchange.PaidCore)+".") {
						t.Errorf("search's line %q does not say it paid a core payment", sl)
					}
					if !strings.HasSuffix(al, ": "+exchange.PaymentRuleWords(exchange.PaidCappedPrices)+".") || strings.Contains(al, "VCG payment $") {
						t.Errorf("ads' line %q does not say it paid capped prices, or gives a VCG payment it did not pay against", al)
					}
					if !strings.Contains(sl, "(its VCG payment $") {
						t.Errorf("search's line %q does not give its VCG payment", sl)
					}
					if !strings.Contains(search[0].Body, exchange.SettlementRule(&auction.FinalRound{Payments: auction.PaymentsMixed, Parts: 2, CoreParts: 1})) {
						t.Errorf("search's notice lacks the mixed rule's paragraph: %q", search[0].Body)
					}
				} else {
					for _, l := range []string{sl, al} {
						if strings.Contains(l, "core payment") || strings.Contains(l, "clock's prices") {
							t.Errorf("line %q repeats the rule though every winner paid core payments", l)
						}
					}
				}
				mk.Verify()
			})
		})
	}
}
