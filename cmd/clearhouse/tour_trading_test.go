package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserTradeBetweenClustersAndMultiPoolOffer: on the demo, a member of
// search moves quota from eu-west to us-east in one order (priced first, a bad
// quantity refused in words), and the owner of storage offers disk of two clusters
// in one order.
func TestBrowserTradeBetweenClustersAndMultiPoolOffer(t *testing.T) {
	ctx := newBrowser(t)
	app, logins := startDemo(t)
	base := app.Server.URL()
	signIn(t, ctx, base, "member@search.example.com", logins["member@search.example.com"])
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/orders"),
		chromedp.Click(chromedp.CSS(`[data-testid=new-move]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=move-form]`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid=field-from]`), "eu-west"),
		chromedp.SetValue(chromedp.CSS(`[data-testid=field-to]`), "us-east"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-q.cpu"]`), "500000"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-amount]`), "2,000"),
		chromedp.Click(chromedp.CSS(`[data-testid=move-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="error-q.cpu"]`)),
	)
	if err != nil {
		screenshot(t, ctx, "debug")
		t.Fatal(err)
	}
	if s := text(t, ctx, `[data-testid="error-q.cpu"]`); !strings.Contains(s, "Your team has only") || !strings.Contains(s, "core of cpu free to sell in eu-west") {
		t.Fatalf("too much to move: %q", s)
	}
	err = chromedp.Do(ctx,
		chromedp.Clear(chromedp.CSS(`[data-testid="field-q.cpu"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-q.cpu"]`), "100"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-q.ram"]`), "400"),
		chromedp.Click(chromedp.CSS(`[data-testid=move-price]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=move-estimate]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "move-priced")
	if s := text(t, ctx, `[data-testid=move-estimate]`); !strings.Contains(s, "eu-west/cpu: sell 100 core") || !strings.Contains(s, "us-east/ram: buy 400 GiB") {
		t.Fatalf("estimate %q", s)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=move-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if s := text(t, ctx, `[data-testid=flash]`); !strings.Contains(s, "moves quota from eu-west to us-east") {
		t.Fatalf("flash %q", s)
	}
	if s := text(t, ctx, `[data-testid=orders]`); !strings.Contains(s, "eu-west/cpu -100") || !strings.Contains(s, "us-east/ram +400") {
		t.Fatalf("orders table %q", s)
	}
	screenshot(t, ctx, "orders-after-move")

	own := newBrowser(t)
	signIn(t, own, base, "owner@storage.example.com", logins["owner@storage.example.com"])
	err = chromedp.Do(own,
		chromedp.Navigate(base+"/orders/offer"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=offer-form]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-sell.us-east/disk"]`), "100"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-sell.eu-west/disk"]`), "50"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-minimum]`), "300"),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, own, "offer-two-pools")
	err = chromedp.Do(own,
		chromedp.Click(chromedp.CSS(`[data-testid=offer-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if s := text(t, own, `[data-testid=flash]`); !strings.Contains(s, "sells 50 of eu-west/disk and 100 of us-east/disk") {
		t.Fatalf("flash %q", s)
	}
	if s := text(t, own, `[data-testid=orders] tbody tr:nth-child(1)`); !strings.Contains(s, "eu-west/disk -50, us-east/disk -100") {
		t.Fatalf("the newest order %q", s)
	}
}
