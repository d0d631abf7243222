package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
)

// TestBrowserLostOrderSaysWhy: on the demo, a bid of one cent for ten us-east cores
// loses at the close, and its team sees why on the orders page and in its
// notification: the bundle's cost at the final prices, with the price per core,
// above its limit.
func TestBrowserLostOrderSaysWhy(t *testing.T) {
	t.Parallel()
	app, logins := e2etest.StartDemo(t)
	ctx := e2etest.NewBrowser(t) // after the demo: its 5-minute guard must not include the seeding
	base := app.Server.URL()
	bg := context.Background()
	const who = "member@search.example.com"
	u, err := app.Identity.UserByEmail(bg, who)
	if err != nil {
		t.Fatal(err)
	}
	a, ok, err := app.Market.CurrentAuction(bg)
	if err != nil || !ok {
		t.Fatalf("the demo has no open auction: %v", err)
	}
	limit := ledger.Dollar / 100
	o, err := app.Market.PlaceOrder(bg, u, exchange.OrderSpec{Team: u.TeamID, Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": 10}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Market.Close(bg, a.ID); err != nil {
		t.Fatal(err)
	}
	e2etest.SignIn(t, ctx, base, who, logins[who])
	row := fmt.Sprintf(`[data-testid=order-%d] [data-testid=outcome]`, o.ID)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/orders"), chromedp.WaitVisible(chromedp.CSS(row))); err != nil {
		e2etest.Screenshot(t, ctx, "debug")
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "lost-order")
	s := strings.Join(strings.Fields(e2etest.Text(t, ctx, row)), " ")
	if !strings.HasPrefix(s, "lost: at the final prices its nearest bundle (1) costs $") || !strings.Contains(s, "10 cores of us-east/cpu at $") ||
		!strings.Contains(s, "above its limit of $0.01") {
		t.Fatalf("the lost order's outcome %q does not say why", s)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/notifications"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=notifications]`))); err != nil {
		t.Fatal(err)
	}
	n := strings.Join(strings.Fields(e2etest.Text(t, ctx, `[data-testid=notifications]`)), " ")
	if want := fmt.Sprintf("Order #%d got nothing: at the final prices its nearest bundle (1) costs $", o.ID); !strings.Contains(n, want) || !strings.Contains(n, "above its limit of $0.01") {
		t.Fatalf("the notification does not say why order %d lost:\n%s", o.ID, n)
	}
}
