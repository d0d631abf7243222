package browser

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/templates"
)

// TestBrowserPerClusterLimitsReachTheApprover: a member bids with "give each
// cluster its own limit" in a team whose owner approves large orders; the owner
// sees each cluster's limit on the approvals page, not templ source or an empty
// limit.
func TestBrowserPerClusterLimitsReachTheApprover(t *testing.T) {
	t.Parallel()
	app, logins := e2etest.StartDemo(t)
	base := app.Server.URL()
	owner := e2etest.NewBrowser(t)
	e2etest.SignIn(t, owner, base, "owner@search.example.com", logins["owner@search.example.com"])
	err := chromedp.Do(owner,
		chromedp.Navigate(base+"/team"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=field-threshold]`)),
		chromedp.Clear(chromedp.CSS(`[data-testid=field-threshold]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-threshold]`), "100"),
		chromedp.Click(chromedp.CSS(`[data-testid=threshold-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}

	member := e2etest.NewBrowser(t)
	e2etest.SignIn(t, member, base, "member@search.example.com", logins["member@search.example.com"])
	err = chromedp.Do(member,
		chromedp.Navigate(base+"/orders/new?q.cpu=10&cluster=us-east&cluster=eu-west&step=2&limit_mode=each"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=bid-step2]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-limit.us-east"]`), "1,900"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-limit.eu-west"]`), "1,700"),
		chromedp.Click(chromedp.CSS(`[data-testid=bid-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if s := e2etest.Text(t, member, `[data-testid=flash]`); !strings.Contains(strings.ToLower(s), "approv") {
		t.Fatalf("the member's bid over the threshold: flash %q, want it to wait for approval", s)
	}
	e2etest.CloseTab(t, member)

	err = chromedp.Do(owner, chromedp.Navigate(base+"/approvals"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=orders]`)))
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, owner, "approvals-per-cluster-limits")
	html, err := chromedp.Run(owner, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		t.Fatal(err)
	}
	if leaks := templates.LeakedTemplateSource(html); len(leaks) > 0 {
		t.Fatalf("/approvals prints templ source: %q", leaks)
	}
	row := e2etest.Text(t, owner, `[data-testid=orders] tbody tr:first-child`)
	row = strings.Join(strings.Fields(row), " ")
	if !strings.Contains(row, "$1,900.00") || !strings.Contains(row, "$1,700.00") || !strings.Contains(row, "each alternative its own") {
		t.Fatalf("the owner's row does not show each cluster's limit: %q", row)
	}
	if n, err := chromedp.Run(owner, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=orders] tbody tr:first-child [data-testid=bundle-limit]').length`)); err != nil || n != 2 {
		t.Fatalf("%d per-bundle limits on the owner's row (%v), want 2", n, err)
	}
}

// TestBrowserEarlyCloseThenAnotherAuction: the operator closes the demo's open
// auction early (through its confirmation page), then an extra auction opens and
// closes before the first was scheduled to. The auctions page charts and lists
// them in the order they closed, not by their scheduled windows.
func TestBrowserEarlyCloseThenAnotherAuction(t *testing.T) {
	t.Parallel()
	app, logins, clock := e2etest.StartDemoClock(t)
	base := app.Server.URL()
	ctx := context.Background()
	as, err := app.Market.Auctions(ctx, 1)
	if err != nil || len(as) != 1 {
		t.Fatalf("the demo's auctions: %v", err)
	}
	first := as[0]
	op := e2etest.NewBrowser(t)
	e2etest.SignIn(t, op, base, "operator@example.com", logins["operator@example.com"])
	start := clock.Now()
	clock.Advance(10 * time.Minute)
	err = chromedp.Do(op,
		chromedp.Navigate(base+"/operate"),
		chromedp.Click(chromedp.CSS(`[data-testid=close]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=close-confirm-submit]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=close-confirm-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Minute)
	extra, err := app.Market.ScheduleAuction(ctx, clock.Now(), clock.Now().Add(30*time.Minute), auction.DefaultParams)
	if err != nil {
		t.Fatal(err)
	}
	if !extra.ClosesAt.Before(first.ClosesAt) {
		t.Fatalf("the extra auction closes %s, not before the first's scheduled close %s: the test would not tell the orders apart", extra.ClosesAt, first.ClosesAt)
	}
	if _, err := app.Market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	// A bid that trades, so the extra auction has a price of its own on the chart.
	member, err := app.Identity.UserByEmail(ctx, "member@search.example.com")
	if err != nil {
		t.Fatal(err)
	}
	limit := 20_000 * ledger.Dollar
	if _, err := app.Market.PlaceOrder(ctx, member, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": 8}}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Minute)
	if _, err := app.Market.Close(ctx, extra.ID); err != nil {
		t.Fatal(err)
	}

	if err := chromedp.Do(op, chromedp.Navigate(base+"/auctions"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=auction-list]`))); err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, op, "auctions-after-early-close")
	labels, err := chromedp.Run(op, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="history-us-east"] svg.chart > text.label.wide-only[text-anchor=middle]')).map(e => e.textContent).filter(s => s !== '')`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"#" + strconv.FormatInt(first.ID, 10), "#" + strconv.FormatInt(extra.ID, 10)}
	if len(labels) < 2 || labels[len(labels)-2] != want[0] || labels[len(labels)-1] != want[1] {
		t.Fatalf("the price chart's last auctions %q, want %q in the order they closed", labels, want)
	}
	paths, err := chromedp.Run(op, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid="history-us-east"] path.series')).map(e => e.getAttribute('d'))`))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no price series on the chart: %v", err)
	}
	cmd := regexp.MustCompile(`([MLHV])([^MLHVZ]*)`)
	for _, d := range paths {
		last := -1.0
		for _, m := range cmd.FindAllStringSubmatch(d, -1) {
			if m[1] == "V" {
				continue
			}
			x, err := strconv.ParseFloat(strings.Fields(strings.ReplaceAll(m[2], ",", " "))[0], 64)
			if err != nil {
				t.Fatalf("path %q: %v", d, err)
			}
			if x < last {
				t.Fatalf("the price line doubles back: %q", d)
			}
			last = x
		}
	}
	list, err := chromedp.Run(op, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid=auction-list] li a')).map(e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, s := range list {
		pos[strings.TrimSpace(s)] = i
	}
	a, b := "Auction #"+strconv.FormatInt(extra.ID, 10), "Auction #"+strconv.FormatInt(first.ID, 10)
	if ia, ok := pos[a]; !ok || pos[b] <= ia {
		t.Fatalf("the auction list %q: want %s (closed last) above %s", list, a, b)
	}
	// The first auction's page says when it really closed, and that it was early.
	if err := chromedp.Do(op, chromedp.Navigate(base+"/auctions/"+strconv.FormatInt(first.ID, 10)), chromedp.WaitVisible(chromedp.CSS(`[data-testid=auction-window]`))); err != nil {
		t.Fatal(err)
	}
	if w := e2etest.Text(t, op, `[data-testid=auction-window]`); !strings.Contains(w, "closed "+start.Add(10*time.Minute).UTC().Format("2006-01-02 15:04")) || !strings.Contains(w, "early") {
		t.Fatalf("the first auction's window %q does not say it closed early", w)
	}
}

