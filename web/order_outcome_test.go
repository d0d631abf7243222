package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// After settlement the orders page says why a lost order lost (its nearest bundle
// cost more than its limit, with both amounts), and a withdrawn order says it took
// no part rather than "lost".
func TestOrdersSayWhyTheyLostAndWithdrawnIsNotLost(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	member := f.user("mia@x.io", identity.RoleMember, "search")
	place := func(limit ledger.Money, q int64) exchange.Order {
		t.Helper()
		o, err := f.market.PlaceOrder(ctx, member, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": q}}})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	cheap := place(ledger.Dollar/100, 10) // 1 cent for 10 cores: below any reserve
	gone := place(50*ledger.Dollar, 5)
	if err := f.market.WithdrawOrder(ctx, member, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.Close(ctx, 1); err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	b.login("mia@x.io")
	_, doc := b.get("/orders")
	outcome := func(o exchange.Order) string {
		return strings.Join(strings.Fields(doc.Find(fmt.Sprintf("[data-testid=order-%d] [data-testid=outcome]", o.ID)).Text()), " ")
	}
	if s := outcome(cheap); !strings.HasPrefix(s, "lost: at the final prices its nearest bundle (1) costs $") || !strings.Contains(s, "above its limit of $0.01") {
		t.Errorf("the lost order's outcome %q does not say why", s)
	}
	if s := outcome(gone); strings.Contains(s, "lost") || !strings.Contains(s, "withdrawn") {
		t.Errorf("the withdrawn order's outcome %q", s)
	}
}
