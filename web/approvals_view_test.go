package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// A pending order shows who asked, when, what it could cost and what the team has
// available; Withdraw is not offered beside Approve.
func TestApprovalsShowWhatAnOwnerNeeds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	if err := f.market.SetApprovalThreshold(ctx, "search", int64(10*ledger.Dollar)); err != nil {
		t.Fatal(err)
	}
	member := f.user("mia@x.io", identity.RoleMember, "search")
	f.user("sam@x.io", identity.RoleOwner, "search")
	limit := 40 * ledger.Dollar
	if _, err := f.market.PlaceOrder(ctx, member, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": 5}}}); err != nil {
		t.Fatal(err)
	}
	owner := f.browser()
	owner.login("sam@x.io")
	_, doc := owner.get("/approvals")
	row := doc.Find("[data-testid=orders] tbody tr").First()
	if s := row.Find("[data-testid=requester]").Text(); !strings.Contains(s, "mia@x.io") {
		t.Errorf("requester %q", s)
	}
	if s := strings.Join(strings.Fields(row.Find("[data-testid=max-cost]").Text()), " "); s != "could pay up to $40.00" {
		t.Errorf("max cost %q", s)
	}
	if s := strings.Join(strings.Fields(doc.Find("[data-testid=approvals-available]").Text()), " "); !strings.Contains(s, "$960.00 available") {
		t.Errorf("available budget %q", s)
	}
	if row.Find("[data-testid=approve]").Length() != 1 || row.Find("[data-testid=withdraw]").Length() != 0 {
		t.Errorf("approve %d, withdraw %d: want Approve without Withdraw beside it", row.Find("[data-testid=approve]").Length(), row.Find("[data-testid=withdraw]").Length())
	}
	if s := doc.Find("[data-testid=approval-rule]").Text(); !strings.Contains(s, "$10.00") {
		t.Errorf("approval rule %q", s)
	}
}

// An order with a limit per cluster shows each bundle's limit to the owner who
// approves it (not templ source), and the limit column says each has its own.
func TestApprovalsShowEachBundlesOwnLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	if err := f.market.SetApprovalThreshold(ctx, "search", int64(10*ledger.Dollar)); err != nil {
		t.Fatal(err)
	}
	member := f.user("mia@x.io", identity.RoleMember, "search")
	f.user("sam@x.io", identity.RoleOwner, "search")
	if _, err := f.market.PlaceOrder(ctx, member, exchange.OrderSpec{Team: "search", Limits: []ledger.Money{40 * ledger.Dollar, 25 * ledger.Dollar},
		Bundles: []exchange.Bundle{{"us-east/cpu": 5}, {"us-east/cpu": 3}}}); err != nil {
		t.Fatal(err)
	}
	owner := f.browser()
	owner.login("sam@x.io")
	for _, path := range []string{"/approvals", "/orders"} {
		_, doc := owner.get(path)
		row := doc.Find("[data-testid=orders] tbody tr").First()
		var limits []string
		row.Find("[data-testid=bundle-limit]").Each(func(_ int, s *goquery.Selection) {
			limits = append(limits, strings.Join(strings.Fields(s.Text()), " "))
		})
		if strings.Join(limits, "|") != "· pay at most $40.00|· pay at most $25.00" {
			t.Errorf("%s: bundle limits %q", path, limits)
		}
		if s := row.Find("[data-testid=limit-each]").Text(); s == "" {
			t.Errorf("%s: the limit column is empty for an order with a limit per bundle", path)
		}
	}
}