// The every-page check recomputes a derivation in micro-dollars and catches one
// whose rounded unit prices do not give the amount (200 x $3.3887 + 800 x $0.3723
// is $975.58, not the $975.54 paid).
func TestUnreproducedDerivationsAreCaught(t *testing.T) {
	t.Parallel()
	if why := unreproduced("us-east/cpu 200 core × $3.3887 + us-east/ram 800 GiB × $0.3723 = $975.54"); why == "" {
		t.Error("a derivation off by 4 cents passed")
	}
	if why := unreproduced("us-east/cpu 200 core × $3.388712 + us-east/ram 800 GiB × $0.372232 = $975.528 "); why == "" {
		t.Error("a derivation without its amount at the end passed")
	}
	if why := unreproduced("us-east/cpu 200 core × $3.388712 + us-east/ram 800 GiB × $0.372232 = $975.528"); why != "" {
		t.Errorf("an exact derivation: %s", why)
	}
	if why := unreproduced("us-east/cpu -1,200 core × $0.50 = -$600.00"); why != "" {
		t.Errorf("a seller's derivation: %s", why)
	}
}

// TestBrowserWithdrawAsksFirst: on the demo, a member's Withdraw opens a page that
// says what withdrawing does; "Keep the order" leaves it open, and the red button
// withdraws it. The page fits a phone.
func TestBrowserWithdrawAsksFirst(t *testing.T) {
	t.Parallel()
	app, logins := e2etest.StartDemo(t)
	base := app.Server.URL()
	ctx := e2etest.NewBrowser(t)
	e2etest.SignIn(t, ctx, base, "member@search.example.com", logins["member@search.example.com"])
	withdraw := `[data-testid=orders] tbody tr:first-child [data-testid=withdraw]`
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(400, 900),
		chromedp.Navigate(base+"/orders"),
		chromedp.WaitVisible(chromedp.CSS(withdraw)),
	)
	if err != nil {
		t.Fatal(err)
	}
	row := e2etest.Text(t, ctx, `[data-testid=orders] tbody tr:first-child`)
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(withdraw)), chromedp.WaitVisible(chromedp.CSS(`[data-testid=confirm]`)))
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "withdraw-confirm-400")
	if q := e2etest.Text(t, ctx, `main h1`); !strings.HasPrefix(q, "Withdraw order #") {
		t.Fatalf("the confirmation asks %q", q)
	}
	if over, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`)); err != nil || over > 0 {
		t.Fatalf("the confirmation is %d px wider than a phone (%v)", over, err)
	}
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid=confirm-keep]`)), chromedp.WaitVisible(chromedp.CSS(withdraw)))
	if err != nil {
		t.Fatal(err)
	}
	if s := e2etest.Text(t, ctx, `[data-testid=orders] tbody tr:first-child`); s != row {
		t.Fatalf("keeping the order changed its row:\n%s\nwas\n%s", s, row)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(withdraw)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=confirm-submit]`)),
		chromedp.Click(chromedp.CSS(`[data-testid=confirm-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if s := e2etest.Text(t, ctx, `[data-testid=flash]`); !strings.Contains(s, "withdrawn") {
		t.Fatalf("after confirming: flash %q", s)
	}
}
