package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func TestBrowserSignIn(t *testing.T) {
	t.Parallel()
	ctx := e2etest.NewBrowser(t)
	app := e2etest.StartApp(t, storetest.NewClock(time.Time{}))
	bg := context.Background()
	if _, err := app.Market.AddTeam(bg, exchange.NewTeam{ID: "search", Name: "Search"}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Identity.AddUser(bg, identity.NewUser{Email: "ana@x.io", Role: identity.RoleMember, TeamID: "search", Password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(app.Server.URL()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-email]`), "ana@x.io"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-password]`), "not the password"),
		chromedp.Click(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-error]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "login-error")
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-password]`), "correct horse battery"),
		chromedp.Click(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=viewer]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	who, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=viewer]`)))
	if err != nil || !strings.Contains(who, "ana@x.io") || !strings.Contains(who, "search") {
		t.Fatalf("viewer %q, %v", who, err)
	}
	e2etest.Screenshot(t, ctx, "market")
}
