package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// demoConfig is the configuration the browser tests run the demo with, on the
// SQLite file db.
func demoConfig(db string) Config {
	return Config{Addr: "127.0.0.1:0", DB: db, Migrate: true, LoginRate: 100, Demo: true,
		Tick: time.Hour, AuctionEvery: 24 * time.Hour, AuctionWindow: time.Hour, PreviewEvery: 5 * time.Minute}
}

// demoTemplate is a SQLite file the demo was seeded into once per test binary, at
// storetest.Epoch with demoConfig, and the logins the seeding printed. Seeding took
// about 10 s a test; a copy of the file holds the same market and passwords.
var demoTemplate struct {
	once   sync.Once
	dir    string
	path   string
	logins map[string]string
	err    error
}

// seedDemoTemplate seeds demoTemplate: the production wiring's services and demo
// seeding (App.openServices), without jobs or listeners, then the database closed.
func seedDemoTemplate() error {
	dir, err := os.MkdirTemp("", "clearhouse-demo-template-")
	if err != nil {
		return err
	}
	demoTemplate.dir, demoTemplate.path = dir, filepath.Join(dir, "demo.db")
	app := NewApp(demoConfig(demoTemplate.path), slog.New(slog.NewTextHandler(io.Discard, nil)), storetest.NewClock(time.Time{}).Now)
	var out bytes.Buffer
	app.demoOut = &out
	if err := app.openServices(context.Background()); err != nil {
		return err
	}
	// Everything into the main file, so that a copy of the file alone is the market.
	if err := app.DB.Write.Exec("PRAGMA wal_checkpoint(TRUNCATE)").Error; err != nil {
		return errors.Join(err, app.DB.Close())
	}
	if err := app.DB.Close(); err != nil {
		return err
	}
	if st, err := os.Stat(demoTemplate.path + "-wal"); err == nil && st.Size() > 0 {
		return errors.New("the closed demo template left a write-ahead log: copying the file alone would lose it")
	}
	demoTemplate.logins = parseLogins(out.String())
	if len(demoTemplate.logins) < 4 {
		return fmt.Errorf("the demo printed no logins:\n%s", out.String())
	}
	return nil
}

// removeDemoTemplate removes the template's directory, if a test seeded it.
func removeDemoTemplate() {
	if demoTemplate.dir != "" {
		os.RemoveAll(demoTemplate.dir)
	}
}

// parseLogins reads the logins the demo prints (email password role) into email ->
// password.
func parseLogins(out string) map[string]string {
	logins := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && strings.Contains(f[0], "@") {
			logins[f[0]] = f[1]
		}
	}
	return logins
}

// copyDemo copies the seeded demo template into the test's own directory and returns
// the copy's path and the demo logins (a map of the test's own). Under -short it
// skips the test: seeding the demo takes 10 s or more.
func copyDemo(t *testing.T) (string, map[string]string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the test needs the seeded demo market")
	}
	demoTemplate.once.Do(func() { demoTemplate.err = seedDemoTemplate() })
	if demoTemplate.err != nil {
		t.Fatalf("seeding the demo template: %v", demoTemplate.err)
	}
	data, err := os.ReadFile(demoTemplate.path)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "demo.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, maps.Clone(demoTemplate.logins)
}

// openDemo runs the production wiring with cfg (whose DB is a copy of the demo) on
// clock, as `serve --demo` on a database that holds the demo, and closes it when the
// test ends.
func openDemo(t *testing.T, cfg Config, clock *storetest.Clock) *App {
	t.Helper()
	app := NewApp(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), clock.Now)
	app.demoOut = io.Discard // "the database already has a market"
	if err := app.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		app.Close(ctx)
	})
	return app
}

// startDemo runs the production wiring with --demo on a copy of the seeded demo and
// returns the app and the demo logins (email -> password).
func startDemo(t *testing.T) (*App, map[string]string) {
	t.Helper()
	app, logins, _ := startDemoClock(t)
	return app, logins
}

// startDemoClock is startDemo with the clock the test moves.
func startDemoClock(t *testing.T) (*App, map[string]string, *storetest.Clock) {
	t.Helper()
	db, logins := copyDemo(t)
	clock := storetest.NewClock(time.Time{})
	return openDemo(t, demoConfig(db), clock), logins, clock
}

