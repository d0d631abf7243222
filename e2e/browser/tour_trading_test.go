package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/mailer"
	"github.com/clearhouse/clearhouse/mailer/mailertest"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// TestBrowserTradeBetweenClustersAndMultiPoolOffer: on the demo, a member of
// search cannot sell eu-west quota its team bids for; a member of ads moves quota
// from us-east to eu-west in one order (priced first, a bad quantity refused in
// words, fewer GiB bought than sold), and the owner of storage offers disk of two
// clusters in one order.
func TestBrowserTradeBetweenClustersAndMultiPoolOffer(t *testing.T) {
	t.Parallel()
	app, logins := e2etest.StartDemo(t)
	ctx := e2etest.NewBrowser(t) // after the demo: its 5-minute guard must not include the seeding
	base := app.Server.URL()
	// The demo's search team bids for eu-west quota: selling it in the same auction
	// would only trade with itself, and the exchange says so.
	e2etest.SignIn(t, ctx, base, "member@search.example.com", logins["member@search.example.com"])
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/orders"),
		chromedp.Click(chromedp.CSS(`[data-testid=new-move]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=move-form]`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid=field-from]`), "eu-west"),
		chromedp.SetValue(chromedp.CSS(`[data-testid=field-to]`), "us-east"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-q.cpu"]`), "100"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-amount]`), "2,000"),
		chromedp.Click(chromedp.CSS(`[data-testid=move-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=error-quantity]`)),
	)
	if err != nil {
		e2etest.Screenshot(t, ctx, "debug")
		t.Fatal(err)
	}
	if s := e2etest.Text(t, ctx, `[data-testid=error-quantity]`); !strings.Contains(s, "already buys eu-west/cpu") {
		t.Fatalf("selling what the team bids for: %q", s)
	}
	// The ads team holds us-east memory and neither buys it nor bids for eu-west
	// memory: it moves 400 GiB out of us-east and buys 300 in eu-west.
	e2etest.SignOut(t, ctx)
	e2etest.SignIn(t, ctx, base, "member@ads.example.com", logins["member@ads.example.com"])
	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/orders"),
		chromedp.Click(chromedp.CSS(`[data-testid=new-move]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=move-form]`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid=field-from]`), "us-east"),
		chromedp.SetValue(chromedp.CSS(`[data-testid=field-to]`), "eu-west"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-q.ram"]`), "500000"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-amount]`), "2,000"),
		chromedp.Click(chromedp.CSS(`[data-testid=move-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="error-q.ram"]`)),
	)
	if err != nil {
		e2etest.Screenshot(t, ctx, "debug")
		t.Fatal(err)
	}
	if s := e2etest.Text(t, ctx, `[data-testid="error-q.ram"]`); !strings.Contains(s, "Your team has only") || !strings.Contains(s, "GiB of ram free to sell in us-east") {
		t.Fatalf("too much to move: %q", s)
	}
	err = chromedp.Do(ctx,
		chromedp.Clear(chromedp.CSS(`[data-testid="field-q.ram"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-q.ram"]`), "400"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-buy.ram"]`), "300"),
		chromedp.Click(chromedp.CSS(`[data-testid=move-price]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=move-estimate]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "move-priced")
	if s := e2etest.Text(t, ctx, `[data-testid=move-estimate]`); !strings.Contains(s, "us-east/ram: sell 400 GiB") || !strings.Contains(s, "eu-west/ram: buy 300 GiB") {
		t.Fatalf("estimate %q", s)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=move-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if s := e2etest.Text(t, ctx, `[data-testid=flash]`); !strings.Contains(s, "moves quota from us-east to eu-west") {
		t.Fatalf("flash %q", s)
	}
	if s := e2etest.Text(t, ctx, `[data-testid=orders]`); !strings.Contains(s, "us-east/ram -400") || !strings.Contains(s, "eu-west/ram +300") {
		t.Fatalf("orders table %q", s)
	}
	e2etest.Screenshot(t, ctx, "orders-after-move")

	own := ctx
	e2etest.SignOut(t, own)
	e2etest.SignIn(t, own, base, "owner@storage.example.com", logins["owner@storage.example.com"])
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
	e2etest.Screenshot(t, own, "offer-two-pools")
	err = chromedp.Do(own,
		chromedp.Click(chromedp.CSS(`[data-testid=offer-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if s := e2etest.Text(t, own, `[data-testid=flash]`); !strings.Contains(s, "sells 50 of eu-west/disk and 100 of us-east/disk") {
		t.Fatalf("flash %q", s)
	}
	if s := e2etest.Text(t, own, `[data-testid=orders] tbody tr:nth-child(1)`); !strings.Contains(s, "eu-west/disk -50 TiB, us-east/disk -100 TiB") {
		t.Fatalf("the newest order %q", s)
	}
}

// TestBrowserRequirementToBundles: an operator defines a service shape on its page;
// a member asks for 50 of them in any of two clusters, sees the covering bundle of
// each cluster at current prices and places one XOR bid of them.
func TestBrowserRequirementToBundles(t *testing.T) {
	t.Parallel()
	app, logins := e2etest.StartDemo(t)
	base := app.Server.URL()
	op := e2etest.NewBrowser(t)
	e2etest.SignIn(t, op, base, "operator@example.com", logins["operator@example.com"])
	err := chromedp.Do(op,
		chromedp.Navigate(base+"/operate/shapes"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=shape-form]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-id]`), "cache-node"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-name]`), "cache node"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-q.cpu"]`), "2"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-q.ram"]`), "64"),
		chromedp.Click(chromedp.CSS(`[data-testid=shape-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=shape-cache-node]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, op, "operator-shapes")
	if s := e2etest.Text(t, op, `[data-testid=shape-cache-node]`); !strings.Contains(s, "2 core cpu, 64 GiB ram") {
		t.Fatalf("the new shape: %q", s)
	}

	ctx := op
	e2etest.SignOut(t, ctx)
	e2etest.SignIn(t, ctx, base, "member@search.example.com", logins["member@search.example.com"])
	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/orders/new"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=bid-step1]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-count]`), "50"),
		chromedp.SetValue(chromedp.CSS(`[data-testid=field-shape]`), "storage-server"),
		chromedp.Click(chromedp.CSS(`[data-testid=cluster-us-east]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=cluster-eu-west]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "bid-shape-step1")
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=bid-next]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=bid-step2]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "bid-shape-step2")
	if s := e2etest.Text(t, ctx, `[data-testid=shape-summary]`); !strings.Contains(s, "50 × storage server = 200 core cpu, 100 TiB disk, 800 GiB ram") {
		t.Fatalf("summary %q", s)
	}
	bundles := e2etest.Text(t, ctx, `[data-testid=bundles]`)
	if !strings.Contains(bundles, "us-east/cpu +200 cores, us-east/disk +100 TiB, us-east/ram +800 GiB") || !strings.Contains(bundles, "eu-west/cpu +200") {
		t.Fatalf("bundles %q", bundles)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-limit]`), "9,000"),
		chromedp.Click(chromedp.CSS(`[data-testid=bid-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if s := e2etest.Text(t, ctx, `[data-testid=orders] tbody tr:nth-child(1)`); !strings.Contains(s, "eu-west/cpu +200 cores, eu-west/disk +100 TiB, eu-west/ram +800 GiB") || !strings.Contains(s, "us-east/cpu +200 cores") {
		t.Fatalf("the newest order %q", s)
	}
}

// startDemoMail is startDemo with notification email sent to a test SMTP server.
func startDemoMail(t *testing.T) (*server.App, map[string]string, *mailertest.Server) {
	t.Helper()
	srv := mailertest.Start(t)
	db, logins := e2etest.CopyDemo(t)
	cfg := e2etest.DemoConfig(db)
	cfg.PublicURL, cfg.Mail = "http://127.0.0.1", mailer.Config{Addr: srv.Addr, From: "Clearhouse <market@example.com>"}
	return e2etest.OpenDemo(t, cfg, storetest.NewClock(time.Time{})), logins, srv
}

// TestBrowserSettledAuctionNotifiesTraders: when the demo's open auction settles,
// a member of a team that bid sees the unread badge on every page, reads the
// outcome on the notifications page, marks it read; the same outcome went out by
// email through the configured SMTP server.
func TestBrowserSettledAuctionNotifiesTraders(t *testing.T) {
	t.Parallel()
	app, logins, smtpd := startDemoMail(t)
	base := app.Server.URL()
	ctx := e2etest.NewBrowser(t)
	e2etest.SignIn(t, ctx, base, "member@search.example.com", logins["member@search.example.com"])
	a, ok, err := app.Market.CurrentAuction(context.Background())
	if err != nil || !ok {
		t.Fatalf("the demo has no open auction: %v", err)
	}
	before, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=unread]").length`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Market.Close(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx, chromedp.Navigate(base+"/orders"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=unread]`)))
	if err != nil {
		t.Fatalf("no unread badge after settlement (before: %d): %v", before, err)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=notifications-link]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=notifications]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "notifications")
	subject := fmt.Sprintf("Auction #%d settled", a.ID)
	if s := e2etest.Text(t, ctx, `[data-testid=notifications] li:first-child`); !strings.Contains(s, subject) || !strings.Contains(s, "Team search") {
		t.Fatalf("newest notification %q, want %q", s, subject)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=mark-read]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=unread]").length`)); err != nil || n != 0 {
		t.Fatalf("%d unread badges after marking read, %v", n, err)
	}
	if sent := app.SendEmails(context.Background()); sent == 0 {
		t.Fatal("no email sent")
	}
	var got bool
	for _, m := range smtpd.Messages() {
		if len(m.To) == 1 && m.To[0] == "member@search.example.com" && strings.Contains(m.Data, "Subject: "+subject) {
			got = strings.Contains(m.Data, "http://127.0.0.1/notifications")
		}
	}
	if !got {
		t.Fatalf("no settlement email to member@search.example.com among %d messages", len(smtpd.Messages()))
	}
	if again := app.SendEmails(context.Background()); again != 0 {
		t.Fatalf("%d emails sent twice", again)
	}
}
