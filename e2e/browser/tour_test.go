package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/clearhouse/clearhouse/e2e/e2etest"
)

// TestBrowserBidEntry walks a team member through the two-step bid form on the
// demo market, then checks the order, the budget hold, and that an operator sees
// it among the open trades.
func TestBrowserBidEntry(t *testing.T) {
	t.Parallel()
	app, logins := e2etest.StartDemo(t)
	ctx := e2etest.NewBrowser(t)
	base := app.Server.URL()
	e2etest.SignIn(t, ctx, base, "member@search.example.com", logins["member@search.example.com"])
	e2etest.Screenshot(t, ctx, "market")
	if s := e2etest.Text(t, ctx, `[data-testid=auction-banner]`); !strings.Contains(s, "takes bids until") {
		t.Fatalf("market banner %q: the demo's auction should be open", s)
	}
	before := e2etest.Text(t, ctx, `[data-testid="pool-us-east/cpu"] [data-testid=price]`)
	if before == "—" {
		t.Fatal("the demo's open auction has no preliminary price")
	}

	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/orders/new"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=bid-step1]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=bid-next]`)), // nothing entered
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=form-errors]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-q.cpu"]`), "40"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-q.ram"]`), "160"),
		chromedp.Click(chromedp.CSS(`[data-testid=cluster-us-east]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=cluster-ap-south]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=bid-next]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=bid-step2]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "bid-step2")
	if s := e2etest.Text(t, ctx, `[data-testid=bundles]`); !strings.Contains(s, "us-east/cpu +40") || !strings.Contains(s, "ap-south/ram +160") {
		t.Fatalf("bundles table %q", s)
	}
	// A limit that is not an amount is refused and the form keeps the requirement.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-limit]`), "lots"),
		chromedp.Click(chromedp.CSS(`[data-testid=bid-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=error-limit]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.Clear(chromedp.CSS(`[data-testid=field-limit]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-limit]`), "4,500"),
		chromedp.Click(chromedp.CSS(`[data-testid=bid-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if s := e2etest.Text(t, ctx, `[data-testid=flash]`); !strings.Contains(s, "placed") {
		t.Fatalf("flash %q", s)
	}
	e2etest.Screenshot(t, ctx, "orders")
	if s := e2etest.Text(t, ctx, `[data-testid=orders]`); !strings.Contains(s, "us-east/cpu +40") || !strings.Contains(s, "4,500.00") {
		t.Fatalf("orders table %q", s)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/team"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=held]`))); err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "team")
	if s := e2etest.Text(t, ctx, `[data-testid=holds]`); !strings.Contains(s, "4,500.00") {
		t.Fatalf("the bid's hold is not listed: %q", s)
	}
	// Other roles' pages are refused.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/finance"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=error]`))); err != nil {
		t.Fatal(err)
	}

	op := e2etest.NewBrowser(t)
	e2etest.SignIn(t, op, base, "operator@example.com", logins["operator@example.com"])
	if err := chromedp.Do(op, chromedp.Navigate(base+"/operate/trades"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=orders]`))); err != nil {
		t.Fatal(err)
	}
	if s := e2etest.Text(t, op, `[data-testid=orders]`); !strings.Contains(s, "us-east/cpu +40") {
		t.Fatalf("the operator does not see the bid: %q", s)
	}
	for _, page := range []string{"/operate", "/operate/curves/standard", "/operate/stats", "/auctions", "/auctions/1"} {
		if err := chromedp.Do(op, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS(`main`))); err != nil {
			t.Fatal(err)
		}
		e2etest.Screenshot(t, op, "operator"+strings.ReplaceAll(page, "/", "-"))
	}
	// The operator closes the auction now, after a page that says what closing does;
	// the member sees the win and the debit.
	err = chromedp.Do(op,
		chromedp.Navigate(base+"/operate"),
		chromedp.Click(chromedp.CSS(`[data-testid=close]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=close-confirm]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if s := e2etest.Text(t, op, `[data-testid=close-confirm]`); !strings.Contains(s, "orders take part") || !strings.Contains(s, "cannot be undone") {
		t.Fatalf("the confirmation does not say what closing does: %q", s)
	}
	e2etest.Screenshot(t, op, "operator-close-confirm")
	err = chromedp.Do(op,
		chromedp.Click(chromedp.CSS(`[data-testid=close-confirm-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if s := e2etest.Text(t, op, `[data-testid=auction-status]`); s != "settled" {
		t.Fatalf("after closing, the auction is %q", s)
	}
	e2etest.Screenshot(t, op, "operator-closed")
	e2etest.CloseTab(t, op)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/orders"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=orders]`))); err != nil {
		t.Fatal(err)
	}
	if s := e2etest.Text(t, ctx, `[data-testid=orders] tr:nth-child(1) [data-testid=status]`); s != "won" {
		t.Fatalf("the member's newest order is %q, want won", s)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/team"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=statement]`))); err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "team-after-settlement")
	if s := e2etest.Text(t, ctx, `[data-testid=statement]`); !strings.Contains(s, "settlement") {
		t.Fatalf("no settlement debit on the statement: %q", s)
	}
	e2etest.CloseTab(t, ctx)

	fin := e2etest.NewBrowser(t)
	e2etest.SignIn(t, fin, base, "finance@example.com", logins["finance@example.com"])
	for _, page := range []string{"/finance", "/finance/auctions/1", "/finance/teams/search"} {
		if err := chromedp.Do(fin, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS(`main`))); err != nil {
			t.Fatal(err)
		}
		e2etest.Screenshot(t, fin, "finance"+strings.ReplaceAll(page, "/", "-"))
	}
	if s := e2etest.Text(t, fin, `[data-testid=closing]`); s == "" {
		t.Fatal("no closing balance on the statement")
	}
	// Finance downloads the settlement report of the auction just closed.
	if err := chromedp.Do(fin, chromedp.Navigate(base+"/finance/auctions/8"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=settlement-csv]`))); err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, fin, "finance-settlement-8")
	if s := e2etest.Text(t, fin, `[data-testid=balanced]`); !strings.Contains(s, "Buyers paid = sellers received + treasury net") {
		t.Fatalf("the report does not balance: %q", s)
	}
	csvText, err := chromedp.Run(fin, chromedp.Evaluate[string](`fetch(document.querySelector("[data-testid=settlement-csv]").href).then(r => r.text())`,
		func(p *runtime.EvaluateParams) { p.AwaitPromise = new(true) }))
	if err != nil || !strings.HasPrefix(csvText, "auction_id,order_id,team,") || !strings.Contains(csvText, ",search,") {
		t.Fatalf("settlement CSV %q, %v", csvText, err)
	}
}