func signIn(t *testing.T, ctx context.Context, base, email, password string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-email]`), email),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-password]`), password),
		chromedp.Click(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=viewer]`)),
	)
	if err != nil {
		t.Fatalf("sign in as %s: %v", email, err)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("%s: %v", sel, err)
	}
	return s
}

// TestBrowserBidEntry walks a team member through the two-step bid form on the
// demo market, then checks the order, the budget hold, and that an operator sees
// it among the open trades.
func TestBrowserBidEntry(t *testing.T) {
	t.Parallel()
	app, logins := startDemo(t)
	ctx := newBrowser(t)
	base := app.Server.URL()
	signIn(t, ctx, base, "member@search.example.com", logins["member@search.example.com"])
	screenshot(t, ctx, "market")
	if s := text(t, ctx, `[data-testid=auction-banner]`); !strings.Contains(s, "takes bids until") {
		t.Fatalf("market banner %q: the demo's auction should be open", s)
	}
	before := text(t, ctx, `[data-testid="pool-us-east/cpu"] [data-testid=price]`)
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
	screenshot(t, ctx, "bid-step2")
	if s := text(t, ctx, `[data-testid=bundles]`); !strings.Contains(s, "us-east/cpu +40") || !strings.Contains(s, "ap-south/ram +160") {
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
	if s := text(t, ctx, `[data-testid=flash]`); !strings.Contains(s, "placed") {
		t.Fatalf("flash %q", s)
	}
	screenshot(t, ctx, "orders")
	if s := text(t, ctx, `[data-testid=orders]`); !strings.Contains(s, "us-east/cpu +40") || !strings.Contains(s, "4,500.00") {
		t.Fatalf("orders table %q", s)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/team"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=held]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "team")
	if s := text(t, ctx, `[data-testid=holds]`); !strings.Contains(s, "4,500.00") {
		t.Fatalf("the bid's hold is not listed: %q", s)
	}
	// Other roles' pages are refused.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/finance"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=error]`))); err != nil {
		t.Fatal(err)
	}

	op := newBrowser(t)
	signIn(t, op, base, "operator@example.com", logins["operator@example.com"])
	if err := chromedp.Do(op, chromedp.Navigate(base+"/operate/trades"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=orders]`))); err != nil {
		t.Fatal(err)
	}
	if s := text(t, op, `[data-testid=orders]`); !strings.Contains(s, "us-east/cpu +40") {
		t.Fatalf("the operator does not see the bid: %q", s)
	}
	for _, page := range []string{"/operate", "/operate/curves/standard", "/operate/stats", "/auctions", "/auctions/1"} {
		if err := chromedp.Do(op, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS(`main`))); err != nil {
			t.Fatal(err)
		}
		screenshot(t, op, "operator"+strings.ReplaceAll(page, "/", "-"))
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
	if s := text(t, op, `[data-testid=close-confirm]`); !strings.Contains(s, "orders take part") || !strings.Contains(s, "cannot be undone") {
		t.Fatalf("the confirmation does not say what closing does: %q", s)
	}
	screenshot(t, op, "operator-close-confirm")
	err = chromedp.Do(op,
		chromedp.Click(chromedp.CSS(`[data-testid=close-confirm-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=flash]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if s := text(t, op, `[data-testid=auction-status]`); s != "settled" {
		t.Fatalf("after closing, the auction is %q", s)
	}
	screenshot(t, op, "operator-closed")
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/orders"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=orders]`))); err != nil {
		t.Fatal(err)
	}
	if s := text(t, ctx, `[data-testid=orders] tr:nth-child(1) [data-testid=status]`); s != "won" {
		t.Fatalf("the member's newest order is %q, want won", s)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/team"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=statement]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "team-after-settlement")
	if s := text(t, ctx, `[data-testid=statement]`); !strings.Contains(s, "settlement") {
		t.Fatalf("no settlement debit on the statement: %q", s)
	}

	fin := newBrowser(t)
	signIn(t, fin, base, "finance@example.com", logins["finance@example.com"])
	for _, page := range []string{"/finance", "/finance/auctions/1", "/finance/teams/search"} {
		if err := chromedp.Do(fin, chromedp.Navigate(base+page), chromedp.WaitVisible(chromedp.CSS(`main`))); err != nil {
			t.Fatal(err)
		}
		screenshot(t, fin, "finance"+strings.ReplaceAll(page, "/", "-"))
	}
	if s := text(t, fin, `[data-testid=closing]`); s == "" {
		t.Fatal("no closing balance on the statement")
	}
	// Finance downloads the settlement report of the auction just closed.
	if err := chromedp.Do(fin, chromedp.Navigate(base+"/finance/auctions/8"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=settlement-csv]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, fin, "finance-settlement-8")
	if s := text(t, fin, `[data-testid=balanced]`); !strings.Contains(s, "Buyers paid = sellers received + treasury net") {
		t.Fatalf("the report does not balance: %q", s)
	}
	csvText, err := chromedp.Run(fin, chromedp.Evaluate[string](`fetch(document.querySelector("[data-testid=settlement-csv]").href).then(r => r.text())`,
		func(p *runtime.EvaluateParams) { p.AwaitPromise = new(true) }))
	if err != nil || !strings.HasPrefix(csvText, "auction_id,order_id,team,") || !strings.Contains(csvText, ",search,") {
		t.Fatalf("settlement CSV %q, %v", csvText, err)
	}
}
