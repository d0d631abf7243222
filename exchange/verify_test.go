package exchange_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// settledMarket is the test market after an auction with a winner that pays, a
// seller, a loser, a withdrawn order and one left awaiting approval.
func settledMarket(t *testing.T, db *store.DB) *market {
	t.Helper()
	mk := newAuctionMarket(t, db)
	ctx := context.Background()
	must := func(_ exchange.Order, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(500), Bundles: []exchange.Bundle{{"us-east/cpu": 50}}}))
	must(mk.Order("member@ads", exchange.OrderSpec{Team: "ads", Limit: money(-1), Bundles: []exchange.Bundle{{"us-east/cpu": -30}}}))
	must(mk.Order("member@ml", exchange.OrderSpec{Team: "ml", Limit: money(0.5), Bundles: []exchange.Bundle{{"eu-west/cpu": 10}}}))
	gone, err := mk.Order("member@ml", exchange.OrderSpec{Team: "ml", Limit: money(50), Bundles: []exchange.Bundle{{"eu-west/cpu": 5}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mk.M.WithdrawOrder(ctx, mk.Users["member@ml"], gone.ID); err != nil {
		t.Fatal(err)
	}
	must(mk.Order("member@ml", exchange.OrderSpec{Team: "ml", Limit: money(400), Bundles: []exchange.Bundle{{"eu-west/cpu": 20}}}))
	mk.Clock.Advance(time.Hour)
	if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
		t.Fatal(err)
	}
	return mk
}

// Verify finds nothing in a sound market, and each of its checks names the
// corruption it is there for.
func TestVerifyNamesEveryBrokenInvariant(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := settledMarket(t, db)
		if vs := mk.Violations(); len(vs) != 0 {
			t.Fatalf("a sound market has violations: %v", vs)
		}
	})
	for check, corrupt := range map[string]string{
		"entry sums to zero":                       `UPDATE ledger_postings SET amount = amount + 1 WHERE entry_id = (SELECT MAX(id) FROM ledger_entries) AND amount > 0`,
		"balance equals postings":                  `UPDATE ledger_accounts SET balance = balance + 7 WHERE id = 'treasury'`,
		"held equals active holds":                 `UPDATE ledger_accounts SET held = held + 7 WHERE id = 'team:search'`,
		"trial balance is zero":                    `UPDATE ledger_accounts SET balance = balance + 5 WHERE id = 'grants'`,
		"hold resolved consistently":               `UPDATE ledger_holds SET resolved_at = NULL WHERE status <> 'active'`,
		"live order holds money":                   `UPDATE orders SET status = 'open' WHERE status = 'lost'`,
		"final order holds nothing":                `UPDATE ledger_holds SET status = 'active', resolved_at = NULL, resolve_key = NULL WHERE id = (SELECT hold_id FROM orders WHERE status = 'lost')`,
		"no live order in a finished auction":      `UPDATE orders SET status = 'awaiting_approval' WHERE hold_id IS NULL`,
		"one binding run per finished auction":     `UPDATE auction_runs SET binding = FALSE`,
		"settlement lines only for decided orders": `UPDATE orders SET status = 'withdrawn' WHERE status = 'won' AND hold_id IS NULL`,
		"every decided order has its line":         `DELETE FROM settlement_lines WHERE payment > 0`,
		"quota set aside only for live orders":     `INSERT INTO quota_holds (order_id, team_id, pool_id, quantity) SELECT id, team_id, 'us-east/cpu', 1 FROM orders WHERE status = 'lost'`,
		"holdings within capacity":                 `UPDATE holdings SET quantity = 1000 WHERE team_id = 'search'`,
		"winners paid what they won":               `UPDATE settlement_lines SET payment = payment + 1 WHERE payment > 0`,
	} {
		t.Run(check, func(t *testing.T) {
			db := storetest.New(t)
			mk := settledMarket(t, db)
			if err := db.Write.Exec(corrupt).Error; err != nil {
				t.Fatalf("corrupting: %v", err)
			}
			var names []string
			for _, v := range mk.Violations() {
				names = append(names, v.Check)
			}
			if !strings.Contains(strings.Join(names, "|"), check) {
				t.Fatalf("after %q verify found %v, not %q", corrupt, names, check)
			}
		})
	}
}

// Verify's messages print the sums themselves, on both databases: on PostgreSQL a
// SUM is a numeric, which used to print as a pointer ("its postings sum to
// 0x153e8cb24e10").
func TestVerifyPrintsSumsAsNumbers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := settledMarket(t, db)
		var treasury, posted int64
		if err := db.Read.Raw(`SELECT balance FROM ledger_accounts WHERE id = 'treasury'`).Scan(&treasury).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Read.Raw(`SELECT COALESCE(SUM(amount), 0) FROM ledger_postings WHERE account_id = 'treasury'`).Scan(&posted).Error; err != nil {
			t.Fatal(err)
		}
		for _, corrupt := range []string{`UPDATE ledger_accounts SET balance = balance + 7 WHERE id = 'treasury'`,
			`UPDATE ledger_postings SET amount = amount + 1 WHERE entry_id = (SELECT MAX(id) FROM ledger_entries) AND amount > 0`} {
			if err := db.Write.Exec(corrupt).Error; err != nil {
				t.Fatal(err)
			}
		}
		want := map[string]*regexp.Regexp{
			"balance equals postings": regexp.MustCompile(fmt.Sprintf(`^account treasury has balance %d but its postings sum to %d$`, treasury+7, posted)),
			"entry sums to zero":      regexp.MustCompile(`^entry \d+ has \d+ postings summing to 1 micro-dollars$`),
			"trial balance is zero":   regexp.MustCompile(`^account balances sum to \d+ micro-dollars$`),
		}
		found := map[string]bool{}
		for _, v := range mk.Violations() {
			if re, ok := want[v.Check]; ok && (v.Check != "balance equals postings" || strings.HasPrefix(v.Detail, "account treasury ")) {
				found[v.Check] = true
				if !re.MatchString(v.Detail) {
					t.Errorf("%s: %q, want %s", v.Check, v.Detail, re)
				}
			}
		}
		if len(found) != len(want) {
			t.Errorf("found %v of %d checks", found, len(want))
		}
	})
}
