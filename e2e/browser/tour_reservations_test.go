package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/clearhouse/clearhouse/e2e/e2etest"
)

// TestBrowserReservation walks a team member through the reservation form on the
// demo market: a quote first, then the reservation, its row and timeline, and the
// hold and reservation charges on the team's page.
func TestBrowserReservation(t *testing.T) {
	t.Parallel()
	app, logins := e2etest.StartDemo(t)
	ctx := e2etest.NewBrowser(t)
	base := app.Server.URL()
	e2etest.SignIn(t, ctx, base, "member@search.example.com", logins["member@search.example.com"])
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/reservations"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=reservation-form]`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid=field-cluster]`), "ap-south"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-u.cpu"]`), "2"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-u.ram"]`), "8"),
		chromedp.SetValue(chromedp.CSS(`[data-testid=field-count]`), "10"),
		chromedp.SetValue(chromedp.CSS(`[data-testid=field-duration]`), "1h"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-value]`), "50"),
		chromedp.Click(chromedp.CSS(`[data-testid=reservation-quote]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=quote]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "reservation-quote")
	// Search holds ap-south CPU but no RAM there: the RAM is priced.
	if q := e2etest.Text(t, ctx, `[data-testid=quote]`); !strings.Contains(q, "$") || !strings.Contains(q, "beyond your quota") {
		t.Fatalf("quote %q", q)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=reservation-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash-ok`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "reservations")
	if s := e2etest.Text(t, ctx, `.flash-ok`); !strings.Contains(s, "accepted") || !strings.Contains(s, "held on your budget") {
		t.Fatalf("flash %q", s)
	}
	if s := e2etest.Text(t, ctx, `[data-testid=reservations] tbody tr:first-child`); !strings.Contains(s, "10 × 2 core cpu + 8 GiB ram in ap-south") {
		t.Fatalf("newest reservation row %q", s)
	}
	if n := e2etest.Text(t, ctx, `[data-testid="timeline-ap-south/ram"]`); !strings.Contains(n, "#") {
		t.Fatalf("no timeline for ap-south/ram: %q", n)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/team"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=held]`))); err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "team-with-reservations")
	page := e2etest.Text(t, ctx, `main`)
	if !strings.Contains(page, "Reservation #") || !strings.Contains(page, "Charge for reservation #") {
		t.Fatalf("the team page shows no reservation hold or charge:\n%s", page)
	}
}
